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
// FAILURE_LIMIT; past it, only a probe polls now and then, to notice when the machine has
// calmed down (one probe that pays resumes polling; one more bad wait stops it). Answers
// measured without polling say nothing here: the other side answers quickly then precisely
// because nobody holds its core.
//
// The two sides of a plugin-call exchange (the embedder polls for replies, the worker for
// the next call) are coupled: a wait is quick only while the other side is awake. Judged
// blindly, one side that stopped made the other's waits bad (a sleeping thread takes
// 100-250 µs to wake on this VM, more than the window), so one GC pause put both into
// probing, where each probe met a sleeping peer and failed: 25-40% of a plugin-call loop's
// calls went unpolled on both sides on a quiet machine. So the embedder tells the worker,
// in each call, whether it polls for that reply (decide, then pollAs), and the worker polls
// for the next call only then; the embedder judges a wait only when the worker was told
// to poll after the call before it. The worker was then awake, unless the calls were more
// than 1 ms apart or its own poll had backed off: such waits are judged (bad), which is
// right, since polling does not pay there. A probe that falls due after a call the worker
// was not told of costs two polls: the unjudged one that tells it, then the judged one.
// See host/pool.ts, pollForReply.

import { performance } from "node:perf_hooks";

/** Longest session however many messages it served (the event loop has other work). */
const SESSION_MAX_MS = 2;
/** A gap this long between two turns of the poll loop means this thread lost its core. */
const DESCHEDULED_MS = 0.05;
/** Polling stops while more than this share of recent waits were bad... */
const FAILURE_LIMIT = 0.1;
/**
 * ...except for a probe every so many opportunities; a probe that pays resumes polling.
 * The gap doubles after a probe that did not pay, up to PROBE_MAX_GAP (a machine that stays
 * loaded pays for one wasted window in 128 calls), and halves after one that did. A fixed
 * gap of 128 cost a quiet machine dearly: a short bad spell (a GC pause on one side, ~1% of
 * the waits) stopped polling for 128 calls, the other side's polls then waited for a
 * sleeping thread and stopped too, and 25-40% of a plugin-call loop's calls went unpolled
 * on both sides (p90 75-100 µs instead of ~45; docs/performance.md, "plugin.call").
 */
const PROBE_MIN_GAP = 4;
const PROBE_MAX_GAP = 128;
/**
 * Weight of the latest wait in the share of bad ones (an exponential moving average over
 * roughly the last 1 / WEIGHT waits). At 0.1 a single bad wait put the share at the limit
 * (0.9 f + 0.1 >= 0.1 whatever f was), so one late answer in a long good spell (a GC pause,
 * the other side's poll session ending) stopped polling for 128 opportunities,
 * and sync host calls ran at ~40 µs instead of ~20 µs in processes that had such a spell
 * early. At 0.02 it takes six bad waits in a row, or more than 10% of the last ~50.
 */
const WEIGHT = 0.02;

export class AdaptivePoll {
  private failure = 0;
  /** Opportunities since the last probe, and how many a probe waits for now. */
  private sinceProbe = 0;
  private probeGap = PROBE_MIN_GAP;
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
    this.pollAs(this.decide(), take, waiting);
  }

  /**
   * Whether to poll at this opportunity: "poll" while polling pays, "probe" now and then
   * once it has stopped paying, else "no". Counts the opportunity; a probe stays due until
   * a judged poll has taken it (pollAs).
   */
  decide(): "poll" | "probe" | "no" {
    if (this.active) return "no";
    if (this.failure < FAILURE_LIMIT) return "poll";
    return ++this.sinceProbe >= this.probeGap ? "probe" : "no";
  }

  /**
   * poll() with the decision taken before (decide). An unjudged poll (`judged` false: its
   * wait would say nothing of the machine, see the top of this file) neither counts nor
   * takes a probe that is due.
   */
  pollAs(decision: "poll" | "probe" | "no", take: () => boolean, waiting: () => boolean = () => true, judged = true): void {
    if (decision === "no" || this.active) return;
    const probe = decision === "probe" && judged;
    if (probe) this.sinceProbe = 0;
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
          if (judged) this.judge(bad);
          if (probe && served === 1) this.probed(!bad);
          waitStart = now;
        } else if (now - last > DESCHEDULED_MS) {
          if (judged) this.judge(true);
          if (probe && served === 0) this.probed(false);
          break;
        } else if (now - waitStart >= this.windowMs) {
          // Nothing came: the other side is busy or starved (a bad wait), or, after
          // messages in this session, simply done for now.
          if (served === 0) {
            if (judged) this.judge(true);
            if (probe) this.probed(false);
          }
          break;
        }
        last = now;
        if (now >= sessionEnd) break;
      }
    } finally {
      this.active = false;
    }
  }

  private probed(paid: boolean): void {
    // One good probe is enough to try polling again (one more bad wait stops it).
    if (paid) this.failure = Math.min(this.failure, FAILURE_LIMIT * 0.9);
    this.probeGap = paid ? Math.max(PROBE_MIN_GAP, this.probeGap / 2) : Math.min(PROBE_MAX_GAP, this.probeGap * 2);
  }

  private judge(bad: boolean): void {
    this.failure += WEIGHT * ((bad ? 1 : 0) - this.failure);
    // Polling has paid for a while (~30 good waits since a probe): the next bad spell probes soon again.
    if (this.failure < FAILURE_LIMIT / 2) this.probeGap = PROBE_MIN_GAP;
    if (bad) this.wasted++;
    else this.paid++;
  }
}
