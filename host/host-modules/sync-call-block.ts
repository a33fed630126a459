// A small shared memory block per worker for synchronous host calls, both ways.
//
// Answers: the embedder's thread writes the answer, the worker's thread sleeps on the
// block (Atomics.wait) or watches it for a moment (host/worker/host-calls/channel.ts).
// An answer that is plain data (JSON text, no buffers: nearly all of them) of at most
// SYNC_INLINE_CHARS UTF-16 units is written into the block itself: no message to post,
// serialize, lock and receive on either side. Larger answers, answers with buffers and
// failures go by the sync-reply port, and the block only says so.
//
// Calls: while the embedder's thread watches for the guest's next call right after an
// answer (host/adaptive-poll.ts, host/host-modules/call-server.ts), it says so in
// CALL_STATE, and a synchronous call that fits is written into the block instead of being
// posted (WATCHING -> TAKEN, a compare-and-swap, so that the embedder either sees it while
// watching or finds it when it stops: it stops with the inverse swap, WATCHING -> IDLE,
// which fails if a call was just taken). Otherwise the call is posted as always.
//
// Layout (Int32 words, then UTF-16 units):
//   [0] READY   the call id whose answer is ready (0: none yet). Written last, with
//               Atomics.store, after everything else: a reader that sees its call id
//               there sees the rest too (Atomics order the plain writes before it).
//               Call ids only grow, so the answer to an earlier call that timed out,
//               arriving late, never passes for the current one. The word holds a call
//               id modulo 2^32 (Int32 storage), and both sides compare it that way
//               (readyFor): a worker makes billions of calls in a long-lived process.
//   [1] WHERE   1: the JSON text is in the block; 2: the answer is on the port.
//   [2] LENGTH  UTF-16 units of the text in the block.
//   [3] ASLEEP  1 while the worker is in (or about to enter) Atomics.wait on READY. The
//               embedder notifies only then: Atomics.notify costs far more than the rest of
//               an answer (profiled: a third of the embedder thread's time in a loop of
//               sync calls), and while the worker is watching the block it is not needed.
//               No wake-up is lost: the worker stores ASLEEP before Atomics.wait checks
//               READY, the embedder stores READY before it loads ASLEEP, and all four are
//               sequentially consistent, so one of them sees the other's store.
//   [4] CALL_STATE  0 IDLE: post calls; 1 WATCHING: the embedder watches the block;
//                   2 TAKEN: a call waits in the block.
//   [5] CALL_LENGTH UTF-16 units of that call (its wire text, host-modules/manifest.ts).
//   then SYNC_INLINE_CHARS UTF-16 units of answer, then as many of call.
// The embedder answers one worker's calls in order on one thread, and a worker sends its
// next synchronous call only after reading the answer to the last one (which the embedder
// writes after reading the call), so nothing writes a region while its reader reads it.

export const SYNC_INLINE_CHARS = 2048;
const READY = 0;
const WHERE = 1;
const LENGTH = 2;
const ASLEEP = 3;
const CALL_STATE = 4;
const CALL_LENGTH = 5;
const HEADER_BYTES = 24;
const IDLE = 0;
const WATCHING = 1;
const TAKEN = 2;
const INLINE = 1;
const ON_PORT = 2;

export const SYNC_CALL_BLOCK_BYTES = HEADER_BYTES + 4 * SYNC_INLINE_CHARS;

export class SyncCallBlock {
  private readonly words: Int32Array;
  private readonly chars: Uint16Array;
  private readonly callChars: Uint16Array;

  constructor(buffer: SharedArrayBuffer) {
    this.words = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.chars = new Uint16Array(buffer, HEADER_BYTES, SYNC_INLINE_CHARS);
    this.callChars = new Uint16Array(buffer, HEADER_BYTES + 2 * SYNC_INLINE_CHARS, SYNC_INLINE_CHARS);
  }

  // The embedder's side.

  /** Writes the JSON answer to `callId` into the block if it fits, and wakes the worker; false if it does not fit. */
  answerInline(callId: number, json: string): boolean {
    const length = json.length;
    if (length > SYNC_INLINE_CHARS) return false;
    writeText(this.chars, json);
    this.words[LENGTH] = length;
    this.words[WHERE] = INLINE;
    this.ready(callId);
    return true;
  }

  /** Says the answer to `callId` was posted on the sync-reply port, and wakes the worker. */
  answerOnPort(callId: number): void {
    this.words[WHERE] = ON_PORT;
    this.ready(callId);
  }

  private ready(callId: number): void {
    Atomics.store(this.words, READY, callId);
    if (Atomics.load(this.words, ASLEEP) === 1) Atomics.notify(this.words, READY);
  }

  // The worker's side.

  /** The call id whose answer is ready, as stored (modulo 2^32; 0: none yet). */
  readyId(): number {
    return Atomics.load(this.words, READY);
  }

  /** Whether the answer to `callId` is ready (ids compared as the block stores them). */
  readyFor(callId: number): boolean {
    return Atomics.load(this.words, READY) === (callId | 0);
  }

  /** Sleeps while the ready id is still `seen`, at most `ms`. */
  sleep(seen: number, ms: number): void {
    Atomics.store(this.words, ASLEEP, 1);
    Atomics.wait(this.words, READY, seen, ms);
    Atomics.store(this.words, ASLEEP, 0);
  }

  /** The answer's JSON text when it is in the block (call after readyId() returned its id), else null. */
  inlineText(): string | null {
    if (this.words[WHERE] !== INLINE) return null;
    return readText(this.chars, this.words[LENGTH]!);
  }

  /** Hands a call (its wire text) to the embedder through the block if it is watching and the call fits; false: post it. */
  offerCall(wire: string): boolean {
    const length = wire.length;
    if (length > SYNC_INLINE_CHARS || Atomics.load(this.words, CALL_STATE) !== WATCHING) return false;
    writeText(this.callChars, wire);
    this.words[CALL_LENGTH] = length;
    return Atomics.compareExchange(this.words, CALL_STATE, WATCHING, TAKEN) === WATCHING;
  }

  // The embedder's side of calls.

  /** Starts watching the block for calls (see offerCall). */
  watchCalls(): void {
    Atomics.store(this.words, CALL_STATE, WATCHING);
  }

  /** A call waiting in the block (its wire text), taken; null if none. Watching goes on. */
  takeCall(): string | null {
    if (Atomics.load(this.words, CALL_STATE) !== TAKEN) return null;
    const wire = readText(this.callChars, this.words[CALL_LENGTH]!);
    Atomics.store(this.words, CALL_STATE, WATCHING);
    return wire;
  }

  /** Stops watching; a call that was taken just before is returned (the caller must handle it), else null. */
  stopWatching(): string | null {
    if (Atomics.compareExchange(this.words, CALL_STATE, WATCHING, IDLE) !== TAKEN) return null;
    const wire = readText(this.callChars, this.words[CALL_LENGTH]!);
    Atomics.store(this.words, CALL_STATE, IDLE);
    return wire;
  }
}

function writeText(chars: Uint16Array, text: string): void {
  for (let i = 0; i < text.length; i++) chars[i] = text.charCodeAt(i);
}

function readText(chars: Uint16Array, length: number): string {
  // Short texts (a number, a small record) dominate: build them without a view of the block.
  if (length <= 16) {
    let text = "";
    for (let i = 0; i < length; i++) text += String.fromCharCode(chars[i]!);
    return text;
  }
  let text = "";
  for (let start = 0; start < length; start += 1024) {
    text += String.fromCharCode.apply(null, chars.subarray(start, Math.min(length, start + 1024)) as unknown as number[]);
  }
  return text;
}
