// One fetch's cancellation: the guest's abort, the per-request timeout, abortAll() or a
// limit. The first reason wins; every step in flight (the wait for a slot, the undici
// request, the body decoder) listens here and stops with that reason.
import type { TransportError } from "./transportError.js";

export class Cancellation {
  #reason: TransportError | null = null;
  #listeners = new Set<(reason: TransportError) => void>();

  get reason(): TransportError | null {
    return this.#reason;
  }

  cancel(reason: TransportError): void {
    if (this.#reason) return;
    this.#reason = reason;
    const listeners = [...this.#listeners];
    this.#listeners.clear();
    for (const listener of listeners) listener(reason);
  }

  /** Calls `listener` once when cancelled (at once if already cancelled); returns the unsubscribe. */
  onCancel(listener: (reason: TransportError) => void): () => void {
    if (this.#reason) {
      listener(this.#reason);
      return () => {};
    }
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/** The promise's outcome, or the cancellation's reason as soon as it is cancelled. */
export function untilCancelled<T>(promise: Promise<T>, cancellation: Cancellation): Promise<T> {
  if (cancellation.reason) {
    promise.catch(() => {});
    return Promise.reject(cancellation.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const unsubscribe = cancellation.onCancel(reject);
    promise.then(
      (value) => {
        unsubscribe();
        resolve(value);
      },
      (error: unknown) => {
        unsubscribe();
        reject(error);
      },
    );
  });
}
