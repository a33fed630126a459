// A one-shot cancellation signal for the transport, much cheaper than a Node
// AbortController (an EventTarget) per fetch: the sandbox makes one for every guest fetch.
import type { AbortSignalLike } from "./transport.js";

export class CancelToken implements AbortSignalLike {
  aborted = false;
  private listeners: (() => void)[] = [];

  addEventListener(_type: "abort", listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const index = this.listeners.indexOf(listener);
    if (index !== -1) this.listeners.splice(index, 1);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }
}
