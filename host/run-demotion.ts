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
// A script is known by the `tenant` its runScript call names (every script of that tenant
// together: the tenant is the unit of trust, and a changed text escapes nothing), or else
// by a digest of its source text (not the text: a record of 10 MB scripts would otherwise
// keep them all). Without a tenant, changing the text escapes the record; each new text
// then costs what it cost before the record existed, once. An offence is what a run did
// to its worker, in one go, not how it ended or what it used in all: a run stopped at a
// 5 ms CPU limit held nothing up, and neither did 20 timer callbacks of 4 ms each.
import { createHash } from "node:crypto";

/** A guest entry that used this much CPU time held its worker for long (ordinary runs take a few ms in all). */
export const HELD_WORKER_CPU_MS = 50;
/**
 * The same while other runs wait for that worker (queued there, or in the embedder's lines
 * for a shared or probation worker, or isolated sandboxes waiting for an isolated worker):
 * each ms it holds the worker then is a ms they wait. Half of
 * HELD_WORKER_CPU_MS: in the mixed-tenancy bench the three hostile scripts new to the pool
 * each held a shared worker for 75-100 ms of wall time (50 ms of CPU, on cores shared
 * with the other threads) before they were seen, in the burst where the ordinary runs
 * queued behind them made the tail.
 */
export const HELD_CONTENDED_WORKER_CPU_MS = 25;
/** How long a script stays demoted after its last offence, by default (PoolOptions.demotionMs). */
export const DEMOTED_FOR_MS = 60_000;
/** Scripts remembered at most (the least recently offending are forgotten first). */
const MAX_RECORDED_SCRIPTS = 4096;

export class RunDemotion {
  /** Key → when its demotion ends (ms, `now()`); in order of last offence. */
  private readonly demotedUntil = new Map<string, number>();

  /**
   * `demotedForMs`: how long an offence demotes (read at each offence). `onDemoted`: a
   * script that was not demoted now is; runs of it waiting in line may leave it.
   */
  constructor(
    private readonly demotedForMs: () => number = () => DEMOTED_FOR_MS,
    private readonly onDemoted: () => void = () => undefined,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The key a one-shot run is recorded under: its tenant's, else its source text's. */
  static keyOf(source: string, tenant?: string): string {
    if (tenant !== undefined) return `tenant:${tenant}`;
    return `source:${createHash("sha256").update(source).digest("base64")}`;
  }

  /** Whether the script's runs go to the demoted workers now. */
  isDemoted(key: string): boolean {
    const until = this.demotedUntil.get(key);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.demotedUntil.delete(key);
    return false;
  }

  /**
   * A run of the script held its worker for long: the watchdog saw one guest entry use
   * HELD_WORKER_CPU_MS (HELD_CONTENDED_WORKER_CPU_MS while others wait for the worker) of
   * the worker thread's CPU time and still run (so runs of the same
   * script still waiting go apart at once), or its guest was hard-stopped. Only the
   * thread's own CPU clock decides: the guard's charge per entry (wall time minus waits
   * for a CPU) also counts time the thread stalled in the kernel, and a light tenant
   * charged 84-286 ms that way, next to a hostile one churning memory on a busy machine,
   * was demoted (found by review).
   */
  recordHeld(key: string): void {
    const wasDemoted = this.isDemoted(key);
    // Deleted first so the map's order stays the order of last offence.
    this.demotedUntil.delete(key);
    this.demotedUntil.set(key, this.now() + this.demotedForMs());
    if (this.demotedUntil.size > MAX_RECORDED_SCRIPTS) this.demotedUntil.delete(this.demotedUntil.keys().next().value!);
    // Only a new demotion can release waiting runs (the line is scanned for them).
    if (!wasDemoted) this.onDemoted();
  }

  /** Scripts demoted now (for poolStats). */
  get count(): number {
    const now = this.now();
    let count = 0;
    for (const until of this.demotedUntil.values()) if (until > now) count++;
    return count;
  }
}
