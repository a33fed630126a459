// The embedder's side of host calls, one per worker: takes the calls a worker's guests make,
// runs the embedder's host functions with their call context, and answers: async calls
// on the call port, synchronous ones on the sync-reply port followed by a wake-up of the
// worker thread waiting on the shared signal (see host/worker/host-calls/channel.ts).
//
// Activations (a run, a plugin load, a plugin call) are opened here by host/sandbox.ts
// before the request goes out and closed when its answer is back: closing aborts the
// call context's signal, and answers to calls of a closed activation are dropped.
import { setMaxListeners } from "node:events";
import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { types } from "node:util";
import { AdaptivePoll } from "../adaptive-poll.js";
import { decodeFromGuest, encodeForGuest, toCrossable } from "../marshal/crossing-values.js";
import type { HostFunctionEntry } from "./declaration.js";
import { HostError } from "./host-error.js";
import { describeThrown, isInstance, stringProperty } from "../thrown-values.js";
import { SyncCallBlock } from "./sync-call-block.js";
import { formatBytes } from "../limits.js";
import type { HostCallContext } from "./types.js";
import {
  HOST_CALL_POLL_MS,
  NO_BUFFERS,
  callFromWire,
  replyToWire,
  transferList,
  type HostCallFailure,
  type HostCallMessage,
  type HostCallReply,
  type HostCallsOpenMessage,
  type HostCallWire,
} from "./manifest.js";

/** Longest error message handed to the guest. */
const MAX_ERROR_MESSAGE = 16 * 1024;

/** Per sandbox: whether one of its synchronous host functions is running right now. */
export class SyncCallState {
  /** Label of the synchronous function running, or null. */
  running: string | null = null;
  /** Set when the embedder called into the sandbox from that function. */
  reentered: string | null = null;

  /** Called by Sandbox.run/load/call: refuses a call into a sandbox blocked on its own synchronous host function. */
  assertNotBlocked(what: string): void {
    if (this.running === null) return;
    this.reentered = what;
    throw new Error(
      `${what} was called from inside ${this.running}, a synchronous host function of the same sandbox; the sandbox waits for that function to return, so the call would deadlock (make the function async)`,
    );
  }
}

export interface ActivationScope {
  functions(id: number): HostFunctionEntry | undefined;
  readonly sandboxId: number;
  readonly filename: string;
  readonly syncState: SyncCallState;
  readonly maxCallBytes: number;
}

class OpenActivation {
  private controller: AbortController | null = null;
  private context: HostCallContext | null = null;
  closed = false;
  constructor(readonly scope: ActivationScope) {}

  callContext(): HostCallContext {
    if (this.context === null) {
      this.controller = new AbortController();
      // One signal for all of the activation's calls: a script's 11th concurrent call
      // whose function passes it on (as docs/host-modules.md advises) is no leak warning.
      setMaxListeners(0, this.controller.signal);
      if (this.closed) this.controller.abort(abortReason());
      this.context = Object.freeze({ signal: this.controller.signal, sandboxId: this.scope.sandboxId, filename: this.scope.filename });
    }
    return this.context;
  }

  close(): void {
    this.closed = true;
    this.controller?.abort(abortReason());
  }
}

function abortReason(): Error {
  const error = new Error("the run that made this host call has ended");
  error.name = "AbortError";
  return error;
}

let nextToken = 1;

/**
 * What the guest sees for an error thrown (or a rejection) by host function `label`: a
 * name and a message, never the host's stack. An Error of another realm (one a node:vm
 * context made) is an Error too, recognised by util.types.isNativeError where instanceof
 * fails. Nothing here may throw, whatever the value (a revoked Proxy makes instanceof and
 * every property read throw): it runs in the embedder's message handlers.
 */
