// What the embedder's thread tells a worker (and the worker the guest) about the host
// modules of a sandbox or a run: the shape of each module, never the functions themselves.
// Mostly JSON text: a string crosses postMessage much faster than the same records.
// A function is a number, its index in the embedder's own table of the sandbox's host
// functions (host/host-modules/declaration.ts); the guest can only name such a number, and
// the embedder looks it up in its own table, never by a path the guest supplied.

/** One member of a host module: a function (by index, `s` when synchronous), a nested object, or a copied value (by index into `values`). */
export type ShapeNode = { f: number; s?: 1 } | { o: Record<string, ShapeNode> } | { v: number };

export interface HostModuleManifest {
  /** JSON text of the module's top-level members (Record<string, ShapeNode>), as the guest reads it. */
  members: string;
  /** The names of the top-level members (for the named exports of the generated module). */
  names: string[];
  /** Copied values of the module, encoded for the guest (host/marshal/crossing-values.ts). */
  values: { json: string; buffers: ArrayBuffer[] };
  /** JSON text of Record<function number, [label ("app.store.get"), 1 when synchronous]>. */
  functions: string;
}

export type HostModulesManifest = Record<string, HostModuleManifest>;

/** Sent with a run, a plugin load or a plugin call that has host modules. */
export interface ActivationHostCalls {
  /** Names the activation in host calls (the embedder's key to its functions and call context). */
  token: number;
  /** Modules added or replaced for this run only (sandbox.run(code, { modules })). */
  modules: HostModulesManifest | null;
}

/** The worker opens its host-call channel with this message on its main port, once. */
export interface HostCallsOpenMessage {
  type: "host-calls";
  /** Host calls from the worker; async replies back. */
  calls: import("node:worker_threads").MessagePort;
  /** Replies to synchronous calls (the worker reads them with receiveMessageOnPort). */
  syncReplies: import("node:worker_threads").MessagePort;
  /** Where synchronous answers arrive or are announced (host/host-modules/sync-call-block.ts). */
  signal: SharedArrayBuffer;
}

/** A host call, worker → embedder. */
export interface HostCallMessage {
  /** Activation token. */
  t: number;
  /** Call id (worker-unique). */
  c: number;
  /** Function number. */
  f: number;
  /** Arguments: JSON text and buffers of the crossing format (an array). */
  j: string;
  b: ArrayBuffer[];
  /** 1 for a synchronous call. */
  s: 0 | 1;
}

/** What a host function threw, as the guest will see it. */
export interface HostCallFailure {
  name: "Error" | "TypeError" | "RangeError";
  message: string;
  code?: string | number;
}

/** A host call's answer, embedder → worker. */
export type HostCallReply = { c: number; ok: true; j: string; b: ArrayBuffer[] } | { c: number; ok: false; e: HostCallFailure };

/** Longest poll for one message of a host call, on either side (see host/adaptive-poll.ts). */
export const HOST_CALL_POLL_MS = 0.15;

/**
 * Host calls and their answers cross postMessage as text when they carry no buffers (almost
 * always): the structured clone of a six-field record costs ~2.5 µs more per message than a
 * string with the same content, about a tenth of a whole call. With buffers, the record.
 *   call:   "<s><t>,<c>,<f>,<json>"      answer: "<c>,<json>" (ok; failures as records)
 */
export type HostCallWire = string | HostCallMessage;
export type HostReplyWire = string | HostCallReply;

export const NO_BUFFERS: ArrayBuffer[] = Object.freeze([]) as unknown as ArrayBuffer[];

/** Buffers below this size are copied by postMessage rather than transferred (see transferList). */
const TRANSFER_MIN_BYTES = 64 * 1024;
/** At most this many buffers of one message are transferred (see transferList). */
const TRANSFER_MAX = 256;

/**
 * The buffers of a call or answer worth transferring: the large ones, at most TRANSFER_MAX;
 * postMessage copies the rest. A transfer list costs quadratic time in its length (V8
 * looks each buffer up in it: 10,000 empty buffers took 78 ms, 60,000 took 2.3 s, where
 * copying them took 2 and 11 ms), and that time is spent in native code the interrupt
 * cannot stop: a script passing 100,000 empty Uint8Arrays held its worker for seconds.
 * Copying what is not transferred costs a pass over its bytes, and those are bounded by
 * maxHostCallBytes.
 */
export function transferList(buffers: readonly ArrayBuffer[]): ArrayBuffer[] {
  if (buffers.length === 0) return NO_BUFFERS;
  const list: ArrayBuffer[] = [];
  for (const buffer of buffers) {
    if (buffer.byteLength >= TRANSFER_MIN_BYTES && list.length < TRANSFER_MAX) list.push(buffer);
  }
  return list;
}

export function callToWire(call: HostCallMessage): HostCallWire {
  return call.b.length === 0 ? `${call.s}${call.t},${call.c},${call.f},${call.j}` : call;
}

export function callFromWire(wire: HostCallWire): HostCallMessage {
  if (typeof wire !== "string") return wire;
  const token = wire.indexOf(",");
  const id = wire.indexOf(",", token + 1);
  const fn = wire.indexOf(",", id + 1);
  return {
    s: wire.charCodeAt(0) === 49 ? 1 : 0,
    t: Number(wire.slice(1, token)),
    c: Number(wire.slice(token + 1, id)),
    f: Number(wire.slice(id + 1, fn)),
    j: wire.slice(fn + 1),
    b: NO_BUFFERS,
  };
}

export function replyToWire(reply: HostCallReply): HostReplyWire {
  return reply.ok && reply.b.length === 0 ? `${reply.c},${reply.j}` : reply;
}

export function replyFromWire(wire: HostReplyWire): HostCallReply {
  if (typeof wire !== "string") return wire;
  const id = wire.indexOf(",");
  return { c: Number(wire.slice(0, id)), ok: true, j: wire.slice(id + 1), b: NO_BUFFERS };
}
