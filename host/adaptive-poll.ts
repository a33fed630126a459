// A bounded, adaptive poll for the next message between two threads that talk in quick
// turns: plugin calls (the embedder waits for the worker's reply, the worker for the
// embedder's next call) and host calls (the worker waits for the embedder's answer, the
// embedder for the guest's next call).
//
// Waking a sleeping thread costs more than a call on this kind of machine (a postMessage
// round trip between two sleeping threads ~30 µs, between two polling ones ~8 µs), so after
// sending, a thread may poll its port for a moment instead of sleeping. That only pays
// while the other side can answer meanwhile, which needs a core of its own: on a busy
// machine the poller holds the very core the other side needs (and a thread that spins
// loses the scheduler's preference for threads that just woke up), so a poll that runs out
// delays the answer it waits for by its whole window, much more than a good poll saves.
// So each wait is judged by its outcome: the message came within half the window (paid),
// or it came later, or never, or the poller found itself descheduled mid-poll (the mark of
// a contended core). Polling goes on only while the recent share of bad waits stays under
// FAILURE_LIMIT; past it, only every PROBE_EVERY-th opportunity polls, to notice when the
// machine has calmed down (one probe that pays resumes polling; one more bad wait stops
// it). Answers measured without polling say nothing here: the other side answers quickly
// then precisely because nobody holds its core.

import { performance } from "node:perf_hooks";

/** Longest session however many messages it served (the event loop has other work). */
const SESSION_MAX_MS = 2;
/** A gap this long between two turns of the poll loop means this thread lost its core. */
const DESCHEDULED_MS = 0.05;
/** Polling stops while more than this share of recent waits were bad... */
const FAILURE_LIMIT = 0.1;
/** ...except for one probe every so many opportunities; a probe that pays resumes polling. */
const PROBE_EVERY = 128;
/**
 * Weight of the latest wait in the share of bad ones (an exponential moving average over
 * roughly the last 1 / WEIGHT waits). At 0.1 a single bad wait put the share at the limit
 * (0.9 f + 0.1 >= 0.1 whatever f was), so one late answer in a long good spell (a GC pause,
 * the other side's poll session ending) stopped polling for PROBE_EVERY opportunities,
 * and sync host calls ran at ~40 µs instead of ~20 µs in processes that had such a spell
 * early. At 0.02 it takes six bad waits in a row, or more than 10% of the last ~50.
 */
const WEIGHT = 0.02;

export class AdaptivePoll {
  private failure = 0;
  private opportunities = 0;
  private active = false;
  /** Waits that paid / that did not (for benches and diagnostics). */
  paid = 0;
  wasted = 0;

  /** `windowMs`: the longest poll for one message. */
  constructor(private readonly windowMs: number) {}

  /** Whether a poll session is running (a handler called from `take` is inside it). */
  get polling(): boolean {
    return this.active;
  }

  /**
   * Polls with `take` (true when it received and handled a message) while a message is
   * expected (`waiting`) and polling has been paying. Each message taken extends the
   * session by one window. Re-entrant calls (from a handler `take` ran) do nothing.
   */
  poll(take: () => boolean, waiting: () => boolean = () => true): void {
    if (this.active) return;
    this.opportunities++;
    const probe = this.failure >= FAILURE_LIMIT;
    if (probe && this.opportunities % PROBE_EVERY !== 0) return;
    this.active = true;
    try {
      const start = performance.now();
      const sessionEnd = start + SESSION_MAX_MS;
      let waitStart = start;
      let last = start;
      let served = 0;
      while (waiting()) {
        const got = take();
        const now = performance.now();
        if (got) {
          served++;
          const bad = last - waitStart > this.windowMs / 2;
          this.judge(bad);
          // One good probe is enough to try polling again (one more bad wait stops it).
          if (probe && !bad) this.failure = Math.min(this.failure, FAILURE_LIMIT * 0.9);
          waitStart = now;
        } else if (now - last > DESCHEDULED_MS) {
          this.judge(true);
          break;
        } else if (now - waitStart >= this.windowMs) {
          // Nothing came: the other side is busy or starved (a bad wait), or, after
          // messages in this session, simply done for now.
          if (served === 0) this.judge(true);
          break;
        }
        last = now;
        if (now >= sessionEnd) break;
      }
    } finally {
      this.active = false;
    }
  }

  private judge(bad: boolean): void {
    this.failure += WEIGHT * ((bad ? 1 : 0) - this.failure);
    if (bad) this.wasted++;
    else this.paid++;
  }
}
