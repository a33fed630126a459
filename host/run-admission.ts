// The embedder-side line of one-shot runs (runScript) waiting for room on a shared worker.
//
// Why: a worker runs one guest at a time, in the order its requests arrived. Placed at
// once, 50 concurrent one-shot runs put ~25 in each worker's queue, and a hostile guest
// (a loop to its CPU limit, a native hog until the hard stop) holds up all of them there:
// queued runs could move to another worker, but each move put the run at the back of that
// worker's queue, and the next hostile guest caught it again (a run moved 13 times in 3 s
// in the mixed-tenancy bench). Held here, in order, a run is placed only when a worker has
// room: fewer than `queuedRunsPerWorker` runs sent there and not started, and no guest
// running there for long (see WorkerConnection.roomForRuns). A hostile guest then holds
// up at most that many runs, and the line moves on to the workers that are free.
//
// Only one-shot runs wait here: a sandbox made with createSandbox lives in one worker, so
// holding its runs back would not send them anywhere else.

/** What an admitted run gives back once it has been sent to its worker (or never will be). */
export interface Admission {
  /** Idempotent: the run now counts in its worker's queue (or is over), no longer here. */
  placed(): void;
  /** Let out by releaseWaitingSince: it has waited long enough here and goes to another line. */
  readonly waitedTooLong?: boolean;
}

interface Waiter {
  admit(admission: Admission): void;
  /** Given by runs of the probation line: their script's key (releaseKey). */
  key: string | undefined;
  /** When it began to wait (`performance.now()`, or earlier as its caller says), for releaseWaitingSince. */
  since: number;
  /** The run belongs in the other line now (its script was demoted meanwhile, or demotion was turned off). */
  leaves(): boolean;
  /** It came back (admit's `ahead`): it waits before the others, behind those that came back before it. */
  ahead: boolean;
}

// The line's order: first the runs that came back (ahead), in the order they came back;
// then the others in order of `since` (when each began to wait, here or, for a new
// script's run let out of the probation line, there), so that a run let out of another
// line after a wait takes the place it would have had here, not the back (nor the front:
// see admit).

/** Given to a run that leaves the line without taking room: nothing to give back. */
const NO_ROOM_TAKEN: Admission = { placed: () => undefined };
/** The same, for a run let out because it waited too long (releaseWaitingSince). */
const WAITED_TOO_LONG: Admission = { placed: () => undefined, waitedTooLong: true };

export class RunAdmission {
  private readonly waiting: Waiter[] = [];
  /** How many of `waiting`, at its front, came back (ahead): where the next one goes, without a search. */
  private aheadCount = 0;
  /** The waiting runs that gave a key, by key (releaseKey finds them without a scan of the line). */
  private readonly byKey = new Map<string, Set<Waiter>>();
  /** Runs admitted and not yet sent to a worker: they will take room the workers do not show yet. */
  private unplaced = 0;

  /**
   * `room`: how many more runs the shared workers can take now (Infinity: no limit).
   * `onWait`: a run has to wait; whoever calls wake() must keep doing so until none waits.
   */
  constructor(
    private readonly room: () => number,
    private readonly onWait: () => void = () => undefined,
  ) {}

  /** Runs waiting for room, for poolStats. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /** Runs admitted and not yet sent to a worker (room they will take that the workers do not show yet). */
  get unplacedCount(): number {
    return this.unplaced;
  }

  /**
   * Resolves once the run may be placed; `cancel` gives up the place (or the admission, if
   * granted meanwhile). `leaves`: checked at releaseLeavers(); once true, the run is let
   * out at once with an admission that took no room (it joins the other line). `ahead`:
   * a run that was placed once and withdrawn from its worker (moved off a stuck worker,
   * or withdrawn to re-run) goes before the runs that arrived after it, which are all of
   * those waiting. `since`: when the run began to wait, if earlier than now (a new
   * script's run that waited PROBATION_MAX_WAIT_MS in the probation line): it goes where
   * it would be had it waited here since then, behind the runs that were here before it
   * and before those that came later. It went ahead of every waiting run until a hostile
   * test showed what that does under a steady stream of new scripts: each waited its
   * second and then went before every known run, however long those had waited (known
   * runs unanswered for over 60 s at 1,000 new scripts a second, 2.7 s at worst with
   * probation off).
   */
  admit(leaves: () => boolean = () => false, ahead = false, key?: string, since = performance.now()): { admission: Promise<Admission>; cancel(): void } {
    let granted: Admission | null = null;
    let cancelled = false;
    const waiter: Waiter = { admit: () => undefined, leaves, ahead, key, since };
    const admission = new Promise<Admission>((resolve) => {
      waiter.admit = (admission) => {
        granted = admission;
        if (cancelled) admission.placed();
        else resolve(admission);
      };
    });
    // First come, first served: a run never overtakes one that began to wait before it.
    // One that came back goes first only if none that came back before it still waits.
    const position = this.positionFor(waiter);
    if (position === 0 && this.unplaced < this.room()) waiter.admit(this.grant());
    else {
      if (position === this.waiting.length) this.waiting.push(waiter);
      else this.waiting.splice(position, 0, waiter);
      if (ahead) this.aheadCount++;
      this.index(waiter);
      this.onWait();
    }
    return {
      admission,
      cancel: () => {
        cancelled = true;
        const index = this.waiting.indexOf(waiter);
        if (index !== -1) {
          this.waiting.splice(index, 1);
          if (waiter.ahead) this.aheadCount--;
          this.unindex(waiter);
        }
        (granted as Admission | null)?.placed();
      },
    };
  }

