// The emulator's clock. Every expiry check and timestamp reads it, so that `--test-clock`
// (POST /__emulator/clock) can move time forward and tests reach expiry without waiting.
export class Clock {
  private offsetMs = 0;

  /** Milliseconds since the epoch, including any test-clock advance. */
  nowMs(): number {
    return Date.now() + this.offsetMs;
  }

  /** Unix seconds: the unit of every timestamp the API shows. */
  now(): number {
    return Math.floor(this.nowMs() / 1000);
  }

  advance(seconds: number): void {
    this.offsetMs += Math.round(seconds * 1000);
  }

  get offsetSeconds(): number {
    return this.offsetMs / 1000;
  }
}
