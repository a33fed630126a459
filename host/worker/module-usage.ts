// Which guest modules recent runs in this worker loaded, so that spare realms can load the
// popular ones while the worker is idle instead of at the start of the next run (a script
// that touches fetch otherwise pays for loading the web and http modules: ~25-35 ms the
// first time in a worker, when they are compiled, ~1-2 ms from their bytecode after that).
//
// Only modules that read nothing from the sandbox's configuration when they load are ever
// preloaded: a pooled realm may later serve another sandbox, so `runtime` (env) and
// `cloud` (the cloud settings) must load in the sandbox that uses them.
const PRELOADABLE = new Set(["console", "timers", "crypto", "inspect", "marshal", "web", "http"]);
const WINDOW = 20;

export class ModuleUsage {
  private readonly recent: string[][] = [];

  record(loaded: Iterable<string>): void {
    this.recent.push([...loaded].filter((name) => PRELOADABLE.has(name)));
    if (this.recent.length > WINDOW) this.recent.shift();
  }

  /** A list of modules as one comparable string (which modules a memory image holds). */
  static key(modules: readonly string[]): string {
    return [...modules].sort().join(",");
  }

  /** Modules at least half of the recent runs loaded (dependencies load with them). */
  popular(): string[] {
    if (this.recent.length === 0) return [];
    const counts = new Map<string, number>();
    for (const run of this.recent) for (const name of run) counts.set(name, (counts.get(name) ?? 0) + 1);
    return [...counts].filter(([, count]) => count * 2 >= this.recent.length).map(([name]) => name);
  }
}