export function failureOf(error: unknown, label: string): HostCallFailure {
  const ofThisRealm = isInstance(error, Error);
  if (!ofThisRealm && !types.isNativeError(error)) return { name: "Error", message: `${label} threw ${describeThrown(error, MAX_ERROR_MESSAGE)}`.slice(0, MAX_ERROR_MESSAGE) };
  const thrown = error as Error;
  let name: HostCallFailure["name"] = "Error";
  if (ofThisRealm) name = isInstance(thrown, TypeError) ? "TypeError" : isInstance(thrown, RangeError) ? "RangeError" : "Error";
  else {
    const foreignName = stringProperty(thrown, "name");
    if (foreignName === "TypeError" || foreignName === "RangeError") name = foreignName;
  }
  let message: string;
  try {
    message = String(thrown.message);
  } catch {
    message = "an error whose message could not be read";
  }
  const failure: HostCallFailure = { name, message: message.slice(0, MAX_ERROR_MESSAGE) };
  if (isInstance(thrown, HostError)) {
    // HostError checks its code when made, but `code` is only readonly in TypeScript: it
    // may have been replaced since (by a function, which postMessage cannot clone, or a
    // getter that throws). Only a string or a finite number crosses.
    let code: unknown;
    try {
      code = (thrown as HostError).code;
    } catch {
      code = undefined;
    }
    if (typeof code === "string") failure.code = code.slice(0, MAX_ERROR_MESSAGE);
    else if (typeof code === "number" && Number.isFinite(code)) failure.code = code;
  }
  return failure;
}

/**
 * Whether a host function's result is a thenable, reading its `then` once. A read that
 * throws (a revoked Proxy, a throwing getter) counts as one: Promise.resolve reads it again
 * and turns the throw into a rejection, which answers the call as a failure.
 */
function isThenable(value: unknown): boolean {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  try {
    return typeof (value as { then?: unknown }).then === "function";
  } catch {
    return true;
  }
}

/**
 * Whether call id `a` came after call id `b`: the worker numbers all its calls with one
 * counter, and calls reach this side with their whole id (the wire text or message), so
 * a plain comparison is exact. Not modulo 2^32 as in the shared block's READY word: two
 * ids 2^31 apart (a worker making two billion async calls between two sync ones) would
 * then compare the wrong way, and every later sync call would be taken as given up.
 */
function callAfter(a: number, b: number): boolean {
  return a > b;
}

export class HostCallServer {
  private readonly open = new Map<number, OpenActivation>();
  private calls: MessagePort | null = null;
  private syncReplies: MessagePort | null = null;
  private syncBlock: SyncCallBlock | null = null;
  /**
   * The last synchronous call answered. The worker makes its next synchronous call only
   * once it has its answer to the last one, or gave up on it (its run's wall deadline):
   * a synchronous call older than this one was given up on. It is not run, and nothing
   * answers it, so the block's READY word never goes back to an older call (the worker
   * waiting for the newer one would then sleep to its deadline).
   */
  private lastSyncAnswered: number | null = null;
  /**
   * Set while onBlockCall handles its calls: their answers start no poll session of their
   * own (one would take calls posted after the ones still to handle, out of order); the
   * batch starts one at its end if it answered anything.
   */
  private batch: { answered: boolean } | null = null;
  /** After answering, poll briefly for the guest's next call (see host/adaptive-poll.ts). */
  private readonly nextCall = new AdaptivePoll(HOST_CALL_POLL_MS);

  /** The worker opened its channel (first host call in that worker). */
  attach(message: HostCallsOpenMessage): void {
    this.calls?.close();
    this.syncReplies?.close();
    this.calls = message.calls;
    this.syncReplies = message.syncReplies;
    this.syncBlock = new SyncCallBlock(message.signal);
    this.lastSyncAnswered = null;
    this.calls.on("message", (call: HostCallWire) => this.onCall(callFromWire(call)));
    // Host calls only happen during a request, which already keeps the process alive.
    // After on("message"), which refs the port: unref'd first, the port kept every
    // process that had made a host call alive forever after its sandboxes were disposed.
    this.calls.unref();
    this.syncReplies.unref();
  }

