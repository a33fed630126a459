// The embedder's side of the worker threads: a small shared pool in which sandboxes live,
// plus a bounded pool of dedicated workers for `isolate: true` sandboxes.
//
// Why workers: deep recursion or nested parsing inside QuickJS overflows the embedder's
// native stack and poisons the runtime on the main thread, and terminating a worker is the
// only hard stop for native builtins that ignore QuickJS's interrupt (DESIGN.md). The
// watchdog below reads each worker's current guest deadline from shared memory and
// terminates a worker whose guest has used more CPU than that deadline allowed.
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { availableParallelism } from "node:os";
import { randomFill } from "node:crypto";
import { performance } from "node:perf_hooks";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { compiledEngineModule } from "./engine/wasm-binary.js";
import { CALL_POLL_MS, readCallAnswerMessage, requestMessage, type ActivationRequest, type WorkerInit, type WorkerMessage, type WorkerModules, type WorkerRequest } from "./protocol.js";
import type { LogEntry } from "./types.js";
import { WATCHDOG_BYTES, WATCHDOG_FIELDS, WATCHDOG_REASON } from "./worker/guard.js";
import { ActivationSlots, ACTIVATION_SLOTS_BYTES, NO_SLOT } from "./activation-slots.js";
import { currentThreadClock, threadClock, type ThreadClock } from "./thread-cpu.js";
import { HostCallServer } from "./host-modules/call-server.js";
import { AdaptivePoll } from "./adaptive-poll.js";
import { RunAdmission } from "./run-admission.js";
import { DedicatedWorkers } from "./dedicated-workers.js";
import { DEMOTED_FOR_MS, HELD_CONTENDED_WORKER_CPU_MS, HELD_WORKER_CPU_MS, RunDemotion } from "./run-demotion.js";
import { KnownScripts, PROBATION_MAX_WAIT_MS } from "./run-probation.js";
import { startAtLowestPriority } from "./thread-priority.js";
import { messageOfThrown } from "./thrown-values.js";
import { ThrottledWarning } from "./throttled-warning.js";
import { BURST_EXTRA_MAX } from "./worker/warm-pool.js";
import { describeOption } from "./limits.js";

/** The worker threads' code: one file (scripts/build.mjs bundles the worker's modules), next to this one. */
const WORKER_ENTRY = new URL("./worker/entry.bundle.js", import.meta.url);
let workerEntryFound = false;

/**
 * Throws a clear error when the worker's file is not where this module expects it. That
 * happens when an app bundles scriptbox into its own file (esbuild, webpack, Next.js): this
 * code moves, the worker's file does not. Every worker then failed to start, and each run
 * ended "evicted … safe to retry" after its sixth lost worker (found by a review).
 */
function checkWorkerEntry(): void {
  if (workerEntryFound) return;
  const path = WORKER_ENTRY.protocol === "file:" ? fileURLToPath(WORKER_ENTRY) : null;
  if (path !== null && !existsSync(path)) {
    throw new Error(
      `scriptbox cannot start its worker threads: their code, ${path}, is not there. scriptbox starts them from that file, which ships next to its own code in the installed package; a bundle of your app that includes scriptbox moves its code away from the file. Keep scriptbox out of the bundle (esbuild: --external:scriptbox or --packages=external; webpack: externals; Next.js: serverExternalPackages: ["scriptbox"]).`,
    );
  }
  workerEntryFound = true;
}

/** "onLog threw" warnings, for all sandboxes: at most one a second (see ThrottledWarning). */
const onLogThrew = new ThrottledWarning();

/**
 * How much CPU time past its deadline a guest may spend (in native code that ignores the
 * interrupt) before its worker is terminated. Measured on the worker thread's own CPU
 * clock, so a worker starved by an oversubscribed machine is never mistaken for a stuck
 * one; the interrupt stops JavaScript within a few ms, so only native hogs get here.
 */
export const HARD_STOP_GRACE_CPU_MS = 100;
/**
 * How much CPU a run withdrawn to re-run elsewhere (see withdrawIfEffectFree) may still
 * spend in the guest entry it was withdrawn in (a native call deaf to the interrupt)
 * before its old worker is terminated. Well above the cost of replacing the worker
 * (~40 ms of CPU to start a thread, then an engine): a native call that ends sooner is
 * cheaper to wait for.
 */
export const WITHDRAWN_ENTRY_GRACE_CPU_MS = 250;
/** The same grace where no per-thread CPU clock exists (no /proc): wall time, so generous. */
export const HARD_STOP_GRACE_WALL_MS = 500;
/**
 * Past its wall deadline a thread is terminated only once it has run on (see checkDeadline):
 * one starved of CPU is not stuck. This long past the deadline it is terminated whatever
 * its CPU clock says (a thread that neither runs nor returns: a deadlock, a frozen cgroup).
 */
export const HARD_STOP_BACKSTOP_WALL_MS = 30_000;
const WATCHDOG_INTERVAL_MS = 20;
/**
 * A hostile burst (a log flood, a bridge call echoing 1 MB in a loop) fills a worker's young
 * generation with garbage, and V8 grows it to its default maximum and keeps it: the process
 * RSS stayed 20-30% above its level before the burst, idle for 30 s after. Capped at 8 MiB,
 * it returns to that level once idle (test/tenancy/pool-rss.test.ts).
 */
const WORKER_YOUNG_GENERATION_MB = 8;
const WORKER_STACK_MB = 16;
/**
 * A guest entry running longer than this holds up every run queued behind it on its
 * worker: runs that have not started yet may then move to a worker with less queued work
 * (see WorkerConnection.movable). Ordinary runs take a few ms; a loop runs to its limit.
 */
const MOVE_QUEUED_AFTER_MS = 20;
/** An overflow worker without sandboxes ends after this long (a hold that comes back soon finds it started). */
const OVERFLOW_IDLE_MS = 5_000;
/**
 * A demoted worker keeps at most one sandbox warm and no burst's engines
 * (WorkerInit.warmPool): it serves few runs, one after another, and starts at the lowest
 * priority.
 */
const DEMOTED_WARM_SANDBOXES_MAX = 1;
/** Dedicated demoted workers kept idle for the next isolated run of a demoted script. */
const DEMOTED_IDLE_ISOLATED_WORKERS = 1;
/** Whether this platform gives each thread's CPU time (Linux /proc): demotion needs it (WorkerPool.demotionOn). */
const THREAD_CPU_CLOCK = (() => {
  const clock = currentThreadClock();
  clock.close();
  return clock.isCpu;
})();

/**
 * Makes sure libuv's thread pool, which the whole process shares, was started by this
 * thread. Threads inherit the nice value of the thread that creates them, and the pool
 * starts at the first work queued from any thread: a demoted worker's fetch (dns.lookup)
 * could otherwise start it at the lowest priority, for the embedder's fs, dns and crypto
 * work too, for good (found by review). One byte of randomFill queues work on the pool;
 * done before every demoted worker starts (after the first, it costs that byte only).
 */
function startThreadPoolHere(): void {
  randomFill(new Uint8Array(1), () => undefined);
}

/** Sizes of the worker pools (see configurePool and docs/architecture.md, "Tenancy"). */
export interface PoolOptions {
  /** Workers shared by ordinary sandboxes. Default: one per core, at most 4. */
  sharedWorkers: number;
  /** Ready sandboxes each shared worker keeps built ahead of requests. Default 3. */
  warmSandboxesPerWorker: number;
  /** Dedicated workers for `isolate: true` sandboxes alive at once; more wait for one. Default: 2 per core, at most 16. */
  maxIsolatedWorkers: number;
  /** Dedicated workers kept idle for the next isolated sandbox (instead of a new thread each). Default 2. */
  idleIsolatedWorkers: number;
  /**
   * One-shot runs (runScript) sent to a shared worker and not started there, at most;
   * more wait in the embedder, first come first served (host/run-admission.ts). 0: no
   * limit (each is placed at once). Default 4.
   */
  queuedRunsPerWorker: number;
  /**
   * Workers, at the lowest OS priority, for one-shot runs of scripts that recently held a
   * shared worker for long (host/run-demotion.ts). 0: no demotion. Default: one per core, at most 4.
   */
  demotedWorkers: number;
  /** How long a script stays demoted after its last offence, in ms. Default 60,000. */
  demotionMs: number;
  /**
   * Extra shared workers started, at most this many at a time, while every shared worker
   * is held by a guest (one entry running for 20 ms or more): `createSandbox` sandboxes
   * created then, and runs moving off a held worker, go there instead of queueing behind
   * a guest that may run to its CPU limit. More threads than cores lets the OS share the
   * cores between the guests that hold them and the ones waiting. Each ends 5 s after its
   * last sandbox is released. 0: none (runs wait for a held worker). Default: one per
   * core, at most 4.
   */
  overflowWorkers: number;
  /**
   * Workers, at normal priority, that take the one-shot runs of scripts new to the pool
   * first (host/run-probation.ts), so that known runs never wait behind them. 0: new
   * scripts go to the shared workers like any. Needs demotion (demotedWorkers > 0 and a
   * per-thread CPU clock: Linux) and the line (queuedRunsPerWorker > 0). Default 1.
   */
  probationWorkers: number;
}

export function defaultPoolOptions(): PoolOptions {
  const cores = availableParallelism();
  return {
    sharedWorkers: Math.max(1, Math.min(4, cores)),
    warmSandboxesPerWorker: 3,
    maxIsolatedWorkers: Math.max(2, Math.min(16, 2 * cores)),
    idleIsolatedWorkers: 2,
    queuedRunsPerWorker: 4,
    demotedWorkers: Math.max(1, Math.min(4, cores)),
    demotionMs: DEMOTED_FOR_MS,
    probationWorkers: 1,
    overflowWorkers: Math.max(1, Math.min(4, cores)),
  };
}

