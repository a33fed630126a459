// DOM §3.1 AbortController and §3.2 AbortSignal, including dependent signals (any()).
import { setTimer } from "scriptbox:core";
import { DOMException } from "./dom-exception";
import { type Event, EventTarget, fireEvent, signalHooks } from "./event";
import { SetCtor, TypeErrorCtor, defineProperty, webidlInterface } from "./webidl";

const CREATE = Symbol("create");

/**
 * The guest library's hook for "add an abort algorithm": runs before the abort event is
 * dispatched, so a listener calling stopImmediatePropagation cannot keep fetch running.
 * Returns a function that removes the algorithm.
 */
export const addAbortAlgorithm: unique symbol = Symbol.for("scriptbox.addAbortAlgorithm") as never;

let signalAbort: (signal: AbortSignal, reason: unknown) => void;
let createSignal: () => AbortSignal;
let isSignal: (value: unknown) => value is AbortSignal;

export class AbortSignal extends EventTarget {
  #aborted = false;
  #reason: unknown = undefined;
  #algorithms = new SetCtor<() => void>();
  #dependent = false;
  #sources = new SetCtor<AbortSignal>();
  #dependents = new SetCtor<AbortSignal>();
  #onabort: unknown = null;
  #onabortListener: ((event: Event) => void) | null = null;

  constructor(token?: unknown) {
    if (token !== CREATE) throw new TypeErrorCtor("Illegal constructor");
    super();
  }

  static abort(reason?: unknown): AbortSignal {
    const signal = createSignal();
    signal.#aborted = true;
    signal.#reason = reason === undefined ? abortError() : reason;
    return signal;
  }

  static timeout(milliseconds: number): AbortSignal {
    // WebIDL [EnforceRange] unsigned long long
    const ms = Math.trunc(Number(milliseconds));
    if (!Number.isFinite(Number(milliseconds)) || ms < 0 || ms > Number.MAX_SAFE_INTEGER) {
      throw new TypeErrorCtor(`AbortSignal.timeout: ${String(milliseconds)} is not a valid number of milliseconds`);
    }
    const signal = createSignal();
    // unref: a pending timeout signal does not keep the run alive (HTML: the timer is
    // tied to the global's lifetime, and Node unrefs it too).
    setTimer(() => signalAbort(signal, new DOMException("The operation timed out.", "TimeoutError")), ms, false, true);
    return signal;
  }

  static any(signals: Iterable<AbortSignal>): AbortSignal {
    const list: AbortSignal[] = [];
    for (const signal of signals) {
      if (!isSignal(signal)) throw new TypeErrorCtor("AbortSignal.any: every item must be an AbortSignal");
      list.push(signal);
    }
    const result = createSignal();
    for (const signal of list) {
      if (signal.#aborted) {
        result.#aborted = true;
        result.#reason = signal.#reason;
        return result;
      }
    }
    result.#dependent = true;
    for (const signal of list) {
      for (const source of signal.#dependent ? signal.#sources : [signal]) {
        result.#sources.add(source);
        source.#dependents.add(result);
      }
    }
    return result;
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  throwIfAborted(): void {
    if (this.#aborted) throw this.#reason;
  }

  get onabort(): unknown {
    return this.#onabort;
  }

  set onabort(handler: unknown) {
    // HTML event handler attribute: the listener is added when a handler is first set and
    // keeps its place while the handler changes; null removes it.
    const value = typeof handler === "object" || typeof handler === "function" ? handler : null;
    this.#onabort = value;
    if (value === null) {
      if (this.#onabortListener) this.removeEventListener("abort", this.#onabortListener);
      this.#onabortListener = null;
    } else if (!this.#onabortListener) {
      this.#onabortListener = (event) => {
        const current = this.#onabort;
        if (typeof current === "function") current.call(this, event);
      };
      this.addEventListener("abort", this.#onabortListener);
    }
  }

  [addAbortAlgorithm](algorithm: () => void): () => void {
    if (this.#aborted) return () => {};
    this.#algorithms.add(algorithm);
    return () => void this.#algorithms.delete(algorithm);
  }

  static {
    createSignal = () => new AbortSignal(CREATE);
    isSignal = (value): value is AbortSignal => typeof value === "object" && value !== null && #aborted in value;
    signalHooks.isSignal = isSignal;
    signalHooks.aborted = (signal) => (signal as AbortSignal).#aborted;
    signalHooks.follow = (signal, algorithm) => (signal as AbortSignal)[addAbortAlgorithm](algorithm);
    signalAbort = (signal, reason) => {
      if (signal.#aborted) return;
      signal.#aborted = true;
      signal.#reason = reason === undefined ? abortError() : reason;
      const dependents: AbortSignal[] = [];
      for (const dependent of signal.#dependents) {
        if (dependent.#aborted) continue;
        dependent.#aborted = true;
        dependent.#reason = signal.#reason;
        dependents.push(dependent);
      }
      signal.#dependents.clear();
      runAbortSteps(signal);
      for (const dependent of dependents) runAbortSteps(dependent);
    };
    const runAbortSteps = (signal: AbortSignal) => {
      const algorithms = [...signal.#algorithms];
      signal.#algorithms.clear();
      for (const algorithm of algorithms) algorithm();
      // A dependent signal no longer needs its sources, nor they it.
      for (const source of signal.#sources) source.#dependents.delete(signal);
      signal.#sources.clear();
      fireEvent(signal, "abort");
    };
  }
}

const abortError = () => new DOMException("This operation was aborted", "AbortError");

webidlInterface(AbortSignal, 0);
defineProperty(AbortSignal.prototype, addAbortAlgorithm, { enumerable: false });

export class AbortController {
  #signal = createSignal();

  get signal(): AbortSignal {
    return this.#signal;
  }

  abort(reason?: unknown): void {
    signalAbort(this.#signal, reason);
  }
}

webidlInterface(AbortController, 0);
