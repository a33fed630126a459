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
    // Six bad waits in a row put the share of bad ones at the limit; then probes after 4, 8,
    // 16, 32, 64 opportunities, then one per 128: 6 + 11 in 1,000.
    expect(polled).toBe(17);
    expect(poll.paid).toBe(0);
    expect(poll.wasted).toBe(polled);
    // However long it lasts, one probe per 128 at most.
    expect(opportunities(poll, 1280, false)).toBe(10);
  });

  it("after a short bad spell, polls again within a few opportunities, not 128", () => {
    const poll = new AdaptivePoll(0.05);
    expect(opportunities(poll, 200, true)).toBe(200);
    // Eight bad waits (a GC pause on the other side, say): polling stops after the sixth...
    expect(opportunities(poll, 8, false)).toBe(6);
    // ...and the first probe, 4 opportunities after it stopped, pays: every later one polls.
    expect(opportunities(poll, 20, true)).toBe(19);
  });

  it("doubles the gap before the next probe after one that did not pay, halves it after one that did", () => {
    const poll = new AdaptivePoll(0.05);
    expect(opportunities(poll, 6, false)).toBe(6);
    // Probes after 4, 8, 16 and 32 opportunities: the next one waits 64.
    expect(opportunities(poll, 4 + 8 + 16 + 32, false)).toBe(4);
    expect(opportunities(poll, 63, true)).toBe(0);
    // The 64th probes, pays, and polling resumes.
    expect(opportunities(poll, 11, true)).toBe(11);
    // After ~30 good waits the gap is back to 4: the next bad spell is probed soon.
    expect(opportunities(poll, 40, true)).toBe(40);
    expect(opportunities(poll, 10, false)).toBe(5);
  });

  it("keeps polling while the message comes at once, and a good probe resumes polling after a bad spell", () => {
    const poll = new AdaptivePoll(0.05);
    // Answers on the first look: every opportunity polls, every wait pays.
    expect(opportunities(poll, 200, true)).toBe(200);
    expect(poll.wasted).toBe(0);
    // A bad spell: nothing comes; polling stops, and the probes grow rare (gaps of 32, then 64).
    opportunities(poll, 50, false);
    expect(opportunities(poll, 100, false)).toBe(2);
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

  it("decide() then pollAs(): an unjudged poll neither moves the share of bad waits nor takes a probe that is due", () => {
    const poll = new AdaptivePoll(0.05);
    expect(poll.decide()).toBe("poll");
    expect(opportunities(poll, 6, false)).toBe(6);
    // Backed off: the probe comes at the fourth opportunity.
    expect([poll.decide(), poll.decide(), poll.decide(), poll.decide()]).toEqual(["no", "no", "no", "probe"]);
    let looked = 0;
    // Unjudged (the plugin-call embedder's wait while the worker was asleep): it polls and
    // receives, but says nothing, so the probe is still due and polling has not resumed.
    poll.pollAs("probe", () => (looked++, true), () => looked === 0, false);
    expect(looked).toBe(1);
    expect([poll.paid, poll.wasted]).toEqual([0, 6]);
    expect(poll.decide()).toBe("probe");
    // Judged, the same answer resumes polling.
    looked = 0;
    poll.pollAs("probe", () => (looked++, true), () => looked === 0, true);
    expect([poll.paid, poll.wasted]).toEqual([1, 6]);
    expect(poll.decide()).toBe("poll");
    // "no" never polls.
    poll.pollAs("no", () => (looked++, true), () => true);
    expect(looked).toBe(1);
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