const POOL_BOUNDS: Record<keyof PoolOptions, [number, number]> = {
  sharedWorkers: [1, 64],
  warmSandboxesPerWorker: [0, 64],
  maxIsolatedWorkers: [1, 1024],
  idleIsolatedWorkers: [0, 1024],
  queuedRunsPerWorker: [0, 1024],
  demotedWorkers: [0, 64],
  demotionMs: [1, 86_400_000],
  probationWorkers: [0, 16],
  overflowWorkers: [0, 64],
};

export function resolvePoolOptions(input: unknown, base: PoolOptions): PoolOptions {
  if (typeof input !== "object" || input === null || Array.isArray(input)) throw new TypeError("pool options must be an object");
  const options = { ...base };
  for (const key of Object.keys(input)) {
    if (!Object.hasOwn(POOL_BOUNDS, key)) throw new TypeError(`unknown pool option "${key}" (known: ${Object.keys(POOL_BOUNDS).join(", ")})`);
    const value = (input as Record<string, unknown>)[key];
    const [min, max] = POOL_BOUNDS[key as keyof PoolOptions];
    if (typeof value !== "number") throw new TypeError(`pool option ${key} must be an integer from ${min} to ${max}, got ${describeOption(value)}`);
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new RangeError(`pool option ${key} must be an integer from ${min} to ${max}, got ${String(value)}`);
    }
    options[key as keyof PoolOptions] = value;
  }
  return options;
}

export class WorkerLostError extends Error {
  constructor(
    message: string,
    /** The sandbox whose runaway guest made the watchdog terminate the worker, if any. */
    readonly stoppedSandboxId: number | null,
    readonly stopReason: "cpu" | "timeout" | null,
    /**
     * Whether the watchdog terminated the worker to end a guest stuck in a native call (a
     * runaway, or a withdrawn attempt): the activations there that had not started lost
     * only their place (not a crash, not a shutdown).
     */
    readonly byWatchdog = false,
    /**
     * For the runaway: the CPU time its stuck guest entry had used (the thread's clock,
     * from the entry's start; null without a per-thread clock), and the wall deadline the
     * entry ran under (epoch ms), from which its activation's start is known.
     */
    readonly stopped: { cpuLeftMs: number | null; wallDeadlineEpochMs: number } | null = null,
  ) {
    super(message);
    this.name = "WorkerLostError";
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  /** Runs, loads and calls: counted in `activations`, with a shared slot given back on reply. */
  activation: boolean;
  slot: number;
}

/** What a sandbox proxy hears from the watchdog about a guest entry of its own that holds the worker (onHeld). */
export interface HeldListener {
  /** Once per entry: it has used HELD_WORKER_CPU_MS (HELD_CONTENDED_WORKER_CPU_MS while others wait) and still runs. */
  held(): void;
  /**
   * At every watchdog tick from then on (the first included) while the same entry runs
   * and its activation is within its deadlines, with the CPU time the entry has used so
   * far (WatchedEntry.heldFromNs) and the CPU time left in the activation's budget (null
   * where unknown: no per-thread clock).
   */
  stillHeld(entryCpuMs: number, cpuLeftMs: number | null): void;
}

/** What the watchdog knows of the guest entry it is watching. */
interface WatchedEntry {
  /** ENTRY of the watchdog slot: it names one guest entry (odd while it runs). */
  entry: number;
  /** When the watchdog first saw this entry. */
  seenAt: number;
  /** Its sandbox was told the entry held the worker for long (onHeld); which sandbox. */
  heldReported: boolean;
  heldBy?: number;
  /**
   * The thread's clock when the entry began (ENTRY_CPU_NS, written by the worker), or when
   * the watchdog first saw it where there is none: a hold is measured from there. From
   * the first sighting, a loop was seen holding its worker up to a tick later, and every
   * run behind it waited that much more (mixed-tenancy bench: ordinary p99 ~5% lower).
   */
  heldFromNs: number;
  /** The worker thread's clock when the watchdog first saw the entry past its wall deadline. */
  clockPastWallDeadlineNs?: number;
}

export class WorkerConnection {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly watchdog: Float64Array;
  readonly slots: ActivationSlots;
  /** Slots of activations in flight (see stop). */
  private readonly liveSlots = new Set<number>();
  /**
   * The ones that came through the line of one-shot runs: only they count against its room
   * (roomForRuns). Counting the runs and calls of createSandbox sandboxes too, which never
   * wait in line, let a service keeping 4 of them queued on every worker hold runScript in
   * line for seconds (found by review).
   */
  private readonly lineSlots = new Set<number>();
  /** The worker thread's CPU clock once it told its id; wall time until then or off Linux. */
  private clock: ThreadClock = threadClock(null);
  private watched: WatchedEntry | null = null;
  /** Polls for plugin-call replies while that pays (see CALL_POLL_MS). */
  private readonly callReplies = new AdaptivePoll(CALL_POLL_MS);
  /** Whether the worker was asked to poll after the last call sent here (then it usually awaits this one). */
  private lastCallReplyPolled = false;
  private readonly pending = new Map<number, Pending>();
  private readonly logListeners = new Map<number, (entry: LogEntry) => void>();
  private readonly disposeListeners = new Map<number, (reason: string) => void>();
  private readonly heldListeners = new Map<number, HeldListener>();
  /**
   * The guest entry of a run withdrawn from here while it ran (withdrawIfEffectFree), with
   * the thread's CPU clock then: if that entry runs on past WITHDRAWN_ENTRY_GRACE_CPU_MS (a
   * native call that ignores the interrupt), the worker is terminated then (checkDeadline),
   * not at the run's CPU limit: the run already runs again elsewhere.
   */
  private withdrawnEntry: { entry: number; sandboxId: number; slot: number; clockNs: number } | null = null;
  /**
   * Sandboxes made with createSandbox living here (Sandbox registers them): they keep
   * state (plugins) in the worker, which terminating it for a withdrawn entry would lose.
   */
  readonly statefulSandboxIds = new Set<number>();

  get statefulSandboxes(): number {
    return this.statefulSandboxIds.size;
  }

  /**
   * Runs from the line that picked this worker (acquireShared) and are not sent yet (each
   * send from the line takes one off). A picked run released unsent leaves one behind, so
   * the count is read no higher than the one-shot sandboxes still here (linePicksUnsent).
   */
  linePicks = 0;

  linePicksUnsent(): number {
    this.linePicks = Math.min(this.linePicks, Math.max(0, this.sandboxCount - this.statefulSandboxes));
    return this.linePicks;
  }

  /**
   * Whether a createSandbox sandbox's guest holds this worker (isHeld): never demoted nor
   * moved (its state lives here), so the line of one-shot runs may go to an overflow
   * worker past it (WorkerPool.lineRoom).
   */
  heldByStateful(nowEpochMs: number): boolean {
    return this.isHeld(nowEpochMs) && this.statefulSandboxIds.has(this.watchdog[WATCHDOG_FIELDS.sandboxId]!);
  }
  private nextId = 1;
  /** Runs, loads and calls sent and not answered yet: the queue placement compares. */
  activations = 0;
  /**
   * Activations that could move to another worker while still queued here (one-shot runs
   * of sandboxes that hold no state in this worker); each callback tries to withdraw its
   * run and send it elsewhere. Registered and removed by host/sandbox.ts.
   */
  /** Queued runs that may move (Sandbox#movableWhileQueued), told where there is room: `roomForOneShot` is where a one-shot run's line could send it. */
  readonly movable = new Set<(roomElsewhere: boolean, roomForOneShot: boolean) => void>();
  sandboxCount = 0;
  lost: WorkerLostError | null = null;
  /** Runs the host functions this worker's guests call (host modules). */
  readonly hostCalls = new HostCallServer();
  /** Settles once the worker has warmed its engine up (or is lost): see warmPool. */
  readonly ready: Promise<void>;
  private markReady!: () => void;
  /** The worker said it is ready (its engine warmed up). */
  private warm = false;
  /** Someone waits for `ready` (keepAliveUntilReady). */
  private holdUntilReady = false;
  /** The pool stopped it (terminate): not a failure of the thread. */
  private terminated = false;

