// A process warning that is emitted at most once a second. A script decides how often some
// warnings would fire (an embedder's onLog that throws on each of a log flood's entries):
// one `process.emitWarning` per entry stalled the embedder's thread for seconds (a stack
// trace and a line on stderr each). The ones left out are counted in the next warning, or,
// if none comes, in one of their own when the second is over.
export class ThrottledWarning {
  #lastAt = -Infinity;
  #suppressed = 0;
  #lastSuppressed = "";
  #flush: NodeJS.Timeout | null = null;

  constructor(private readonly intervalMs = 1000) {}

  emit(text: string): void {
    const now = performance.now();
    if (now - this.#lastAt < this.intervalMs) {
      this.#suppressed++;
      this.#lastSuppressed = text;
      if (this.#flush === null) {
        this.#flush = setTimeout(() => this.#flushSuppressed(), this.#lastAt + this.intervalMs - now);
        this.#flush.unref(); // never what keeps a process alive
      }
      return;
    }
    const suppressed = this.#suppressed;
    this.#reset(now);
    process.emitWarning(suppressed === 0 ? text : `${text} (and ${suppressed} more like it since the last warning)`);
  }

  #flushSuppressed(): void {
    this.#flush = null;
    const suppressed = this.#suppressed;
    if (suppressed === 0) return;
    const text = this.#lastSuppressed;
    this.#reset(performance.now());
    process.emitWarning(`${text} (${suppressed} like it since the last warning)`);
  }

  #reset(now: number): void {
    if (this.#flush !== null) clearTimeout(this.#flush);
    this.#flush = null;
    this.#lastAt = now;
    this.#suppressed = 0;
  }
}
