// The worker's side of host calls: one channel per worker thread, opened at the first host
// call (a worker whose guests never call the host pays nothing).
//
// Async calls go out on the call port and their answers come back on it as messages.
// A synchronous call goes out the same way; then the worker thread sleeps in Atomics.wait
// on a shared block until the embedder has written the answer there (or, for a large one,
// posted it on the sync-reply port, taken with receiveMessageOnPort) and notified it
// (host/host-modules/sync-call-block.ts). Before that sleep it watches the block for a
// moment, only while such watching has been paying (an answer within microseconds;
// host/adaptive-poll.ts): on a loaded machine the wait costs no CPU. It is bounded by the
// caller's wall deadline.
import { MessageChannel, receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { AdaptivePoll } from "../../adaptive-poll.js";
import { SYNC_CALL_BLOCK_BYTES, SyncCallBlock } from "../../host-modules/sync-call-block.js";
import {
  HOST_CALL_POLL_MS,
  NO_BUFFERS,
  callToWire,
  replyFromWire,
  transferList,
  type HostCallMessage,
  type HostCallReply,
  type HostCallsOpenMessage,
  type HostReplyWire,
} from "../../host-modules/manifest.js";

export type SyncOutcome = HostCallReply | "timeout";

/**
 * CPU time a sleep in Atomics.wait costs the thread itself (the futex calls, V8's waiter
 * list, the switch out and back in), counted as awake rather than asleep. Counted as
 * asleep, it was time the guard did not charge and the watchdog's CPU deadline did not
 * allow for, while the thread's clock counted it: on a busy machine, where adaptive
 * polling stops and every sync call sleeps, a loop of 100k calls gathered 0.2-0.5 s of it,
 * past the watchdog's 100 ms grace (found by review; a likely cause of a 1e6-call loop
 * hard-stopped once in a parallel test run). An allowance, not a measurement: a clock
 * read costs 2-8 µs, as much as the thing measured. A guest gains at most this much
 * watchdog margin per sleeping call, each a real round trip to the embedder.
 */
const SLEEP_CPU_MS = 0.02;

export class HostCallChannel {
  private static installed: HostCallChannel | null = null;

  /** Called once by the worker's entry with the worker's main port. */
  static install(mainPort: MessagePort): void {
    HostCallChannel.installed = new HostCallChannel(mainPort);
  }

  /** The worker's channel; null outside a worker thread started by the pool (direct realm tests). */
  static current(): HostCallChannel | null {
    return HostCallChannel.installed;
  }

  private calls: MessagePort | null = null;
  private syncReplies: MessagePort | null = null;
  private syncSlot: SyncCallBlock | null = null;
  private nextCallId = 1;
  private readonly waiting = new Map<number, (reply: HostCallReply) => void>();

  private constructor(private readonly mainPort: MessagePort) {}

  private openOnce(): MessagePort {
    if (this.calls) return this.calls;
    const calls = new MessageChannel();
    const syncReplies = new MessageChannel();
    const signal = new SharedArrayBuffer(SYNC_CALL_BLOCK_BYTES);
    this.calls = calls.port1;
    this.syncReplies = syncReplies.port1;
    this.syncSlot = new SyncCallBlock(signal);
    this.calls.on("message", (reply: HostReplyWire) => {
      this.dispatch(replyFromWire(reply));
      this.pollForReplies();
    });
    // Pending calls belong to a request, which keeps the worker busy anyway.
    this.calls.unref();
    const open: HostCallsOpenMessage = { type: "host-calls", calls: calls.port2, syncReplies: syncReplies.port2, signal };
    this.mainPort.postMessage(open, [calls.port2, syncReplies.port2]);
    return this.calls;
  }

  private dispatch(reply: HostCallReply): void {
    const settle = this.waiting.get(reply.c);
    if (!settle) return; // the call was cancelled (its run ended): a late answer is dropped
    this.waiting.delete(reply.c);
    settle(reply);
  }

  /** After an answer, poll briefly for the next one while calls are in flight (see host/adaptive-poll.ts). */
  private readonly nextReply = new AdaptivePoll(HOST_CALL_POLL_MS);

  private pollForReplies(): void {
    const port = this.calls!;
    this.nextReply.poll(
      () => {
        const received = receiveMessageOnPort(port);
        if (received) this.dispatch(replyFromWire(received.message as HostReplyWire));
        return received !== undefined;
      },
      () => this.waiting.size > 0,
    );
  }

  /** Before sleeping on a synchronous call's answer, watch for it briefly while that pays. */
  private readonly syncReply = new AdaptivePoll(HOST_CALL_POLL_MS);

  /**
   * Wall time the last callSync spent asleep in Atomics.wait, less SLEEP_CPU_MS per sleep.
   * The rest of its wait the thread was awake (watching the block, taking the answer) or
   * busy going to sleep and waking up: the guard moves the watchdog's CPU deadline by that
   * part (ExecutionGuard.outsideGuest).
   */
  lastSyncSleptMs = 0;

  /** Sends an async call; `settle` gets its answer once, unless `forget(id)` came first. */
  callAsync(token: number, fn: number, json: string, buffers: ArrayBuffer[], settle: (reply: HostCallReply) => void): number {
    const port = this.openOnce();
    const c = this.nextCallId++;
    this.waiting.set(c, settle);
    const call: HostCallMessage = { t: token, c, f: fn, j: json, b: buffers, s: 0 };
    port.postMessage(callToWire(call), transferList(buffers));
    return c;
  }

  forget(callId: number): void {
    this.waiting.delete(callId);
  }

  /** Sends a synchronous call and blocks this thread until its answer, or until `deadline` (performance.now() clock). */
  callSync(token: number, fn: number, json: string, buffers: ArrayBuffer[], deadline: number): SyncOutcome {
    const port = this.openOnce();
    const slot = this.syncSlot!;
    const c = this.nextCallId++;
    const call: HostCallMessage = { t: token, c, f: fn, j: json, b: buffers, s: 1 };
    const wire = callToWire(call);
    this.lastSyncSleptMs = 0;
    // Through the shared block while the embedder watches it (right after its last answer), else posted.
    if (typeof wire !== "string" || !slot.offerCall(wire)) port.postMessage(wire, transferList(buffers));
    // The answer usually comes within microseconds while the embedder is polling for calls:
    // watch the block for a moment first rather than go to sleep, while that pays (see
    // host/adaptive-poll.ts).
    this.syncReply.poll(
      () => slot.readyFor(c),
      () => !slot.readyFor(c),
    );
    for (;;) {
      const ready = slot.readyId();
      if (slot.readyFor(c)) {
        const text = slot.inlineText();
        if (text !== null) return { c, ok: true, j: text, b: NO_BUFFERS };
        // On the port, behind any answers to earlier calls that timed out: those are dropped.
        for (;;) {
          const received = receiveMessageOnPort(this.syncReplies!);
          // Cannot happen (the embedder posts before it marks the block), but never spin on it.
          if (!received) return { c, ok: false, e: { name: "Error", message: "the answer to the synchronous host call was lost" } };
          const reply = replyFromWire(received.message as HostReplyWire);
          if (reply.c === c) return reply;
        }
      }
      const left = deadline - performance.now();
      if (left <= 0) return "timeout";
      const asleepAt = performance.now();
      slot.sleep(ready, left);
      this.lastSyncSleptMs += Math.max(0, performance.now() - asleepAt - SLEEP_CPU_MS);
    }
  }
}