  /**
   * `demoted`: a shared worker for the runs of demoted scripts (WorkerPool.acquireDemoted);
   * its thread runs at the lowest OS priority. `probation`: a shared worker for the runs of
   * scripts new to the pool (WorkerPool.acquireProbation).
   */
  constructor(
    private readonly pool: WorkerPool,
    readonly dedicated: boolean,
    warmPool: WorkerInit["warmPool"],
    readonly demoted = false,
    readonly probation = false,
  ) {
    this.ready = new Promise<void>((resolve) => (this.markReady = resolve));
    const watchdog = new SharedArrayBuffer(WATCHDOG_BYTES);
    this.watchdog = new Float64Array(watchdog);
    const activationSlots = new SharedArrayBuffer(ACTIVATION_SLOTS_BYTES);
    this.slots = new ActivationSlots(activationSlots);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const init: WorkerInit = { port: port2, watchdog, activationSlots, warmPool, lowPriority: demoted };
    if (demoted) startThreadPoolHere();
    // One file (scripts/build.mjs bundles the worker's ~60 modules): loading them one by one cost ~100 ms.
    const startWorker = () =>
      new Worker(WORKER_ENTRY, {
        workerData: init,
        transferList: [port2],
        resourceLimits: { stackSizeMb: WORKER_STACK_MB, maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
        // Not the embedder's Node flags: `node --input-type=module -e …`, for one, makes a
        // worker started from a file fail.
        execArgv: [],
      });
    // A demoted worker's thread runs at the lowest priority from its start (host/thread-priority.ts).
    this.worker = demoted ? startAtLowestPriority(startWorker) : startWorker();
    // Compiled (once per process) while the new thread starts, then sent first.
    const modules: WorkerModules = { wasmModules: { release: compiledEngineModule("release") } };
    this.port.postMessage(modules);
    this.port.on("message", (message: WorkerMessage) => this.onMessage(message));
    this.worker.on("error", (error) => this.onLost(new WorkerLostError(`the sandbox worker failed: ${error.message}`, null, null)));
    this.worker.on("exit", (code) => this.onLost(new WorkerLostError(`the sandbox worker exited (code ${code})`, null, null)));
    // An idle worker keeps no process alive, nor does a starting one unless someone waits
    // for it (keepAliveUntilReady: warmPool). Unref'd before on("message"), which refs the
    // port, as it once was, a worker that never served a request kept the process alive
    // for good (a process that called warmPool() and then had nothing to run).
    this.worker.unref();
    this.port.unref();
  }

  request<T>(request: WorkerRequest): Promise<T> {
    return this.send<T>(request, NO_SLOT);
  }

  /**
   * Sends a run, load or call with a shared slot of its own (host/activation-slots.ts):
   * the caller can stop it and learn whether it had effects, even if the worker is lost.
   */
  activate<T>(request: ActivationRequest, fromLine = false): { slot: number; reply: Promise<T> } {
    const slot = this.lost ? NO_SLOT : this.slots.allocate();
    // Slots are given back when the reply settles (or the worker is lost): forgotten then too.
    if (fromLine && slot !== NO_SLOT) this.lineSlots.add(slot);
    if (fromLine && this.linePicks > 0) this.linePicks--;
    return { slot, reply: this.send<T>({ ...request, slot }, slot) };
  }

  /** Asks the worker to end an activation (see ActivationSlots.requestStop); true if it had started. */
  stop(slot: number): boolean {
    // A slot is only touched while its activation is in flight: once answered, it may
    // already belong to another one.
    if (slot === NO_SLOT || this.lost || !this.liveSlots.has(slot)) return true;
    const started = this.slots.requestStop(slot);
    // A guest in a loop sees the shared bit; one waiting on timers or fetches needs a message.
    if (started) this.send({ op: "abort", slot }, NO_SLOT).catch(() => undefined);
    return started;
  }

  /**
   * Withdraws an activation, started or not, that has had no effect outside the sandbox
   * (see ActivationSlots.withdrawIfEffectFree), to run it again elsewhere: the worker ends
   * it as aborted (at the interrupt's next look, or at once if it waits), and nobody reads
   * that answer. False if it had effects, or was already told to stop.
   */
  withdrawIfEffectFree(slot: number, sandboxId: number): boolean {
    if (this.lost || !this.liveSlots.has(slot)) return false;
    // Only while the entry seen holding the worker still runs (HeldListener.stillHeld): one
    // that has just ended may have been the run's last, its outcome on its way.
    const watched = this.watched;
    if (watched === null || watched.heldBy !== sandboxId || this.watchdog[WATCHDOG_FIELDS.entry] !== watched.entry) return false;
    if (!this.slots.withdrawIfEffectFree(slot)) return false;
    // A guest waiting on timers or fetches needs the message; one in a loop sees the bit.
    this.send({ op: "abort", slot }, NO_SLOT).catch(() => undefined);
    // One in a native call that ignores the interrupt may be ended sooner (checkDeadline).
    this.withdrawnEntry = { entry: watched.entry, sandboxId, slot, clockNs: this.clock.nowNs() };
    return true;
  }

  /**
   * Whether runs besides the guest running here wait for this worker: others in flight
   * here (the running one counts itself), or, for a shared (or probation) worker, runs in
   * the embedder's lines for one, for an isolated one, sandboxes waiting for an isolated
   * worker. Such a guest is seen holding the worker sooner (HELD_CONTENDED_WORKER_CPU_MS).
   * In flight means queued here, or started and now waiting on a fetch, timer or host
   * call: its continuation needs the thread too, and waits behind the guest as a queued
   * run does (the answer to its fetch may already be there). A running guest whose
   * activation was told to stop (aborted) no longer counts itself, so it needs two others
   * to count as contended: an edge left as it is (it is ending anyway).
   */
  private othersWait(): boolean {
    if (this.othersInFlight(NO_SLOT) > 1) return true;
    if (this.demoted) return false;
    return this.dedicated ? this.pool.runsWaitForIsolated() : this.pool.runsWaitInLine();
  }

  /**
   * Activations sent here, besides the one in `exceptSlot`, that will still run or answer
   * here: not withdrawn or stopped (a run just moved away still counts in `activations`
   * until the worker, busy with the entry in question, skips it).
   */
  othersInFlight(exceptSlot: number): number {
    let others = this.activations - this.liveSlots.size;
    for (const slot of this.liveSlots) if (slot !== exceptSlot && !this.slots.isStopped(slot)) others++;
    return others;
  }

  /**
   * Whether terminating this worker now would cost the others nothing but being sent
   * again: no sandbox here holds state (plugins), and every activation here besides
   * `exceptSlot` is unstarted (or withdrawn). A started one, even without effects, would
   * lose its progress, stream its logs twice (onLog) or use up a bystander retry.
   */
  private onlyUnstartedRunsBesides(exceptSlot: number): boolean {
    if (this.statefulSandboxes > 0 || this.activations !== this.liveSlots.size) return false;
    for (const slot of this.liveSlots) if (slot !== exceptSlot && !this.slots.isQueued(slot) && !this.slots.isStopped(slot)) return false;
    return true;
  }

  /** Withdraws an activation still queued in the worker (see ActivationSlots.withdrawIfQueued). */
  withdrawIfQueued(slot: number): boolean {
    return !this.lost && this.liveSlots.has(slot) && this.slots.withdrawIfQueued(slot);
  }

  private send<T>(request: WorkerRequest, slot: number): Promise<T> {
    if (this.lost) return Promise.reject(this.lost);
    const id = this.nextId++;
    const isActivation = request.op === "run" || request.op === "load" || request.op === "call";
    const replyPoll = request.op === "call" ? this.callReplies.decide() : "no";
    const promise = new Promise<T>((resolve, reject) => {
      // A pending request keeps the process alive; an idle pool does not.
      if (this.pending.size === 0) {
        this.worker.ref();
        this.port.ref();
      }
      if (isActivation) {
        this.activations++;
        this.liveSlots.add(slot);
      }
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, activation: isActivation, slot });
      this.pool.watch();
      this.port.postMessage(requestMessage(id, request, replyPoll !== "no"));
    });
    if (request.op === "call") this.pollForReply(id, replyPoll);
    return promise;
  }

  /**
   * See CALL_POLL_MS. Messages taken here go through the usual handler. The wait is judged
   * only when the worker was asked to poll after the call before this one: otherwise it was
   * asleep, and its wake-up says nothing of whether polling pays. (Asked, it may still sleep:
   * calls more than 1 ms apart, or its own poll backed off; those waits are judged, and
   * rightly stop polling. See host/adaptive-poll.ts.)
   */
  private pollForReply(id: number, decision: "poll" | "probe" | "no"): void {
    const judged = this.lastCallReplyPolled;
    this.lastCallReplyPolled = decision !== "no";
    this.callReplies.pollAs(
      decision,
      () => {
        const received = receiveMessageOnPort(this.port);
        if (received) this.onMessage(received.message as WorkerMessage);
        return received !== undefined;
      },
      () => this.pending.has(id),
      judged,
    );
  }

  onLog(sandboxId: number, listener: ((entry: LogEntry) => void) | null): void {
    if (listener) this.logListeners.set(sandboxId, listener);
    else this.logListeners.delete(sandboxId);
  }

  /** Tells a sandbox proxy that the worker disposed its sandbox on its own. */
  onDisposed(sandboxId: number, listener: ((reason: string) => void) | null): void {
    if (listener) this.disposeListeners.set(sandboxId, listener);
    else this.disposeListeners.delete(sandboxId);
  }

  /**
   * Tells a sandbox proxy that one of its guest entries has used HELD_WORKER_CPU_MS (or
   * HELD_CONTENDED_WORKER_CPU_MS, see othersWait) of the
   * worker thread's CPU time (wall time without a per-thread clock) and still runs: its
   * script holds the worker (host/run-demotion.ts). See HeldListener.
   */
  onHeld(sandboxId: number, listener: HeldListener | null): void {
    if (listener) this.heldListeners.set(sandboxId, listener);
    else this.heldListeners.delete(sandboxId);
  }

  get busy(): boolean {
    return this.pending.size > 0;
  }

  /**
   * How much work a new sandbox would queue behind here: activations sent and not started
   * yet (each waits behind the ones ahead; one waiting for a timer or a fetch holds nothing
   * up), plus one more for every 10 ms the current guest has been running (a long one
   * holds up everything queued behind it).
   */
  queuedWork(nowEpochMs: number): number {
    // One more while a guest entry runs at all: the watchdog sees an entry only at its next
    // tick (every 20 ms), and until then a busy worker looked as empty as an idle one.
    const running = this.watchdog[WATCHDOG_FIELDS.entry]! % 2 === 1 && this.watchdog[WATCHDOG_FIELDS.sandboxId] !== 0 ? 1 : 0;
    return this.unstartedActivations(this.liveSlots) + running + Math.floor(this.stuckMs(nowEpochMs) / 10);
  }

  /**
   * How many more one-shot runs this worker can take (host/run-admission.ts): none while
   * its current guest has run for MOVE_QUEUED_AFTER_MS or more, else `perWorker` minus the
   * one-shot runs from the line waiting here to start.
   */
  roomForRuns(nowEpochMs: number, perWorker: number): number {
    if (this.lost || this.stuckMs(nowEpochMs) >= MOVE_QUEUED_AFTER_MS) return 0;
    return Math.max(0, perWorker - this.unstartedActivations(this.lineSlots));
  }

  /** Activations among `slots` sent here that the worker has not started (nor been told to skip). */
  private unstartedActivations(slots: Set<number>): number {
    let count = 0;
    for (const slot of slots) if (this.slots.isQueued(slot)) count++;
    return count;
  }

  /** Whether a guest entry has held this worker for MOVE_QUEUED_AFTER_MS or more (a run sent here now would wait for it). */
  isHeld(nowEpochMs: number): boolean {
    return this.lost === null && this.stuckMs(nowEpochMs) >= MOVE_QUEUED_AFTER_MS;
  }

