// Which one-shot scripts (runScript) run on the demoted workers: those that recently held
// a shared worker for long (see WorkerPool.acquireDemoted and docs/architecture.md).
//
// Why: a worker runs one guest at a time. A script that runs to its CPU limit (a loop, a
// log flood) or past it (a native hog, stopped by terminating its worker) holds its worker
// and a core for 100 ms or more, while ordinary scripts need a few ms. The line of one-shot
// runs (host/run-admission.ts) keeps new runs away from a held worker, but with one shared
// worker per core, a few such scripts at once hold every worker: ordinary runs then wait in
// line for the hostile ones (p99 ~6-8x its level without them in the mixed-tenancy bench).
// An embedder running strangers' scripts sees the same script again and again, so what a
// script did last time is the best guess of what it will do next: its next runs go to
// workers of their own whose threads run at the lowest OS priority. There they take only
// the CPU nobody else wants, and hold up only each other.
//
// A script is known by a digest of its source text (not the text: a record of 10 MB
// scripts would otherwise keep them all). Changing the text escapes the record; each new
// text then costs what it cost before the record existed, once.
import { createHash } from "node:crypto";

/** A run that used this much guest CPU time held its worker for long (ordinary runs take a few ms). */
export const HELD_WORKER_CPU_MS = 50;
/** How long a script stays demoted after its last offence. */
export const DEMOTED_FOR_MS = 60_000;
/** Scripts remembered at most (the least recently offending are forgotten first). */
const MAX_RECORDED_SCRIPTS = 4096;

export class RunDemotion {
  /** Digest → when its demotion ends (ms, performance.now()); in order of last offence. */
  private readonly demotedUntil = new Map<string, number>();

  /** `onDemoted`: a script was demoted (again); runs of it waiting in line may leave it. */
  constructor(
    private readonly onDemoted: () => void = () => undefined,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The key a script is recorded under. */
  static keyOf(source: string): string {
    return createHash("sha256").update(source).digest("base64");
  }

  /** Whether the script's runs go to the demoted workers now. */
  isDemoted(key: string): boolean {
    const until = this.demotedUntil.get(key);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.demotedUntil.delete(key);
    return false;
  }

  /** Records a run's outcome: one that reached its CPU limit or held its worker for long demotes its script. */
  recordRun(key: string, outcome: { cpuLimitReached: boolean; cpuTimeMs: number }): void {
    if (outcome.cpuLimitReached || outcome.cpuTimeMs >= HELD_WORKER_CPU_MS) this.recordHeld(key);
  }

  /**
   * A run of the script holds its worker for long, as seen by the watchdog while it runs:
   * runs of the same script still waiting in line go apart at once, not after it ends.
   */
  recordHeld(key: string): void {
    // Deleted first so the map's order stays the order of last offence.
    this.demotedUntil.delete(key);
    this.demotedUntil.set(key, this.now() + DEMOTED_FOR_MS);
    if (this.demotedUntil.size > MAX_RECORDED_SCRIPTS) this.demotedUntil.delete(this.demotedUntil.keys().next().value!);
    this.onDemoted();
  }

  /** Scripts demoted now (for poolStats). */
  get count(): number {
    const now = this.now();
    let count = 0;
    for (const until of this.demotedUntil.values()) if (until > now) count++;
    return count;
  }
}