  /** Opens an activation; its token goes with the request. */
  openActivation(scope: ActivationScope): number {
    const token = nextToken++;
    this.open.set(token, new OpenActivation(scope));
    return token;
  }

  /** The activation's answer is back (or it failed): abort its signal, drop later answers. */
  closeActivation(token: number): void {
    const activation = this.open.get(token);
    if (!activation) return;
    this.open.delete(token);
    activation.close();
  }

  /** The worker is gone: every activation in it has ended. */
  closeAll(): void {
    for (const token of [...this.open.keys()]) this.closeActivation(token);
    this.calls?.close();
    this.syncReplies?.close();
  }

  private onCall(call: HostCallMessage): void {
    const activation = this.open.get(call.t);
    const entry = activation?.scope.functions(call.f);
    if (!activation || !entry || entry.sync !== (call.s === 1)) {
      // A call of an activation that has ended (or a function number the guest made up).
      return this.reply(call, { c: call.c, ok: false, e: { name: "Error", message: "the host call was refused: its run has ended or the function is unknown" } });
    }
    if (call.s === 1) return this.runSync(call, activation, entry);
    let result: unknown;
    try {
      const args = decodeFromGuest(call.j, call.b.map((buffer) => new Uint8Array(buffer)));
      result = entry.fn.apply(activation.callContext(), args as unknown[]);
    } catch (error) {
      return this.reply(call, { c: call.c, ok: false, e: failureOf(error, entry.label) });
    }
    if (!isThenable(result)) {
      // Answered at once (no promise to wait for): no detour through the microtask queue.
      return this.reply(call, this.encodeResult(call.c, result, entry, activation.scope.maxCallBytes));
    }
    // The reactions keep the call's id, not the call: its arguments (JSON text, buffers of up
    // to maxHostCallBytes) would otherwise live as long as the embedder's promise, after the
    // run has ended and the sandbox is gone (a script's abandoned calls pinned 120 MiB).
    const callId = call.c;
    Promise.resolve(result).then(
      (value) => {
        if (!activation.closed) this.replyAsync(this.encodeResult(callId, value, entry, activation.scope.maxCallBytes));
      },
      (error: unknown) => {
        if (!activation.closed) this.replyAsync({ c: callId, ok: false, e: failureOf(error, entry.label) });
      },
    );
  }

  private runSync(call: HostCallMessage, activation: OpenActivation, entry: HostFunctionEntry): void {
    if (this.givenUp(call.c)) return;
    const state = activation.scope.syncState;
    let reply: HostCallReply;
    const outer = state.running;
    state.running = entry.label;
    state.reentered = null;
    try {
      const args = decodeFromGuest(call.j, call.b.map((buffer) => new Uint8Array(buffer)));
      const result = entry.fn.apply(activation.callContext(), args as unknown[]);
      if (state.reentered !== null) {
        reply = { c: call.c, ok: false, e: { name: "Error", message: `${entry.label} called ${state.reentered} on its own sandbox from a synchronous host function, which would deadlock` } };
      } else if (isThenable(result)) {
        // Ours to drop: a rejection has no one to report to. Only a native promise gets a
        // handler: another thenable's `then` is the embedder's code, not to be run here.
        if (types.isPromise(result)) result.then(undefined, () => undefined);
        reply = { c: call.c, ok: false, e: { name: "TypeError", message: `${entry.label} is a synchronous host function (hostSync) but returned a promise; make it return its value, or declare it without hostSync` } };
      } else {
        reply = this.encodeResult(call.c, result, entry, activation.scope.maxCallBytes);
      }
    } catch (error) {
      reply = { c: call.c, ok: false, e: failureOf(error, entry.label) };
    } finally {
      state.running = outer;
    }
    this.replySync(reply);
  }

