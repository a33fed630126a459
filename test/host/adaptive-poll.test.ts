// The reply polling of plugin calls and host calls (host/adaptive-poll.ts) backs off when
// it does not pay and comes back when it does (issue 12: on a loaded machine a poller holds
// the core the other side needs). The policy is checked here with real polls; the latency
// it buys is measured in bench/plugin-calls.mjs, not here.
import { describe, expect, it } from "vitest";
import { AdaptivePoll } from "../../dist/host/adaptive-poll.js";

/**
 * `count` opportunities to poll for one message each; `answers` says whether the message
 * is there at the first look (true) or never comes (false). Returns how many polled.
 */
function opportunities(poll: AdaptivePoll, count: number, answers: boolean): number {
  let polled = 0;
  for (let i = 0; i < count; i++) {
    let looked = false;
    let received = false;
    poll.poll(
      () => {
        looked = true;
        received = answers;
        return received;
      },
      () => !received,
    );
    if (looked) polled++;
  }
  return polled;
}

describe("AdaptivePoll", () => {
  it("stops polling after waits that never paid, except for rare probes", () => {
    const poll = new AdaptivePoll(0.05);
    const polled = opportunities(poll, 1000, false);
    // Six bad waits in a row put the share of bad ones at the limit: then one probe per 128.
    expect(polled).toBeGreaterThanOrEqual(7);
    expect(polled).toBeLessThanOrEqual(16);
    expect(poll.paid).toBe(0);
    expect(poll.wasted).toBe(polled);
  });

  it("keeps polling while the message comes at once, and a good probe resumes polling after a bad spell", () => {
    const poll = new AdaptivePoll(0.05);
    // Answers on the first look: every opportunity polls, every wait pays.
    expect(opportunities(poll, 200, true)).toBe(200);
    expect(poll.wasted).toBe(0);
    // A bad spell: nothing comes; polling stops.
    opportunities(poll, 50, false);
    expect(opportunities(poll, 100, false)).toBeLessThanOrEqual(1);
    // The machine calms down: the next probe pays and polling resumes at once.
    expect(opportunities(poll, 300, true)).toBeGreaterThan(150);
  });

  it("keeps polling through occasional bad waits (one in 30): only a bad share above 10% stops it", () => {
    const poll = new AdaptivePoll(0.05);
    let polled = 0;
    for (let round = 0; round < 20; round++) {
      polled += opportunities(poll, 29, true);
      polled += opportunities(poll, 1, false);
    }
    // One bad wait used to stop polling for up to 128 opportunities (~70% of these).
    expect(polled).toBe(600);
    expect(poll.wasted).toBe(20);
  });

  it("does not poll while nothing is awaited, and a poll started from inside a poll does nothing", () => {
    const poll = new AdaptivePoll(0.05);
    let looked = 0;
    for (let i = 0; i < 10; i++) poll.poll(() => (looked++, false), () => false);
    expect(looked).toBe(0);
    let inner = 0;
    let outer = 0;
    poll.poll(
      () => {
        outer++;
        poll.poll(() => (inner++, true));
        return true;
      },
      () => outer === 0,
    );
    expect(outer).toBe(1);
    expect(inner).toBe(0);
  });
});
