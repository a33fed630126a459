// A bounded, adaptive poll for the next message between two threads that talk in quick
// turns (host calls: the guest's worker and the embedder's thread).
//
// Waking a sleeping thread costs more than a host call on this kind of machine, so after
// sending, a thread may poll its port for a moment instead of sleeping. That only pays
// while the other side answers quickly: on an oversubscribed machine a polling thread
// takes the CPU the other side needs to answer. So each side keeps a smoothed measure of
// how long answers take (sent → arrived), polls only while it is well under the poll
// window, and probes now and then to notice when things have calmed down.
import { performance } from "node:perf_hooks";

/** Longest poll for one answer. */
const POLL_MS = 0.15;
/** Longest polling session however many messages it served (the event loop has other work). */
const SESSION_MAX_MS = 2;
/** Polls anyway every so many sends, to measure again. */
const PROBE_EVERY = 64;

export class AdaptivePoll {
  private sentAt = -Infinity;
  private recentAnswerMs = POLL_MS;
  private sends = 0;
  private active = false;

  /** Something was sent that the other side will answer. */
  sent(): void {
    this.sentAt = performance.now();
    this.sends++;
  }

  /** A message arrived (polled or delivered by the event loop). */
  arrived(): void {
    if (this.sentAt === -Infinity) return;
    const took = Math.min(performance.now() - this.sentAt, 10);
    this.recentAnswerMs = 0.8 * this.recentAnswerMs + 0.2 * took;
    this.sentAt = -Infinity;
  }

  /**
   * Polls with `take` (true when it received and handled a message) while an answer is
   * expected (`waiting`) and polling is likely to pay. Re-entrant calls do nothing.
   */
  poll(take: () => boolean, waiting: () => boolean = () => true): void {
    if (this.active) return;
    const probe = this.sends % PROBE_EVERY === 0;
    if (!(this.recentAnswerMs < POLL_MS / 2 || probe)) return;
    this.active = true;
    try {
      const start = performance.now();
      let until = start + POLL_MS;
      for (let time = start; time < until && time < start + SESSION_MAX_MS && waiting(); time = performance.now()) {
        if (take()) until = performance.now() + POLL_MS;
      }
    } finally {
      this.active = false;
    }
  }
}
