// Per-activation state shared between the embedder's thread and a worker, in shared memory.
//
// Why shared memory and not messages: the embedder must be able to (a) stop a guest that
// is spinning in a loop, whose worker reads no messages until the loop ends, and (b) know
// whether a run had effects outside the sandbox even after its worker was terminated, when
// no message can come any more. Each run, load or call in flight gets one slot (an Int32)
// for its lifetime; both sides only ever set bits in it, with atomic operations:
//
// - STARTED: the worker took the activation off its queue (set once, by the worker);
// - EFFECTS: the activation did something visible outside the sandbox (a fetch was sent,
//   a host function was called), so running it again is not transparent;
// - STOP:    the embedder wants it ended (abort, dispose, queue timeout, or withdrawn to
//   run again elsewhere). Before STARTED, the worker skips the activation; after, the
//   interrupt handler stops the guest;
// - DONE:    the worker has its outcome (set once, by the worker, before it replies).
//
// Most bits are set unconditionally and their order does not matter. Two pairs are
// races decided by compare-and-swap, where the order does matter and exactly one side
// wins: EFFECTS against a withdrawal's STOP (noteEffect, withdrawIfEffectFree), and a
// withdrawal's STOP against DONE (a run that has finished is never withdrawn).

export const ACTIVATION_SLOT_COUNT = 1024;
export const ACTIVATION_SLOTS_BYTES = ACTIVATION_SLOT_COUNT * 4;
const STARTED = 1;
const EFFECTS = 2;
const STOP = 4;
const DONE = 8;
/** No slot: the activation can neither be stopped early nor tell about its effects. */
export const NO_SLOT = -1;

/** What one activation can see of its slot (the worker's side). */
export interface ActivationControl {
  /** Whether the embedder asked for the activation to end (read by the interrupt handler). */
  stopRequested(): boolean;
  /**
   * Records that the activation is about to have an effect outside the sandbox. False when
   * the embedder has already asked for it to end: the effect must then not happen (a run
   * withdrawn to re-run elsewhere must not have had one; see withdrawIfEffectFree).
   */
  noteEffect(): boolean;
  /** Given by the realm: ends the activation while it waits (on timers, fetches) for an abort message. */
  setAborter(abort: () => void): void;
  /** Records that the activation has its outcome: from now on it cannot be withdrawn (withdrawIfEffectFree). */
  noteDone(): void;
}

export const NO_CONTROL: ActivationControl = { stopRequested: () => false, noteEffect: () => true, setAborter: () => undefined, noteDone: () => undefined };

export class ActivationSlots {
  private readonly slots: Int32Array;
  private readonly free: number[] = [];

  constructor(buffer: SharedArrayBuffer) {
    this.slots = new Int32Array(buffer);
  }

  // ---- the embedder's side ----------------------------------------------------------

  /** A free slot, cleared, or NO_SLOT when all are taken (the activation then runs without one). */
  allocate(): number {
    if (this.free.length === 0 && this.nextUnused < ACTIVATION_SLOT_COUNT) this.free.push(this.nextUnused++);
    const slot = this.free.pop();
    if (slot === undefined) return NO_SLOT;
    Atomics.store(this.slots, slot, 0);
    return slot;
  }
  private nextUnused = 0;

  /** Gives a slot back once the worker is done with it (it replied, or it is gone). */
  release(slot: number): void {
    if (slot !== NO_SLOT) this.free.push(slot);
  }

  /** Asks for the activation to end. Returns true if the worker had already started it. */
  requestStop(slot: number): boolean {
    if (slot === NO_SLOT) return true;
    return (Atomics.or(this.slots, slot, STOP) & STARTED) !== 0;
  }

  /** Withdraws an activation the worker has not started yet; false if it has started. */
  withdrawIfQueued(slot: number): boolean {
    if (slot === NO_SLOT) return false;
    // Before the worker starts it, nothing but STOP is ever set: 0 means queued.
    return Atomics.compareExchange(this.slots, slot, 0, STOP) === 0;
  }

  /**
   * Withdraws an activation, started or not, that has had no effect outside the sandbox,
   * so that it can run again elsewhere as if it never ran: sets STOP only while EFFECTS is
   * not set, and the worker sets EFFECTS only while STOP is not (noteEffect), so exactly
   * one of the two wins. False if it had effects, was already told to stop, or has its
   * outcome already (DONE: a finished run is answered, not run twice).
   */
  withdrawIfEffectFree(slot: number): boolean {
    if (slot === NO_SLOT) return false;
    for (;;) {
      const bits = Atomics.load(this.slots, slot);
      if ((bits & (EFFECTS | STOP | DONE)) !== 0) return false;
      if (Atomics.compareExchange(this.slots, slot, bits, bits | STOP) === bits) return true;
    }
  }

  /** Whether the worker has yet to start the activation (and it was not withdrawn). */
  isQueued(slot: number): boolean {
    if (slot === NO_SLOT) return false;
    return (Atomics.load(this.slots, slot) & (STARTED | STOP)) === 0;
  }

  /** Whether the worker took the activation off its queue (true when unknown: no slot). */
  wasStarted(slot: number): boolean {
    if (slot === NO_SLOT) return true;
    return (Atomics.load(this.slots, slot) & STARTED) !== 0;
  }

  /** Whether the embedder has told the activation to end (withdrawn, aborted, disposed). */
  isStopped(slot: number): boolean {
    if (slot === NO_SLOT) return false;
    return (Atomics.load(this.slots, slot) & STOP) !== 0;
  }

  /** Whether the activation may have had effects outside the sandbox (true when unknown). */
  hadEffects(slot: number): boolean {
    if (slot === NO_SLOT) return true;
    return (Atomics.load(this.slots, slot) & EFFECTS) !== 0;
  }

  // ---- the worker's side ------------------------------------------------------------

  /** Marks the activation started; false if the embedder already gave up on it. */
  start(slot: number): boolean {
    if (slot === NO_SLOT) return true;
    return (Atomics.or(this.slots, slot, STARTED) & STOP) === 0;
  }

  /** The worker-side control of a slot; `setAborter` hands the realm's abort to `onAborter`. */
  control(slot: number, onAborter: (abort: () => void) => void): ActivationControl {
    if (slot === NO_SLOT) return NO_CONTROL;
    const slots = this.slots;
    return {
      stopRequested: () => (Atomics.load(slots, slot) & STOP) !== 0,
      noteEffect: () => {
        for (;;) {
          const bits = Atomics.load(slots, slot);
          if ((bits & STOP) !== 0) return false;
          if (Atomics.compareExchange(slots, slot, bits, bits | EFFECTS) === bits) return true;
        }
      },
      setAborter: onAborter,
      // Unconditional: a withdrawal that won before it (STOP set) discards this outcome
      // anyway; one that comes after sees DONE and fails.
      noteDone: () => void Atomics.or(slots, slot, DONE),
    };
  }
}
