// The worker's side of host calls: one channel per worker thread, opened at the first host
// call (a worker whose guests never call the host pays nothing).
//
// Async calls go out on the call port and their answers come back on it as messages.
// A synchronous call goes out the same way; then the worker thread sleeps in Atomics.wait
// on a shared Int32 until the embedder has posted the answer on the sync-reply port and
// notified it, and takes the answer with receiveMessageOnPort. No spinning: the wait
// costs no CPU, and it is bounded by the caller's wall deadline.
import { MessageChannel, receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import type { HostCallMessage, HostCallReply, HostCallsOpenMessage } from "../../host-modules/manifest.js";

export type SyncOutcome = HostCallReply | "timeout";

/** See pollForReplies (the embedder's side polls the same way: host/host-modules/call-server.ts). */
const POLL_MS = 0.15;
const POLL_SESSION_MAX_MS = 2;

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
  private signal: Int32Array | null = null;
  private nextCallId = 1;
  private readonly waiting = new Map<number, (reply: HostCallReply) => void>();

  private constructor(private readonly mainPort: MessagePort) {}

  private openOnce(): MessagePort {
    if (this.calls) return this.calls;
    const calls = new MessageChannel();
    const syncReplies = new MessageChannel();
    const signal = new SharedArrayBuffer(4);
    this.calls = calls.port1;
    this.syncReplies = syncReplies.port1;
    this.signal = new Int32Array(signal);
    this.calls.on("message", (reply: HostCallReply) => {
      this.dispatch(reply);
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

  private lastReplyAt = -Infinity;

  /**
   * After an answer, while the guest has calls in flight and answers have been coming
   * quickly, poll for the next answer for a moment instead of sleeping until the event
   * loop wakes this thread (which costs more than a call on a busy machine). Bounded per
   * answer and per session; never used for synchronous calls, which wait in Atomics.wait.
   */
  private pollForReplies(): void {
    const now = performance.now();
    const streak = now - this.lastReplyAt < 1;
    this.lastReplyAt = now;
    if (!streak) return;
    const sessionEnd = now + POLL_SESSION_MAX_MS;
    let until = now + POLL_MS;
    for (let time = now; this.waiting.size > 0 && time < until && time < sessionEnd; time = performance.now()) {
      const received = receiveMessageOnPort(this.calls!);
      if (!received) continue;
      this.dispatch(received.message as HostCallReply);
      until = performance.now() + POLL_MS;
    }
  }

  /** Sends an async call; `settle` gets its answer once, unless `forget(id)` came first. */
  callAsync(token: number, fn: number, json: string, buffers: ArrayBuffer[], settle: (reply: HostCallReply) => void): number {
    const port = this.openOnce();
    const c = this.nextCallId++;
    this.waiting.set(c, settle);
    const call: HostCallMessage = { t: token, c, f: fn, j: json, b: buffers, s: 0 };
    port.postMessage(call, buffers);
    return c;
  }

  forget(callId: number): void {
    this.waiting.delete(callId);
  }

  /** Sends a synchronous call and blocks this thread until its answer, or until `deadline` (performance.now() clock). */
  callSync(token: number, fn: number, json: string, buffers: ArrayBuffer[], deadline: number): SyncOutcome {
    const port = this.openOnce();
    const signal = this.signal!;
    const c = this.nextCallId++;
    Atomics.store(signal, 0, 0);
    const call: HostCallMessage = { t: token, c, f: fn, j: json, b: buffers, s: 1 };
    port.postMessage(call, buffers);
    for (;;) {
      const received = receiveMessageOnPort(this.syncReplies!);
      if (received) {
        const reply = received.message as HostCallReply;
        if (reply.c === c) return reply;
        continue; // the answer to an earlier call that timed out: dropped
      }
      const left = deadline - performance.now();
      if (left <= 0) return "timeout";
      Atomics.wait(signal, 0, 0, left);
      Atomics.store(signal, 0, 0);
    }
  }
}