  /** How long the guest entry running now has been seen running (0 when none runs). */
  private stuckMs(nowEpochMs: number): number {
    // `watched` may be left from an entry that has ended since the watchdog last looked
    // (ENTRY has moved on); an entry waiting for a synchronous host call still holds the worker.
    const inGuest = this.watched !== null && this.watchdog[WATCHDOG_FIELDS.entry] === this.watched.entry;
    // Sandbox 0 is the worker's own warm-up: idle work in slices of a few ms, behind any run.
    if (!inGuest || this.watchdog[WATCHDOG_FIELDS.sandboxId] === 0) return 0;
    return nowEpochMs - this.watched!.seenAt;
  }

  private onMessage(received: WorkerMessage): void {
    const message = Array.isArray(received) ? readCallAnswerMessage(received) : received;
    if (message.type === "log") {
      const listener = this.logListeners.get(message.sandboxId);
      if (listener) {
        for (const entry of message.entries) {
          try {
            listener(entry);
          } catch (error) {
            // The embedder's onLog threw: report it without disturbing the run. Whatever it
            // threw (null, a Symbol, a revoked Proxy): this is a port's message handler, where
            // a throw would end the process.
            onLogThrew.emit(`scriptbox: onLog threw: ${messageOfThrown(error, 1024)}`);
          }
        }
      }
      return;
    }
    if (message.type === "thread") {
      this.clock.close();
      this.clock = threadClock(message.threadId);
      this.watched = null;
      return;
    }
    if (message.type === "host-calls") return this.hostCalls.attach(message);
    if (message.type === "ready") {
      this.warm = true;
      this.releaseIfIdle();
      return this.markReady();
    }
    if (message.type === "disposed") {
      this.disposeListeners.get(message.sandboxId)?.(message.reason);
      return;
    }
    if (message.type !== "reply") return;
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.settled(message.id, pending);
    this.releaseIfIdle();
    if (message.ok) pending.resolve(message.value);
    else pending.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
  }

  /** The worker has warmed its engine up: a run sent now starts without waiting for the thread to start. */
  get isReady(): boolean {
    return this.warm && this.lost === null;
  }

  /** It warmed up at some point (lost or not). */
  get wasReady(): boolean {
    return this.warm;
  }

  /**
   * It was lost before it was ready on its own: neither the pool (configurePool, shutdown)
   * nor the watchdog (a guest stuck in a native call) stopped it. A thread that cannot
   * start. Decided when it is lost (a later terminate() does not change it).
   */
  get failedToStart(): boolean {
    return this.lostBeforeReadyOnItsOwn;
  }
  private lostBeforeReadyOnItsOwn = false;

  /** Keeps the process alive until this worker is ready (warmPool awaits `ready`). */
  keepAliveUntilReady(): void {
    if (this.warm || this.lost) return;
    this.holdUntilReady = true;
    this.worker.ref();
    this.port.ref();
  }

  /** Lets the process exit while this worker has no request in flight and nobody waits for its warm-up. */
  private releaseIfIdle(): void {
    if (this.pending.size > 0 || (this.holdUntilReady && !this.warm)) return;
    this.worker.unref();
    this.port.unref();
  }

  private settled(id: number, pending: Pending): void {
    this.pending.delete(id);
    if (pending.activation) {
      this.activations--;
      this.liveSlots.delete(pending.slot);
      this.lineSlots.delete(pending.slot);
      this.slots.release(pending.slot);
      // Room for a one-shot run waiting in the embedder, maybe.
      this.pool.wakeLines();
    }
  }

  /**
   * Called by the pool's watchdog. The guard writes the deadline of the guest entry in
   * progress (epoch ms; 0 when no guest code runs). The first time the watchdog sees an
   * entry it notes the thread's CPU clock and the budget left; it terminates the worker
   * only once the thread has used that budget plus the grace in CPU time. Time the thread
   * spent waiting for a core does not count, so an oversubscribed machine kills nothing.
   */
  checkDeadline(nowEpochMs: number): void {
    if (this.lost) return;
    // One guest entry, told apart by the worker's entry counter (odd while an entry runs):
    // the wall deadline stays the same across an activation's entries, and the CPU
    // deadline also moves within one (after each synchronous host call), which made every
    // such call look like a new entry: runs queued behind a guest making them never moved.
    const entry = this.watchdog[WATCHDOG_FIELDS.entry]!;
    if (this.withdrawnEntry !== null && this.withdrawnEntry.entry !== entry) this.withdrawnEntry = null;
    if (entry % 2 === 0) {
      this.watched = null;
      return;
    }
    if (this.watched === null || this.watched.entry !== entry) {
      const nowNs = this.clock.nowNs();
      const startNs = this.clock.isCpu ? this.watchdog[WATCHDOG_FIELDS.entryCpuNs]! : 0;
      // Still the same entry after reading its start: the start is that entry's.
      const fromStart = startNs > 0 && startNs <= nowNs && this.watchdog[WATCHDOG_FIELDS.entry] === entry;
      this.watched = { entry, seenAt: nowEpochMs, heldFromNs: fromStart ? startNs : nowNs, heldReported: false };
      return;
    }
    // Sandbox 0 is the worker's own warm-up (idle work in slices of a few ms, which a
    // slow machine can stretch past MOVE_QUEUED_AFTER_MS): nothing to move away from.
    const warmingUp = this.watchdog[WATCHDOG_FIELDS.sandboxId] === 0;
    if (!warmingUp && !this.watched.heldReported) {
      const sandboxId = this.watchdog[WATCHDOG_FIELDS.sandboxId]!;
      const usedNs = this.clock.nowNs() - this.watched.heldFromNs;
      // Still the same entry after the clock read: the sandbox id read before it is that
      // entry's, not one of another sandbox begun meanwhile (found by review).
      const heldAfterMs = this.othersWait() ? HELD_CONTENDED_WORKER_CPU_MS : HELD_WORKER_CPU_MS;
      if (usedNs >= heldAfterMs * 1e6 && this.watchdog[WATCHDOG_FIELDS.entry] === entry) {
        this.watched.heldReported = true;
        this.watched.heldBy = sandboxId;
        this.heldListeners.get(sandboxId)?.held();
      }
    }
    if (!warmingUp && nowEpochMs - this.watched.seenAt >= MOVE_QUEUED_AFTER_MS && this.movable.size > 0) {
      // A run of a demoted script moves to a demoted worker even where no other has room.
      const roomElsewhere = this.pool.hasRoomElsewhere(this, nowEpochMs);
      // A one-shot run moves back to its line, which may send it to an overflow worker.
      const roomForOneShot = (roomElsewhere && this.pool.hasRoomElsewhere(this, nowEpochMs, false)) || (!this.dedicated && !this.demoted && !this.probation && this.pool.lineHasOverflowRoom(nowEpochMs));
      for (const move of [...this.movable]) move(roomElsewhere, roomForOneShot);
    }
    if (this.watched.heldBy !== undefined) {
      // Not once past a deadline (the hard stop's to decide), nor past the CPU budget.
      const wallDeadline = this.watchdog[WATCHDOG_FIELDS.deadline]!;
      const cpuDeadlineNs = this.watchdog[WATCHDOG_FIELDS.cpuDeadlineNs]!;
      const nowNs = this.clock.nowNs();
      const cpuLeftMs = cpuDeadlineNs > 0 && this.clock.isCpu ? (cpuDeadlineNs - nowNs) / 1e6 : null;
      if ((wallDeadline === 0 || nowEpochMs <= wallDeadline) && (cpuLeftMs === null || cpuLeftMs > 0)) {
        this.heldListeners.get(this.watched.heldBy)?.stillHeld((nowNs - this.watched.heldFromNs) / 1e6, cpuLeftMs);
      }
    }
    if (this.lost) return;
    const withdrawn = this.withdrawnEntry;
    if (
      withdrawn !== null &&
      this.clock.nowNs() - withdrawn.clockNs > WITHDRAWN_ENTRY_GRACE_CPU_MS * 1e6 &&
      this.watchdog[WATCHDOG_FIELDS.entry] === entry &&
      this.pool.othersWaitOn(this, withdrawn.slot) &&
      this.onlyUnstartedRunsBesides(withdrawn.slot)
    ) {
      // Withdrawn and running again elsewhere, but stuck in a native call here: the others
      // on this worker would wait for it to return, or to its CPU limit. Terminated only
      // where that costs them nothing but being sent again to a fresh worker (the withdrawn
      // attempt's answer is dropped, so ending it loses nothing either); otherwise it runs
      // on, as any guest, to its end or its own hard stop. No sandbox is blamed: the
      // withdrawn one has left (its re-run, were it back here, is a bystander like any).
      this.withdrawnEntry = null;
      this.pool.noteHardStop();
      this.onLost(new WorkerLostError(`the worker was terminated to stop sandbox ${withdrawn.sandboxId}'s withdrawn attempt, stuck in a native call`, null, null, true));
      void this.worker.terminate();
      return;
    }
    // DEADLINE is 0 while the entry waits for a synchronous host call: that wait is not
    // watched for a hard stop (the waiter bounds it by the wall deadline itself).
    const deadline = this.watchdog[WATCHDOG_FIELDS.deadline]!;
    if (deadline === 0) return;
    const cpuDeadlineNs = this.watchdog[WATCHDOG_FIELDS.cpuDeadlineNs]!;
    let reason: "cpu" | "timeout" = this.watchdog[WATCHDOG_FIELDS.reason] === WATCHDOG_REASON.timeout ? "timeout" : "cpu";
    if (this.clock.isCpu && nowEpochMs > deadline) this.watched.clockPastWallDeadlineNs ??= this.clock.nowNs();
    if (nowEpochMs <= deadline + HARD_STOP_GRACE_WALL_MS) {
      // The CPU limit, on the worker thread's own CPU clock (WatchdogSlot in
      // host/worker/guard.ts): a thread starved by a busy machine is not a spinning one.
      // Without a per-thread clock the worker wrote the sooner of both deadlines as wall
      // time into DEADLINE, and the check above is the whole watchdog.
      if (cpuDeadlineNs === 0 || !this.clock.isCpu) return;
      if (this.clock.nowNs() <= cpuDeadlineNs + HARD_STOP_GRACE_CPU_MS * 1e6) return;
      reason = "cpu";
    } else if (
      this.clock.isCpu &&
      nowEpochMs <= deadline + HARD_STOP_BACKSTOP_WALL_MS &&
      this.clock.nowNs() - this.watched.clockPastWallDeadlineNs! < HARD_STOP_GRACE_CPU_MS * 1e6
    ) {
      // Past the wall deadline and its grace, but stuck only if the thread ran on since the
      // watchdog first saw it past the deadline. A thread starved of CPU (a demoted worker
      // at the lowest priority on a busy machine) is not stuck: the interrupt ends its guest
      // as soon as it runs. Terminating it cost every run queued there (found by review).
      // Up to the backstop: a thread that neither runs nor returns is stuck after all.
      return;
    }
    const sandboxId = this.watchdog[WATCHDOG_FIELDS.sandboxId]!;
    // Still the same entry: the sandbox blamed (and demoted) is the one that ran it.
    if (this.watchdog[WATCHDOG_FIELDS.entry] !== entry) return;
    this.pool.noteHardStop();
    // The CPU budget left to the activation (negative past it): its CPU deadline is the
    // thread's clock at an entry plus the budget left then, so the run's CPU time is its
    // limit minus this (all its entries, not only the stuck one).
    const cpuLeftMs = this.clock.isCpu && cpuDeadlineNs > 0 ? (cpuDeadlineNs - this.clock.nowNs()) / 1e6 : null;
    const stopped = { cpuLeftMs, wallDeadlineEpochMs: deadline };
    this.onLost(new WorkerLostError(`the worker was terminated to stop sandbox ${sandboxId}, stuck past its deadline`, sandboxId, reason, true, stopped));
    void this.worker.terminate();
  }

