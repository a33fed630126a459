// A bounded set of dedicated workers, one sandbox each (`isolate: true`): at most `max()`
// alive; beyond that a request waits, first come first served, for the next one released.
// Released workers are kept idle for the next request (a new thread costs its start-up
// and warm-up), up to `maxIdle()` of them. The pool keeps two such sets: the isolated
// workers, and the demoted isolated workers at the lowest OS priority (host/pool.ts).

/** What this set needs of a worker connection (host/pool.ts's WorkerConnection). */
export interface DedicatedWorker {
  readonly lost: unknown;
  sandboxCount: number;
  terminate(): void;
}

interface Waiter<W> {
  resolve(worker: W): void;
}

export class DedicatedWorkers<W extends DedicatedWorker> {
  /** Alive: serving a sandbox or idle. */
  private aliveCount = 0;
  private readonly idle: W[] = [];
  private readonly waiters: Waiter<W>[] = [];

  constructor(
    /** Starts a new worker (the pool adds it to its own bookkeeping). */
    private readonly start: () => W,
    private readonly max: () => number,
    private readonly maxIdle: () => number,
  ) {}

  get alive(): number {
    return this.aliveCount;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * A worker for one sandbox: an idle one, a new one while fewer than max() are alive, or
   * (beyond that) the first one released. `cancel` gives up the wait (the sandbox was
   * disposed before it got a worker).
   */
  acquire(): { connection: Promise<W>; cancel(): void } {
    const waiter: Waiter<W> = { resolve: () => undefined };
    const connection = new Promise<W>((resolve) => {
      waiter.resolve = (worker) => {
        worker.sandboxCount++;
        resolve(worker);
      };
    });
    this.waiters.push(waiter);
    this.wake();
    return {
      connection,
      cancel: () => {
        const index = this.waiters.indexOf(waiter);
        if (index !== -1) this.waiters.splice(index, 1);
      },
    };
  }

  /** Gives workers to waiting requests while there are idle ones or room for new ones. */
  wake(): void {
    while (this.waiters.length > 0) {
      let worker = this.idle.pop();
      while (worker?.lost) worker = this.idle.pop();
      if (!worker) {
        if (this.aliveCount >= this.max()) return;
        worker = this.start();
        this.aliveCount++;
      }
      this.waiters.shift()!.resolve(worker);
    }
  }

  /** Its sandbox is gone: the next waiter gets it, or it idles, or it ends. */
  release(worker: W): void {
    if (this.waiters.length > 0) this.waiters.shift()!.resolve(worker);
    else if (this.idle.length < this.maxIdle()) this.idle.push(worker);
    else worker.terminate();
  }

  /** The worker is gone (lost or terminated): its place goes to a waiter. */
  forget(worker: W): void {
    this.aliveCount--;
    const index = this.idle.indexOf(worker);
    if (index !== -1) this.idle.splice(index, 1);
    this.wake();
  }

  /** Ends idle workers beyond maxIdle() (a smaller pool was configured). */
  trimIdle(): void {
    while (this.idle.length > this.maxIdle()) this.idle.shift()!.terminate();
  }

  /** Forgets every worker (the pool terminates them). */
  clear(): void {
    this.idle.length = 0;
    this.aliveCount = 0;
  }
}