  /**
   * Where a new waiter goes (see the order above): behind the runs that came back, if it
   * came back too; else by `since`, found by binary search among the others (the back,
   * without a search, for a run that begins to wait now). Inserting by a scan of the line
   * was quadratic: 7,450 runs let out of the probation line at once into a line of 22,000
   * blocked the embedder's thread for 2.6 s (hostile test).
   */
  private positionFor(waiter: Waiter): number {
    const waiting = this.waiting;
    if (waiter.ahead) return this.aheadCount;
    let low = this.aheadCount;
    let high = waiting.length;
    if (low === high || waiting[high - 1]!.since <= waiter.since) return high;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (waiting[middle]!.since <= waiter.since) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Keeps the waiters `keep` says to keep, in order, in one pass; returns the others. */
  private compact(keep: (waiter: Waiter) => boolean): Waiter[] {
    const removed: Waiter[] = [];
    let kept = 0;
    let ahead = 0;
    for (const waiter of this.waiting) {
      if (!keep(waiter)) {
        removed.push(waiter);
        continue;
      }
      this.waiting[kept++] = waiter;
      if (waiter.ahead) ahead++;
    }
    this.waiting.length = kept;
    this.aheadCount = ahead;
    return removed;
  }

  /** Lets out the waiting runs that belong in the other line now (a script was just demoted, or demotion turned on or off: host/run-demotion.ts). */
  releaseLeavers(): void {
    // One pass, keeping the others in order (splicing each out was quadratic: 20,000
    // leavers blocked the embedder's thread for 136 ms, found by review).
    const leavers = this.compact((waiter) => !waiter.leaves());
    for (const waiter of leavers) {
      this.unindex(waiter);
      waiter.admit(NO_ROOM_TAKEN);
    }
  }

  /**
   * Lets out the waiting runs that gave `key` (its script just became known: they belong
   * in the ordinary line now). Finds them by key, without asking every waiter about its
   * standing (as releaseLeavers does); the line is then compacted once, so a burst of K new
   * keys each with runs waiting costs K passes over the line (10,000 keys ~1.3 s of the
   * embedder's CPU, measured by review; ~15x less than asking every waiter).
   */
  releaseKey(key: string): void {
    const leavers = this.byKey.get(key);
    if (leavers === undefined) return;
    this.byKey.delete(key);
    this.compact((waiter) => !leavers.has(waiter));
    for (const waiter of leavers) waiter.admit(NO_ROOM_TAKEN);
  }

  /**
   * Lets out the waiting runs that began to wait at `cutoff` or earlier, with an admission
   * that took no room and says so (`waitedTooLong`): they go to another line. Looks only
   * at the front: after the runs that came back (ahead), the line is in order of `since`.
   */
  releaseWaitingSince(cutoff: number): void {
    const leavers: Waiter[] = [];
    for (const waiter of this.waiting) {
      if (waiter.since <= cutoff) leavers.push(waiter);
      else if (!waiter.ahead) break;
    }
    if (leavers.length === 0) return;
    const leaving = new Set(leavers);
    this.compact((waiter) => !leaving.has(waiter));
    for (const waiter of leavers) {
      this.unindex(waiter);
      waiter.admit(WAITED_TOO_LONG);
    }
  }

  /** Keys with runs waiting (for tests: a run that left the line, however, is no longer indexed). */
  get keyedCount(): number {
    return this.byKey.size;
  }

  private index(waiter: Waiter): void {
    if (waiter.key === undefined) return;
    let set = this.byKey.get(waiter.key);
    if (set === undefined) this.byKey.set(waiter.key, (set = new Set()));
    set.add(waiter);
  }

  private unindex(waiter: Waiter): void {
    if (waiter.key === undefined) return;
    const set = this.byKey.get(waiter.key);
    if (set === undefined) return;
    set.delete(waiter);
    if (set.size === 0) this.byKey.delete(waiter.key);
  }

  /** Admits waiting runs while the workers have room (a run started or ended, a worker came free). */
  wake(): void {
    if (this.waiting.length === 0) return;
    const room = this.room();
    while (this.waiting.length > 0 && this.unplaced < room) {
      const waiter = this.waiting.shift()!;
      if (waiter.ahead) this.aheadCount--;
      this.unindex(waiter);
      waiter.admit(this.grant());
    }
  }

  private grant(): Admission {
    this.unplaced++;
    let done = false;
    return {
      placed: () => {
        if (done) return;
        done = true;
        this.unplaced--;
        this.wake();
      },
    };
  }
}