  private onLost(error: WorkerLostError): void {
    if (this.lost) return;
    this.lost = error;
    this.lostBeforeReadyOnItsOwn = !this.warm && !error.byWatchdog && !this.terminated;
    this.markReady();
    this.pool.forget(this);
    for (const [id, pending] of [...this.pending]) {
      // The slot is not released: its "had effects" bit is read after the rejection.
      this.pending.delete(id);
      if (pending.activation) this.activations--;
      pending.reject(error);
    }
    this.clock.close();
    this.hostCalls.closeAll();
    this.worker.unref();
    this.port.close();
  }

  terminate(): void {
    this.terminated = true;
    this.onLost(new WorkerLostError("the worker was shut down", null, null));
    void this.worker.terminate();
  }
}

/** The worker with the least queued work (the first of equals), or undefined for none. */
function leastQueued(workers: WorkerConnection[], nowEpochMs: number): WorkerConnection | undefined {
  return workers.reduce<WorkerConnection | undefined>((best, candidate) => (best === undefined || candidate.queuedWork(nowEpochMs) < best.queuedWork(nowEpochMs) ? candidate : best), undefined);
}

export class WorkerPool {
  private readonly shared: WorkerConnection[] = [];
  /**
   * Extra shared workers, started while every shared worker is held (see
   * PoolOptions.overflowWorkers and acquireShared); ended OVERFLOW_IDLE_MS after their last
   * sandbox is released.
   */
  private readonly overflow: WorkerConnection[] = [];
  /** Every overflow worker alive, retiring ones included: what overflowWorkers bounds (configure may retire some). */
  private readonly overflowAlive = new Set<WorkerConnection>();
  private overflowRetireTimer: NodeJS.Timeout | null = null;
  /** Shared workers for the runs of demoted scripts, at the lowest OS priority (acquireDemoted). */
  private readonly demoted: WorkerConnection[] = [];
  /** Which one-shot scripts run on the demoted workers; runs of a newly demoted one leave the line. */
  private readonly demotion = new RunDemotion(
    () => this.options.demotionMs,
    () => {
      this.runAdmission.releaseLeavers();
      this.probationRunAdmission.releaseLeavers();
    },
  );
  /** Workers, at normal priority, for the one-shot runs of scripts new to the pool (acquireProbation). */
  private readonly probation: WorkerConnection[] = [];
  /** Which one-shot scripts have run here (the others are new: host/run-probation.ts); runs of one just known leave the probation line. */
  private readonly knownScripts = new KnownScripts((key) => this.probationRunAdmission.releaseKey(key));
  /** Retires idle demoted workers once no script is demoted (scheduled when one goes idle). */
  private demotedRetireTimer: NodeJS.Timeout | null = null;
  private readonly all = new Set<WorkerConnection>();
  /** Dedicated workers of isolated sandboxes (serving one or idle). */
  private readonly isolated = new DedicatedWorkers<WorkerConnection>(
    () => this.startDedicated(false),
    () => this.options.maxIsolatedWorkers,
    () => this.options.idleIsolatedWorkers,
  );
  /**
   * Dedicated workers, at the lowest OS priority, of isolated sandboxes running demoted
   * scripts: at most demotedWorkers (at least one, so a run waiting here when demotion is
   * turned off is still served), one kept idle while any script is demoted. Bounded apart
   * from maxIsolatedWorkers, whose bound would otherwise double (found by review).
   */
  private readonly demotedIsolated = new DedicatedWorkers<WorkerConnection>(
    () => this.startDedicated(true),
    () => Math.max(1, this.options.demotedWorkers),
    () => (this.demotion.count > 0 ? DEMOTED_IDLE_ISOLATED_WORKERS : 0),
  );
  private nextShared = 0;
  /**
   * Shared workers beyond a smaller `sharedWorkers` (configure): they take no new
   * sandboxes and end when their last one is released.
   */
  private readonly retiring = new Set<WorkerConnection>();
  /** The warm-up in progress (warmUp), shared by concurrent callers. */
  private warming: Promise<void> | null = null;
  private watchdogTimer: NodeJS.Timeout | null = null;
  options: PoolOptions;
  /** One-shot runs waiting for room on a shared worker (host/run-admission.ts). */
  readonly runAdmission = new RunAdmission(
    () => this.lineRoom(),
    // A run waits: the watchdog's tick re-checks the room (a worker's queued run started,
    // a long guest ended) even if no worker has a request in flight.
    () => this.watch(),
  );
  /**
   * The same line for the runs of demoted scripts, with the demoted workers' room: their
   * queue stays bounded, and signal, queueTimeoutMs and dispose reach a waiting run in the
   * embedder (sent at once, thousands of them once took every activation slot of one worker).
   */
  readonly demotedRunAdmission = new RunAdmission(
    () => this.roomForRuns(this.demoted, this.demotedWorkersToCount()),
    () => this.watch(),
  );
  /**
   * The line for the runs of scripts new to the pool (host/run-probation.ts): served by
   * the probation workers, and by the shared workers while no run waits in the ordinary
   * line (probationRoom).
   */
  readonly probationRunAdmission = new RunAdmission(
    () => this.probationRoom(),
    () => this.watch(),
  );

  constructor(options: Partial<PoolOptions> = {}) {
    checkWorkerEntry();
    this.options = resolvePoolOptions(options, defaultPoolOptions());
  }

  /**
   * Changes the pool's sizes. A larger pool grows as sandboxes need workers. A smaller one
   * shrinks now: shared workers beyond the new count stop taking sandboxes (the emptiest
   * go first) and end once their last sandbox is released, so no sandbox loses its worker;
   * idle dedicated workers beyond idleIsolatedWorkers end now.
   */
  configure(options: Partial<PoolOptions>): void {
    this.options = resolvePoolOptions(options, this.options);
    this.retireBeyond(this.shared, this.options.sharedWorkers);
    this.retireBeyond(this.overflow, this.options.overflowWorkers);
    this.retireBeyond(this.demoted, this.options.demotedWorkers);
    this.retireBeyond(this.probation, this.probationOn ? this.options.probationWorkers : 0);
    this.isolated.trimIdle();
    this.isolated.wake();
    this.demotedIsolated.wake();
    // Demotion turned on or off: waiting runs whose script's standing changed change lines.
    this.runAdmission.releaseLeavers();
    this.demotedRunAdmission.releaseLeavers();
    this.probationRunAdmission.releaseLeavers();
    // Probation turned on, or more probation workers: waiting runs may use them.
    this.wakeLines();
  }

  /** Admits waiting one-shot runs where there is room now (a run started or ended, a worker came or went). */
  wakeLines(): void {
    if (this.probationRunAdmission.waitingCount > 0) {
      // Its runs may be waiting for a probation worker that could not start before (the
      // shared workers were starting) or was lost.
      this.startProbationWorkers();
    }
    // A new script's run that has waited PROBATION_MAX_WAIT_MS in the probation line joins
    // the ordinary line, in order of arrival among the runs there (checked at every wake,
    // and so at every watchdog tick while runs wait).
    this.probationRunAdmission.releaseWaitingSince(performance.now() - PROBATION_MAX_WAIT_MS);
    // Known runs first: the probation line gets the shared workers' room only once none waits.
    this.runAdmission.wake();
    this.probationRunAdmission.wake();
    this.demotedRunAdmission.wake();
  }

  /** Whether one-shot runs wait in the embedder for a shared or probation worker (a guest holding one is then seen sooner). */
  runsWaitInLine(): boolean {
    return this.runAdmission.waitingCount > 0 || this.probationRunAdmission.waitingCount > 0;
  }

  private retireBeyond(workers: WorkerConnection[], count: number): void {
    while (workers.length > count) {
      const emptiest = workers.reduce((a, b) => (b.sandboxCount < a.sandboxCount ? b : a));
      workers.splice(workers.indexOf(emptiest), 1);
      if (emptiest.sandboxCount === 0) emptiest.terminate();
      else this.retiring.add(emptiest);
    }
  }

