// Per-sandbox fetch limits and the gate that makes extra concurrent fetches wait.
import type { Cancellation } from "./cancellation.js";

export interface FetchLimits {
  /** Fetches per run (or per plugin call); redirects do not count. */
  maxFetches: number;
  /** Fetches in flight at once; more wait their turn in order. */
  maxConcurrentFetches: number;
  /** Request body bytes; a larger body is refused before anything is sent. */
  maxRequestBytes: number;
  /** Response body bytes (after content decoding), counted while streaming. */
  maxResponseBytes: number;
  /** From sending the first hop to the end of the final body; waiting for a slot is not counted. */
  requestTimeoutMs: number;
  /** Header fields the script sets on one request (the transport's own Host, Accept, … not counted). */
  maxRequestHeaders: number;
  /**
   * Bytes of one hop's header section as sent ("name: value\r\n" per field, the transport's
   * fields included), after secrets are substituted; computed before any is expanded.
   */
  maxRequestHeaderBytes: number;
}

export const DEFAULT_FETCH_LIMITS: Readonly<FetchLimits> = Object.freeze({
  maxFetches: 10_000,
  maxConcurrentFetches: 6,
  maxRequestBytes: 16 * 1024 * 1024,
  maxResponseBytes: 32 * 1024 * 1024,
  requestTimeoutMs: 30_000,
  maxRequestHeaders: 128,
  maxRequestHeaderBytes: 64 * 1024,
});

/** The limits with defaults filled in; each must be a positive number (Infinity: unlimited). */
export function resolveFetchLimits(limits: Partial<FetchLimits> = {}): FetchLimits {
  const out = { ...DEFAULT_FETCH_LIMITS };
  for (const key of Object.keys(DEFAULT_FETCH_LIMITS) as (keyof FetchLimits)[]) {
    const value = limits[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !(value > 0) || (Number.isFinite(value) && !Number.isInteger(value))) {
      throw new TypeError(`limits.${key} must be a positive integer (or Infinity), got ${String(value)}`);
    }
    out[key] = value;
  }
  return out;
}

/** A FIFO semaphore. `acquire` returns null when a slot was free (no promise on the fast path). */
export class ConcurrencyGate {
  #active = 0;
  readonly #waiters: { grant: () => void }[] = [];

  constructor(readonly max: number) {}

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  acquire(cancellation: Cancellation): Promise<void> | null {
    if (this.#active < this.max && this.#waiters.length === 0) {
      this.#active++;
      return null;
    }
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        grant: () => {
          unsubscribe();
          resolve();
        },
      };
      const unsubscribe = cancellation.onCancel((reason) => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(reason);
      });
      if (!cancellation.reason) this.#waiters.push(waiter);
    });
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next.grant(); // the slot passes straight to the next waiter
    else this.#active--;
  }
}