  private encodeResult(callId: number, value: unknown, entry: HostFunctionEntry, maxBytes: number): HostCallReply {
    try {
      const { json, buffers } = encodeForGuest(toCrossable(value, `${entry.label}() result`));
      const size = json.length + buffers.reduce((sum, buffer) => sum + buffer.byteLength, 0);
      if (size > maxBytes) {
        return { c: callId, ok: false, e: { name: "RangeError", message: `limit: maxHostCallBytes (${formatBytes(maxBytes)}) exceeded: the result of ${entry.label} is ${size} bytes` } };
      }
      return { c: callId, ok: true, j: json, b: buffers };
    } catch (error) {
      return { c: callId, ok: false, e: failureOf(error, entry.label) };
    }
  }

  private reply(call: HostCallMessage, reply: HostCallReply): void {
    if (call.s === 1) return this.replySync(reply);
    this.replyAsync(reply);
  }

  private replyAsync(reply: HostCallReply): void {
    this.calls?.postMessage(replyToWire(reply), reply.ok ? transferList(reply.b) : NO_BUFFERS);
    this.answered();
  }

  /** Whether the worker has given up on synchronous call `callId` (see lastSyncAnswered). */
  private givenUp(callId: number): boolean {
    return this.lastSyncAnswered !== null && !callAfter(callId, this.lastSyncAnswered);
  }

  private replySync(reply: HostCallReply): void {
    if (!this.syncReplies || !this.syncBlock || this.givenUp(reply.c)) return;
    this.lastSyncAnswered = reply.c;
    if (!reply.ok || reply.b.length > 0 || !this.syncBlock.answerInline(reply.c, reply.j)) {
      this.syncReplies.postMessage(replyToWire(reply), reply.ok ? transferList(reply.b) : NO_BUFFERS);
      this.syncBlock.answerOnPort(reply.c);
    }
    this.answered();
  }

  private answered(): void {
    const calls = this.calls;
    const block = this.syncBlock;
    if (this.batch) {
      this.batch.answered = true;
      return;
    }
    // Called again from a call handled inside the session: the session goes on.
    if (!calls || !block || this.nextCall.polling) return;
    // While polling, a synchronous call can come through the shared block instead of the
    // port (host/host-modules/sync-call-block.ts): cheaper to send, and to watch for.
    block.watchCalls();
    let late: string | null = null;
    try {
      this.nextCall.poll(() => this.takeNextCall(calls, block));
    } finally {
      // Whatever happened in the session: a block left WATCHING would take calls nobody reads.
      late = block.stopWatching();
    }
    if (late !== null) this.onBlockCall(calls, late);
  }

  private takeNextCall(calls: MessagePort, block: SyncCallBlock): boolean {
    const inBlock = block.takeCall();
    if (inBlock !== null) {
      this.onBlockCall(calls, inBlock);
      return true;
    }
    const received = receiveMessageOnPort(calls);
    if (received) this.onCall(callFromWire(received.message as HostCallWire));
    return received !== undefined;
  }

  /**
   * A call taken from the block; calls the worker posted before it are handled first, in
   * order. "Before" by call id, not by what is on the port now: a block call can wait
   * there while the embedder is busy (a long host function inside the poll session) until
   * the worker gives up on it at its run's wall deadline, and the worker's next run may
   * have posted newer calls meanwhile. Handled first, their answers would be overwritten
   * by this older one's.
   */
  private onBlockCall(calls: MessagePort, wire: string): void {
    const call = callFromWire(wire);
    const outer = this.batch;
    const batch = (this.batch = { answered: false });
    try {
      const later: HostCallMessage[] = [];
      for (let received = receiveMessageOnPort(calls); received; received = receiveMessageOnPort(calls)) {
        const posted = callFromWire(received.message as HostCallWire);
        if (callAfter(posted.c, call.c)) later.push(posted);
        else this.onCall(posted);
      }
      this.onCall(call);
      for (const posted of later) this.onCall(posted);
    } finally {
      this.batch = outer;
    }
    if (batch.answered) this.answered();
  }
}