  /**
   * Demotion needs demoted workers and a per-thread CPU clock: measured in wall time, a
   * 50 ms synchronous host call, or any run on a busy machine, would "hold" a worker, and a
   * demoted script's own starved runs would renew its demotion for as long as it lasted.
   * (Demotion keys, a digest of the source, are worth computing only while it is on.)
   */
  get demotionOn(): boolean {
    return this.options.demotedWorkers > 0 && THREAD_CPU_CLOCK;
  }

  /** Whether one-shot runs of a script recorded under `key` go to the demoted workers (acquireDemoted). */
  isDemoted(key: string): boolean {
    return this.demotionOn && this.demotion.isDemoted(key);
  }

  /**
   * A run of the script recorded under `key` held its worker for long: seen by the
   * watchdog while it runs, or hard-stopped (host/run-demotion.ts).
   */
  noteHeld(key: string): void {
    if (!this.demotionOn) return;
    this.knownScripts.forget(key);
    this.demotion.recordHeld(key);
  }

  /**
   * Probation (host/run-probation.ts) needs demotion (a new script's run is withdrawn from
   * its probation worker, and its script's later runs kept apart, only by demotion) and
   * the line of one-shot runs (queuedRunsPerWorker > 0).
   */
  get probationOn(): boolean {
    return this.demotionOn && this.options.probationWorkers > 0 && this.options.queuedRunsPerWorker > 0;
  }

  /** Whether a one-shot run of the script recorded under `key` waits in the probation line: the script is new to the pool and not demoted. */
  isNewScript(key: string): boolean {
    return this.probationOn && !this.knownScripts.has(key) && !this.isDemoted(key);
  }

  /** A one-shot run of the script recorded under `key` ended here: unless demoted meanwhile, the script is known. */
  noteScriptRan(key: string): void {
    if (this.demotionOn && !this.isDemoted(key)) this.knownScripts.noteRan(key);
  }

  /** The probation line, for a run of a new script (its workers start with the first one, or at warmPool). */
  probationLine(): RunAdmission {
    this.startProbationWorkers();
    return this.probationRunAdmission;
  }

  /**
   * A worker for a one-shot run of a new script, admitted from the probation line (or a
   * bystander of one, sent again): a ready probation worker with room for it (the least
   * queued); else a shared worker while no known run waits and one has room; else a
   * probation worker, ready or starting
   * (the least queued: a bystander of a lost probation worker goes to its replacement,
   * not among the known runs); else, where none can start yet (the shared workers are
   * starting), a shared worker, as without probation.
   */
  acquireProbation(): WorkerConnection {
    this.startProbationWorkers();
    const now = performance.timeOrigin + performance.now();
    const perWorker = this.options.queuedRunsPerWorker;
    let connection = leastQueued(this.probation.filter((candidate) => candidate.isReady && candidate.roomForRuns(now, perWorker) > 0), now);
    if (connection === undefined) {
      const sharedFree = this.runAdmission.waitingCount === 0 && this.roomForRuns(this.shared, this.options.sharedWorkers) > 0;
      if (sharedFree || this.probation.length === 0) return this.acquireShared(true);
      connection = leastQueued(this.probation, now)!;
    }
    connection.sandboxCount++;
    return connection;
  }

  /**
   * How many more runs the probation line may send now: the ready probation workers'
   * room, plus the shared workers' while no known run waits for it (so a service whose
   * every script is new still has every worker). A run that has waited
   * PROBATION_MAX_WAIT_MS leaves for the ordinary line (wakeLines).
   */
  private probationRoom(): number {
    const now = performance.timeOrigin + performance.now();
    const perWorker = this.options.queuedRunsPerWorker;
    let room = 0;
    for (const connection of this.probation) if (connection.isReady) room += connection.roomForRuns(now, perWorker);
    if (this.runAdmission.waitingCount === 0) room += Math.max(0, this.roomForRuns(this.shared, this.options.sharedWorkers) - this.runAdmission.unplacedCount);
    return room;
  }

  private shuttingDown = false;
  /** When a probation worker last failed to start (WorkerConnection.failedToStart; startProbationWorkers). */
  private probationFailedAt = -Infinity;

  private startProbationWorkers(): void {
    if (!this.probationOn || this.shuttingDown) return;
    // Not again at once after one was lost before it was ready (a thread that cannot start
    // would otherwise be restarted at every wake while runs wait; they leave the probation
    // line within PROBATION_MAX_WAIT_MS anyway).
    if (performance.now() - this.probationFailedAt < PROBATION_MAX_WAIT_MS) return;
    // Not while shared workers start: a thread starting beside them would delay the first
    // runs (new scripts' runs go to the shared workers until a probation worker is ready).
    if (this.shared.length < this.options.sharedWorkers || this.shared.some((connection) => !connection.isReady)) return;
    // One after another, as startAllShared does: 16 started at once (probationWorkers
    // raised under load) took the known runs' p99 from 49 to 227 ms (hostile test).
    if (this.probation.length >= this.options.probationWorkers || this.probation.some((connection) => !connection.wasReady)) return;
    // Warm sandboxes and a burst's engines as a shared worker keeps: without the latter, a
    // stream of new scripts (where it takes a share of every burst) made it build and drop
    // an engine per run, 2.76 ms of its CPU per run against 1.85 ms on a shared worker
    // (hostile test).
    const size = this.options.warmSandboxesPerWorker;
    const connection = new WorkerConnection(this, false, { size, burstExtraMax: size > 0 ? BURST_EXTRA_MAX : 0 }, false, true);
    this.probation.push(connection);
    this.all.add(connection);
    void connection.ready.then(() => {
      // The next one, if more are wanted; and its runs were waiting for it to be ready
      // (probationRoom counts only ready ones).
      this.startProbationWorkers();
      this.wakeLines();
    });
  }

  /**
   * A worker for a one-shot run of a demoted script: the demoted worker with the least
   * queued work among those with room for it (runs come through demotedRunAdmission), or
   * a new one while fewer than demotedWorkers run. A run queued there holds up only other
   * demoted runs, and the worker's low priority keeps it from taking a core that an
   * ordinary run needs.
   */
  acquireDemoted(): WorkerConnection {
    const now = performance.timeOrigin + performance.now();
    const perWorker = this.options.queuedRunsPerWorker;
    const hasRoom = (candidate: WorkerConnection) => perWorker === 0 || candidate.roomForRuns(now, perWorker) > 0;
    let connection = leastQueued(this.demoted.filter(hasRoom), now);
    // A new one while fewer than demotedWorkersToCount run and none is free.
    if (this.demoted.length < this.demotedWorkersToCount() && (connection === undefined || connection.queuedWork(now) > 0)) connection = this.startDemoted();
    // No room anywhere (a run that moved here keeps the admission it had): the least queued.
    connection ??= leastQueued(this.demoted, now) ?? this.startDemoted();
    connection.sandboxCount++;
    return connection;
  }

  /**
   * How many demoted workers demoted runs may count on now: demotedWorkers while no
   * ordinary run waits in line, else only those already running (at least one). A new
   * thread spends ~40 ms of CPU starting; on Linux it is lowered to nice 19 right after
   * `new Worker()` returns (host/thread-priority.ts), elsewhere it starts at the
   * embedder's priority, and each native hog hard-stopped on a demoted worker made its
   * replacement start in the middle of the ordinary runs it was meant to spare, once per
   * hog. Kept on Linux too: the thread may run a slice at the embedder's priority before
   * it is lowered, and each one holds ~17-25 MiB.
   */
  private demotedWorkersToCount(): number {
    if (this.runAdmission.waitingCount === 0) return this.options.demotedWorkers;
    return Math.min(this.options.demotedWorkers, Math.max(1, this.demoted.length));
  }

  private startDemoted(): WorkerConnection {
    const size = Math.min(DEMOTED_WARM_SANDBOXES_MAX, this.options.warmSandboxesPerWorker);
    const connection = new WorkerConnection(this, false, { size, burstExtraMax: 0 }, true);
    this.demoted.push(connection);
    this.all.add(connection);
    return connection;
  }

  /** Ends idle demoted workers once no script is demoted, checked when one goes idle. */
  private scheduleDemotedRetirement(): void {
    if (this.demotedRetireTimer !== null) return;
    this.demotedRetireTimer = setTimeout(() => {
      this.demotedRetireTimer = null;
      if (this.demotion.count > 0) {
        if (this.demoted.some((connection) => connection.sandboxCount === 0) || this.demotedIsolated.idleCount > 0) this.scheduleDemotedRetirement();
        return;
      }
      for (const connection of this.demoted.filter((connection) => connection.sandboxCount === 0)) connection.terminate();
      this.demotedIsolated.trimIdle();
    }, this.options.demotionMs);
    this.demotedRetireTimer.unref();
  }

