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
// them. For its first PROBATION_MAX_WAIT_MS, a new script's run never goes before a known
// one in line (placed on a shared worker while no known run waited, it can still hold the
// runs sent there after it); new scripts still get every worker when the pool is not busy
// (a service whose every script is new has one worker more, though a third thread on two
// cores drains a stream of new scripts ~5-10% later than with probation off);
// and a new script's run that has waited PROBATION_MAX_WAIT_MS joins the ordinary line
// where it would be had it waited there from the start, in order of arrival among the
// known runs (WorkerPool.wakeLines, RunAdmission.admit): from then on probation neither
// helps nor costs it.
//
// A script is known by the same key as demotion: its tenant, or a digest of its text.
// Probation judges a key by one run, so an input-dependent script (or a tenant whose first
// script is harmless) passes it: its next offence is demotion's to handle, as before.

/** Scripts remembered as known at most (the least recently run are forgotten first: they are new again). */
const MAX_KNOWN_SCRIPTS = 4096;

export class KnownScripts {
  /** Keys whose runs ended here without the script being demoted; in order of last run. */
  private readonly known = new Set<string>();

  /** `onKnown`: a key is known now (its runs waiting in the probation line may leave it for the ordinary line). */
  constructor(
    private readonly onKnown: (key: string) => void = () => undefined,
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
    if (!wasKnown) this.onKnown(key);
  }

  /** The script was demoted: it is no longer known (when its demotion ends, its next run is on probation again). */
  forget(key: string): void {
    this.known.delete(key);
  }


  get size(): number {
    return this.known.size;
  }
}

/**
 * How long a new script's run waits in the probation line (in all, across returns to it)
 * before it joins the ordinary line, in order of arrival (behind the known runs that
 * arrived before it, before those that came after): the bound on what probation costs a
 * new script (one probation worker, held by another newcomer, would otherwise make it wait
 * for as long as known runs keep coming: found by review). Only runs that waited that long
 * leave, one each (a first version let the whole line go once its first run was late:
 * found by a second review), and they no longer go ahead of every known run (under a
 * steady stream of new scripts, each waited its second and then went before all known
 * runs: known runs unanswered for over 60 s, found by a hostile test).
 */
export const PROBATION_MAX_WAIT_MS = 1_000;
