// A bounded, adaptive poll for the next message between two threads that talk in quick
// turns: plugin calls (the embedder waits for the worker's reply, the worker for the
// embedder's next call) and host calls (the worker waits for the embedder's answer, the
// embedder for the guest's next call).
//
// Waking a sleeping thread costs more than a call on this kind of machine (a postMessage
// round trip between two sleeping threads ~30 µs, between two polling ones ~8 µs), so after
// sending, a thread may poll its port for a moment instead of sleeping. That only pays
// while the other side can answer meanwhile, which needs a core of its own: on a busy
// machine the poller holds the very core the other side needs, and each poll delays the
// answer it waits for by the whole poll window. So each poll is judged by its outcome:
// one that got its message keeps polling on; one that ran out (or found itself descheduled
// mid-poll, the mark of a contended core) makes the next polls skip, twice as many after
// each further failure (up to MAX_SKIP), so on a loaded machine polling all but stops and
// only an occasional probe notices that things have calmed down.
import { performance } from "node:perf_hooks";

/** Longest session however many messages it served (the event loop has other work). */
const SESSION_MAX_MS = 2;
/** A gap this long between two turns of the poll loop means this thread lost its core. */
const DESCHEDULED_MS = 0.05;
/** At most this many polls skipped after failures: one probe per so many opportunities. */
const MAX_SKIP = 255;

export class AdaptivePoll {
  private skip = 0;
  private backoff = 0;
  private active = false;
  /** Polls that got their message / that ran out or were descheduled (for tests and benches). */
  paid = 0;
  wasted = 0;

  /** `windowMs`: the longest poll for one message. */
  constructor(private readonly windowMs: number) {}

  /**
   * Polls with `take` (true when it received and handled a message) while a message is
   * expected (`waiting`) and polling has been paying. Each message taken extends the
   * session by one window. Re-entrant calls (from a handler `take` ran) do nothing.
   */
  poll(take: () => boolean, waiting: () => boolean = () => true): void {
    if (this.active) return;
    if (this.skip > 0) {
      this.skip--;
      return;
    }
    this.active = true;
    let served = 0;
    let ranOut = false;
    let descheduled = false;
    try {
      const start = performance.now();
      const sessionEnd = start + SESSION_MAX_MS;
      let until = start + this.windowMs;
      let last = start;
      while (waiting()) {
        const got = take();
        const now = performance.now();
        if (got) {
          served++;
          until = now + this.windowMs;
        } else if (now - last > DESCHEDULED_MS) {
          // Spinning holds a core someone needs.
          descheduled = true;
          break;
        } else if (now >= until) {
          // The other side did not answer within the window (busy, or done).
          ranOut = true;
          break;
        }
        last = now;
        if (now >= sessionEnd) break;
      }
    } finally {
      this.active = false;
    }
    if (descheduled || (ranOut && served === 0)) {
      this.wasted++;
      this.backoff = Math.min(this.backoff * 2 + 1, MAX_SKIP);
      this.skip = this.backoff;
    } else if (served > 0) {
      this.paid++;
      this.backoff = 0;
    }
  }
}
