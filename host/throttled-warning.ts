// A process warning that is emitted at most once a second. A script decides how often some
// warnings would fire (an embedder's onLog that throws on each of a log flood's entries):
// one `process.emitWarning` per entry stalled the embedder's thread for seconds (a stack
// trace and a line on stderr each). The ones left out are counted in the next.
export class ThrottledWarning {
  #lastAt = -Infinity;
  #suppressed = 0;

  constructor(private readonly intervalMs = 1000) {}

  emit(text: string): void {
    const now = performance.now();
    if (now - this.#lastAt < this.intervalMs) {
      this.#suppressed++;
      return;
    }
    const suppressed = this.#suppressed;
    this.#lastAt = now;
    this.#suppressed = 0;
    process.emitWarning(suppressed === 0 ? text : `${text} (and ${suppressed} more like it since the last warning)`);
  }
}
