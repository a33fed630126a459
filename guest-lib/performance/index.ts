// High Resolution Time §5 (the Performance interface), the subset a script measures with:
// performance.now(), performance.timeOrigin and toJSON(). The clock is the host's
// monotonic clock (bridge.performanceNow): Date.now() in QuickJS has millisecond
// resolution and follows the wall clock. Marks and measures (User Timing) are not provided.
import bridge from "scriptbox:bridge";

const ILLEGAL = Symbol("illegal constructor");

export class Performance {
  constructor(key?: symbol) {
    if (key !== ILLEGAL) throw new TypeError("Illegal constructor");
  }

  /** Milliseconds since the time origin (the start of the run), to 5 µs. */
  now(): number {
    return bridge.performanceNow();
  }

  /** The start of the run, in milliseconds since the Unix epoch. */
  get timeOrigin(): number {
    return bridge.performanceTimeOrigin();
  }

  toJSON(): { timeOrigin: number } {
    return { timeOrigin: this.timeOrigin };
  }

  get [Symbol.toStringTag](): string {
    return "Performance";
  }
}

export const performance = new Performance(ILLEGAL);