  /**
   * A shared worker for a new sandbox: the one with the least queued work. A one-shot run
   * admitted from the line (`forLine`) goes to a worker with room for it (see roomForRuns)
   * whenever one has: a worker held by a guest for 20-30 ms has only 2-3 queued work to
   * show for it, less than a free worker with a few runs queued.
   */
  acquireShared(forLine = false): WorkerConnection {
    let connection: WorkerConnection;
    if (this.shared.length < this.options.sharedWorkers) {
      // A new worker only while every running one already has sandboxes: one still
      // starting (see warmPool) is ready sooner than a thread started now.
      const now = performance.timeOrigin + performance.now();
      connection = this.shared.find((candidate) => candidate.sandboxCount === 0 && candidate.queuedWork(now) === 0) ?? this.startShared();
    } else if (!forLine && this.overflowNeeded(performance.timeOrigin + performance.now())) {
      connection = this.startOverflow();
    } else {
      // Least queued work; ties go round-robin, so sandboxes created one after another
      // land on different workers while each refills its warm pool. One-shot runs from the
      // line go to the shared workers, and to overflow workers only while every shared one
      // is held by a guest nothing moves (lineRoom); the others go to the shared workers
      // while one is free: offered always, an overflow worker took its share of ordinary
      // sandboxes and never became idle enough to end (review).
      const now = performance.timeOrigin + performance.now();
      const perWorker = this.options.queuedRunsPerWorker;
      let withRoom = forLine && perWorker > 0 ? this.shared.filter((candidate) => candidate.roomForRuns(now, perWorker) > 0) : [];
      if (forLine && perWorker > 0 && withRoom.length === 0 && this.everySharedHeld(now)) {
        // The line admitted this run to an overflow worker (lineRoom): one with room, or a new one.
        withRoom = this.overflow.filter((candidate) => this.overflowRoom(candidate, now) > 0);
        if (withRoom.length === 0 && this.overflowAlive.size < this.options.overflowWorkers) {
          const started = this.startOverflow();
          started.sandboxCount++;
          started.linePicks++;
          return started;
        }
        // The room the line counted went meanwhile (a createSandbox placement, a worker seen
        // held since): an overflow worker not held is still better than a held shared one.
        if (withRoom.length === 0) withRoom = this.overflow.filter((candidate) => !candidate.isHeld(now));
        if (withRoom.length > 0) {
          const picked = leastQueued(withRoom, now)!;
          picked.sandboxCount++;
          picked.linePicks++;
          return picked;
        }
      }
      const overflowOffered = !forLine && this.overflow.length > 0 && this.shared.every((candidate) => candidate.isHeld(now));
      const candidates = withRoom.length > 0 ? withRoom : overflowOffered ? [...this.shared, ...this.overflow] : this.shared;
      const start = this.nextShared++ % candidates.length;
      connection = candidates[start]!;
      let best = connection.queuedWork(now);
      for (let i = 1; i < candidates.length; i++) {
        const candidate = candidates[(start + i) % candidates.length]!;
        const work = candidate.queuedWork(now);
        if (work < best || (work === best && candidate.sandboxCount < connection.sandboxCount)) {
          connection = candidate;
          best = work;
        }
      }
    }
    connection.sandboxCount++;
    return connection;
  }


  /**
   * A dedicated worker for an isolated sandbox (DedicatedWorkers: at most
   * maxIsolatedWorkers alive, beyond that the first one released). `demoted`: the sandbox
   * runs a demoted script, which gets a dedicated worker of its own at the lowest OS
   * priority, from a set bounded by demotedWorkers, and leaves the isolated workers to the
   * others (host/run-demotion.ts).
   */
  acquireIsolated(demoted = false): { connection: Promise<WorkerConnection>; cancel(): void } {
    return (demoted ? this.demotedIsolated : this.isolated).acquire();
  }

  /**
   * A dedicated worker builds no engine ahead (it may serve one sandbox and end), but keeps
   * the engine of the sandbox it served for the next one it serves (a fresh runtime and
   * realm per run, as with recycling on shared workers): isolated runs went from ~80 to
   * ~250 runs/s in the mixed-tenancy bench. Not with warmSandboxesPerWorker 0 (the
   * embedder asked for no engine kept built), nor for demoted scripts.
   */
  private startDedicated(demoted: boolean): WorkerConnection {
    const keepServed = !demoted && this.options.warmSandboxesPerWorker > 0;
    const connection = new WorkerConnection(this, true, { size: 0, burstExtraMax: keepServed ? 1 : 0 }, demoted);
    this.all.add(connection);
    return connection;
  }

  /**
   * Whether a sandbox placed now should get an overflow worker: every shared worker, and
   * every overflow worker, is held by a guest (a run sent to any of them would wait for
   * that guest, up to its CPU limit), and fewer than overflowWorkers overflow workers run.
   * A worker still starting is not held, so one overflow worker starts at a time. Without
   * this, two sandboxes of one tenant spinning in `for (;;) {}` held both shared workers
   * of a 2-core machine, and every other createSandbox run waited ~2 CPU limits (10 s at
   * the defaults; a run moved from one held worker to the other; found by review).
   */
  private overflowNeeded(nowEpochMs: number): boolean {
    if (this.overflowAlive.size >= this.options.overflowWorkers || this.shared.length === 0) return false;
    return [...this.shared, ...this.overflow].every((connection) => connection.isHeld(nowEpochMs));
  }

  /** An overflow worker: one warm sandbox, no burst's engines kept (it serves while the shared ones are held). */
  private startOverflow(): WorkerConnection {
    const size = Math.min(1, this.options.warmSandboxesPerWorker);
    const connection = new WorkerConnection(this, false, { size, burstExtraMax: 0 });
    this.overflow.push(connection);
    this.overflowAlive.add(connection);
    this.all.add(connection);
    return connection;
  }

  /** Ends overflow workers without sandboxes OVERFLOW_IDLE_MS after the last one became empty. */
  private scheduleOverflowRetirement(): void {
    if (this.overflowRetireTimer !== null) clearTimeout(this.overflowRetireTimer);
    this.overflowRetireTimer = setTimeout(() => {
      this.overflowRetireTimer = null;
      for (const connection of this.overflow.filter((candidate) => candidate.sandboxCount === 0)) connection.terminate();
    }, OVERFLOW_IDLE_MS);
    this.overflowRetireTimer.unref();
  }

  /** A shared worker keeps warmSandboxesPerWorker engines, and a burst's engines while they are used (none with 0). */
  private startShared(): WorkerConnection {
    const size = this.options.warmSandboxesPerWorker;
    const connection = new WorkerConnection(this, false, { size, burstExtraMax: size > 0 ? BURST_EXTRA_MAX : 0 });
    this.shared.push(connection);
    this.all.add(connection);
    return connection;
  }

  release(connection: WorkerConnection): void {
    connection.sandboxCount--;
    if (connection.sandboxCount > 0 || connection.lost) return;
    if (!connection.dedicated) {
      if (this.retiring.delete(connection)) connection.terminate();
      else if (connection.demoted) this.scheduleDemotedRetirement();
      else if (this.overflow.includes(connection)) this.scheduleOverflowRetirement();
      return;
    }
    if (!connection.demoted) return this.isolated.release(connection);
    this.demotedIsolated.release(connection);
    if (this.demotedIsolated.idleCount > 0) this.scheduleDemotedRetirement();
  }

  /**
   * Room for the line of one-shot runs: the shared workers' and, while every shared worker
   * is held by a guest nothing moves (everySharedHeld), the overflow workers' (those alive,
   * and those that may still start, up to overflowWorkers). Without the overflow workers,
   * two createSandbox sandboxes spinning at a 1 s CPU limit (never demoted: their state
   * lives in their worker) let 7 runScript runs through in 8 s, each after ~1 s (a review,
   * 2026-12-02).
   */
  private lineRoom(): number {
    const room = this.roomForRuns(this.shared, this.options.sharedWorkers);
    const now = performance.timeOrigin + performance.now();
    if (room > 0 || !this.everySharedHeld(now)) return room;
    const perWorker = this.options.queuedRunsPerWorker;
    let overflowRoom = perWorker * Math.max(0, this.options.overflowWorkers - this.overflowAlive.size);
    for (const connection of this.overflow) overflowRoom += this.overflowRoom(connection, now);
    return overflowRoom;
  }

  /**
   * An overflow worker's room for runs from the line: roomForRuns, less the runs that picked
   * it and are not sent yet (the runs a wake admits all pick their worker before any is
   * sent: a burst of 8 went to one new overflow worker, past queuedRunsPerWorker; review).
   * Not its createSandbox sandboxes, nor runs that started and wait on a timer or a fetch:
   * as on the shared workers, those hold nothing up (a second review).
   */
  private overflowRoom(connection: WorkerConnection, nowEpochMs: number): number {
    return Math.max(0, connection.roomForRuns(nowEpochMs, this.options.queuedRunsPerWorker) - connection.linePicksUnsent());
  }

  /**
   * Whether all the shared workers have started and each is held by a guest nothing moves:
   * a createSandbox sandbox's (a run sent to one would wait for it). One held by a one-shot
   * run is left to demotion and probation, which move that run instead, while demotion is on.
   */
  private everySharedHeld(nowEpochMs: number): boolean {
    // Without demotion (no per-thread CPU clock, or demotedWorkers 0) nothing moves a one-shot hog either.
    const held = (connection: WorkerConnection) => (this.demotionOn ? connection.heldByStateful(nowEpochMs) : connection.isHeld(nowEpochMs));
    return this.shared.length >= this.options.sharedWorkers && this.shared.length > 0 && this.shared.every(held);
  }

  /** Whether a one-shot run moving back to its line would find room there on an overflow worker (lineRoom). */
  lineHasOverflowRoom(nowEpochMs: number): boolean {
    if (this.options.queuedRunsPerWorker === 0 || !this.everySharedHeld(nowEpochMs)) return false;
    return this.overflowAlive.size < this.options.overflowWorkers || this.overflow.some((connection) => this.overflowRoom(connection, nowEpochMs) > 0);
  }

  private roomForRuns(workers: WorkerConnection[], count: number): number {
    const perWorker = this.options.queuedRunsPerWorker;
    if (perWorker === 0) return Infinity;
    const now = performance.timeOrigin + performance.now();
    // Workers not started yet will take their share too.
    let room = perWorker * Math.max(0, count - workers.length);
    for (const connection of workers) room += connection.roomForRuns(now, perWorker);
    return room;
  }

  /**
   * Whether other runs wait for `connection`: sent to it besides the one in `slot` (and not
   * withdrawn), or, for a shared or probation worker, in the ordinary or probation line
   * (for a probation worker the ordinary line counts too: its guest takes a core from the
   * shared workers those runs wait for), or, for an isolated worker, isolated sandboxes
   * waiting for one.
   */
  othersWaitOn(connection: WorkerConnection, slot: number): boolean {
    if (connection.othersInFlight(slot) > 0) return true;
    return connection.dedicated ? !connection.demoted && this.runsWaitForIsolated() : this.runsWaitInLine();
  }

