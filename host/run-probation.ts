// Which one-shot scripts (runScript) are new to the pool: their runs go to the probation
// workers first (see WorkerPool.acquireProbation and docs/architecture.md, "Probation").
//
// Why: demotion (host/run-demotion.ts) sends a script that held a shared worker to the
// demoted workers, but only from its second run on: the first is seen only once it has
// held its worker for 25-50 ms of CPU. A native hog that builds a 16 MB string at its top
// level holds the worker ~95 ms that no interrupt shortens, and every run queued there,
// or started there and waiting on a timer, waits with it. In the mixed-tenancy bench the
// first runs of three hostile scripts, among the opening burst of 50, were the whole tail
// (ordinary p99 ~250-400 ms against ~100-130 without them). A script that has run here
// before, and was not demoted, is the best guess of an ordinary one; a script never seen
// is not known to be anything. So runs of scripts new to the pool wait in a line of their
// own, served first by workers of their own (at normal priority: a new script is not
// suspect, only unknown), and by the shared workers only when no known run waits for
// them. Known runs never wait behind a new script's run; new scripts still get every
// worker when the pool is not busy (a service whose every script is new loses nothing).
//
// A script is known by the same key as demotion: its tenant, or a digest of its text.

/** Scripts remembered as known at most (the least recently run are forgotten first: they are new again). */
const MAX_KNOWN_SCRIPTS = 4096;

export class KnownScripts {
  /** Keys whose runs ended here without the script being demoted; in order of last run. */
  private readonly known = new Set<string>();
  /** Runs of each new key waiting in the probation line (to let them out once the key is known). */
  private readonly waiting = new Map<string, number>();

  /** `onKnown`: a key with runs waiting in the probation line is now known; they may leave it for the ordinary line. */
  constructor(
    private readonly onKnown: () => void = () => undefined,
    private readonly capacity = MAX_KNOWN_SCRIPTS,
  ) {}

  has(key: string): boolean {
    return this.known.has(key);
  }

  /** A run of the script ended here and the script is not demoted: its later runs are ordinary. */
  noteRan(key: string): void {
    const wasKnown = this.known.delete(key);
    // Deleted first so the set's order stays the order of last run.
    this.known.add(key);
    if (this.known.size > this.capacity) this.known.delete(this.known.values().next().value!);
    if (!wasKnown && (this.waiting.get(key) ?? 0) > 0) this.onKnown();
  }

  /** The script was demoted: it is no longer known (when its demotion ends, its next run is on probation again). */
  forget(key: string): void {
    this.known.delete(key);
  }

  /** A run of `key` waits in the probation line; call the result once it no longer does. */
  waits(key: string): () => void {
    this.waiting.set(key, (this.waiting.get(key) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = this.waiting.get(key)! - 1;
      if (left === 0) this.waiting.delete(key);
      else this.waiting.set(key, left);
    };
  }

  get size(): number {
    return this.known.size;
  }
}