  /** Whether isolated sandboxes wait for a dedicated worker (all maxIsolatedWorkers taken): a guest holding one is then seen sooner, and re-run elsewhere. */
  runsWaitForIsolated(): boolean {
    return this.isolated.waiting > 0;
  }

  /** The watchdog terminated a worker (a guest stuck past its deadline, or a withdrawn one in a native call). */
  noteHardStop(): void {
    this.hardStops++;
  }
  private hardStops = 0;

  /**
   * Whether a run queued on `connection` would wait for less on another shared worker;
   * `overflow`: whether an overflow worker counts (not for one-shot runs, which go to one
   * only through their line: lineHasOverflowRoom, acquireShared(forLine)).
   */
  hasRoomElsewhere(connection: WorkerConnection, nowEpochMs: number, overflow = true): boolean {
    // A demoted run stays among the demoted workers (moving it to an ordinary one would undo its demotion).
    if (connection.dedicated || connection.demoted) return false;
    // A run queued on a held probation worker goes where the probation line could send it now.
    if (connection.probation) return this.probationRoom() > 0;
    if (this.shared.length < this.options.sharedWorkers) return true;
    // Not to another held worker: a run moved there waited for that guest instead (a
    // younger hold looks lighter, so a run moved from one held worker to the next and
    // waited ~2 CPU limits; found by review). Where every worker is held, to an overflow
    // worker (acquireShared starts one) while there may be one more.
    const here = connection.queuedWork(nowEpochMs);
    const others = (overflow ? [...this.shared, ...this.overflow] : this.shared).filter((other) => other !== connection && !this.retiring.has(other));
    if (others.some((other) => !other.isHeld(nowEpochMs) && other.queuedWork(nowEpochMs) + 1 < here)) return true;
    return overflow && this.overflowNeeded(nowEpochMs);
  }

  /** Starts the shared workers now instead of at the first createSandbox; settles once they are warm. */
  warmUp(): Promise<void> {
    // Concurrent calls share one warm-up, so the workers still start one after another.
    this.warming ??= this.startAllShared().finally(() => {
      this.warming = null;
    });
    return this.warming;
  }

  private async startAllShared(): Promise<void> {
    // One after another: threads starting side by side share the cores with the embedder
    // and each other, so all of them would be ready later than the first one alone.
    for (let started = 0; started < this.options.sharedWorkers && this.shared.length < this.options.sharedWorkers; started++) {
      const connection = this.startShared();
      connection.keepAliveUntilReady();
      await connection.ready;
    }
    for (const connection of this.shared) connection.keepAliveUntilReady();
    await Promise.all(this.shared.map((connection) => connection.ready));
    // Then the probation workers (host/run-probation.ts), one after another: the first new
    // script's run finds one ready.
    for (;;) {
      this.startProbationWorkers();
      const starting = this.probation.find((connection) => !connection.wasReady);
      if (starting === undefined) break;
      starting.keepAliveUntilReady();
      await starting.ready;
    }
  }

  forget(connection: WorkerConnection): void {
    this.retiring.delete(connection);
    this.overflowAlive.delete(connection);
    if (!this.all.delete(connection)) return;
    // A thread that could not start; not one the watchdog stopped for a guest (the first run
    // of a replacement is often the next stuck hog among the bystanders), nor one the pool
    // stopped (configurePool, shutdown: the next one would wait for no reason).
    if (connection.probation && connection.failedToStart) this.probationFailedAt = performance.now();
    for (const workers of [this.shared, this.overflow, this.demoted, this.probation]) {
      const index = workers.indexOf(connection);
      if (index !== -1) workers.splice(index, 1);
    }
    // A lost shared worker is replaced at the next placement: its room counts meanwhile.
    // A lost probation worker is replaced at once if new scripts' runs wait for it (wakeLines).
    this.wakeLines();
    if (connection.dedicated) (connection.demoted ? this.demotedIsolated : this.isolated).forget(connection);
  }

  /** Runs the watchdog while any worker has a request in flight. */
  watch(): void {
    if (this.watchdogTimer) return;
    this.watchdogTimer = setInterval(() => {
      const now = performance.timeOrigin + performance.now();
      let busy = false;
      // A run started, or a guest has run long: the room for waiting one-shot runs changed.
      this.wakeLines();
      for (const connection of this.all) {
        if (!connection.busy) continue;
        busy = true;
        connection.checkDeadline(now);
      }
      if (!busy && !this.runsWaitInLine() && this.demotedRunAdmission.waitingCount === 0 && this.watchdogTimer) {
        clearInterval(this.watchdogTimer);
        this.watchdogTimer = null;
      }
    }, WATCHDOG_INTERVAL_MS);
    this.watchdogTimer.unref();
  }

  /** Figures for tests and monitoring: how many workers of each kind are alive. */
  get counts(): PoolStats {
    return {
      shared: this.shared.length,
      overflow: this.overflow.length,
      retiringShared: this.retiring.size,
      isolated: this.isolated.alive,
      idleIsolated: this.isolated.idleCount,
      waitingForIsolated: this.isolated.waiting,
      inFlightPerSharedWorker: this.shared.map((connection) => connection.activations),
      inFlightPerOverflowWorker: this.overflow.map((connection) => connection.activations),
      inFlightPerDemotedWorker: this.demoted.map((connection) => connection.activations),
      inFlightPerProbationWorker: this.probation.map((connection) => connection.activations),
      waitingRuns: this.runAdmission.waitingCount + this.demotedRunAdmission.waitingCount + this.probationRunAdmission.waitingCount,
      waitingNewScriptRuns: this.probationRunAdmission.waitingCount,
      knownScripts: this.knownScripts.size,
      demoted: this.demoted.length + this.demotedIsolated.alive,
      demotedScripts: this.demotion.count,
      hardStops: this.hardStops,
    };
  }

  /** Terminates every worker (tests, graceful shutdown). Sandboxes in them become unusable. */
  async shutdown(): Promise<void> {
    // No probation worker is replaced while they all end (forget).
    this.shuttingDown = true;
    try {
      for (const connection of [...this.all]) connection.terminate();
    } finally {
      this.shuttingDown = false;
    }
    this.all.clear();
    this.shared.length = 0;
    this.overflow.length = 0;
    this.overflowAlive.clear();
    if (this.overflowRetireTimer !== null) clearTimeout(this.overflowRetireTimer);
    this.overflowRetireTimer = null;
    this.demoted.length = 0;
    this.probation.length = 0;
    if (this.demotedRetireTimer !== null) clearTimeout(this.demotedRetireTimer);
    this.demotedRetireTimer = null;
    this.retiring.clear();
    this.isolated.clear();
    this.demotedIsolated.clear();
  }
}

let defaultPool: WorkerPool | null = null;
export function sharedPool(): WorkerPool {
  defaultPool ??= new WorkerPool();
  return defaultPool;
}

/** What the process-wide pools hold now (for monitoring and tests). */
export interface PoolStats {
  /** Shared workers alive and taking new sandboxes. */
  shared: number;
  /** Overflow workers alive: extra shared workers started while every shared worker was held (PoolOptions.overflowWorkers). */
  overflow: number;
  /**
   * Pooled workers beyond a smaller count (`sharedWorkers`, and likewise `demotedWorkers`
   * or `probationWorkers`: demoted and probation workers are shared by sandboxes too),
   * ending once their sandboxes are released.
   */
  retiringShared: number;
  /** Dedicated workers alive (serving an isolated sandbox, or idle for the next). */
  isolated: number;
  idleIsolated: number;
  /** Isolated sandboxes waiting for a dedicated worker (all maxIsolatedWorkers taken). */
  waitingForIsolated: number;
  /** Runs, loads and calls sent to each shared worker and not answered yet. */
  inFlightPerSharedWorker: number[];
  /** The same for each overflow worker. */
  inFlightPerOverflowWorker: number[];
  /** The same for each shared demoted worker (the runs from the demoted line among them wait there, unstarted, at most queuedRunsPerWorker at a time). */
  inFlightPerDemotedWorker: number[];
  /** The same for each probation worker (runs of scripts new to the pool: host/run-probation.ts). */
  inFlightPerProbationWorker: number[];
  /** One-shot runs (runScript) waiting in the embedder for room on a shared, probation or demoted worker (queuedRunsPerWorker). */
  waitingRuns: number;
  /** Those of them that wait in the probation line (runs of scripts new to the pool). */
  waitingNewScriptRuns: number;
  /** Scripts that have run here and are not demoted (at most 4,096 remembered): their runs skip the probation line. */
  knownScripts: number;
  /** Demoted workers alive: shared ones (demotedWorkers) and dedicated ones of isolated demoted runs (up to maxIsolatedWorkers). */
  demoted: number;
  /** Scripts whose one-shot runs go to the demoted workers now (host/run-demotion.ts). */
  demotedScripts: number;
  /** Workers the watchdog has terminated since the pool was made, each to stop a guest stuck in native code (the hard stop). */
  hardStops: number;
}

export function poolStats(): PoolStats {
  return sharedPool().counts;
}

/**
 * Sizes the process-wide worker pools (exported from "scriptbox"). Best called at
 * start-up; a later call that makes the pool smaller retires the workers beyond it as
 * their sandboxes are released (WorkerPool.configure). Returns the sizes now in force.
 */
export function configurePool(options: Partial<PoolOptions> = {}): PoolOptions {
  const pool = sharedPool();
  pool.configure(options);
  return { ...pool.options };
}

/**
 * Starts the shared workers now (exported from "scriptbox"), so that the first sandbox
 * does not wait for a worker thread to start (tens of ms, more on a busy machine).
 * Without it they start at the first createSandbox: importing scriptbox starts nothing.
 * The promise settles once every shared worker is ready; awaiting it is optional.
 */
export function warmPool(): Promise<void> {
  try {
    return sharedPool().warmUp();
  } catch (error) {
    return Promise.reject(error); // a promise either way (checkWorkerEntry)
  }
}
