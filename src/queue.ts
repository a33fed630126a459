// The script queue (`scriptbox/queue`): scripts submitted here run on workers anywhere
// that reach the same Redis. Thin re-exports: the work is done in host/queue/.
// bullmq is an optional peer dependency, loaded on first use (QueueDependencyError when
// it is not installed).
export { createScriptQueue, ScriptQueue, ScriptJob, JobCancelledError, JobFailedError } from "../host/queue/script-queue.js";
export type { ScriptQueueOptions, QueueStats, ScheduleInfo, CancelOutcome } from "../host/queue/script-queue.js";
export { startScriptWorker } from "../host/queue/script-worker.js";
export type { ScriptWorker, ScriptWorkerOptions, JobEvent } from "../host/queue/script-worker.js";
export type { ScriptJobOptions } from "../host/queue/job-options.js";
export { MissingSecretError } from "../host/queue/job-options.js";
export type { RedisConnection } from "../host/queue/connection.js";
export { RedisUnreachableError } from "../host/queue/connection.js";
export { QueueDependencyError } from "../host/queue/dependency-error.js";
export { DEFAULT_RETENTION } from "../host/queue/retention.js";
export type { Retention } from "../host/queue/retention.js";
export type { RunResult, SandboxOptions, LogEntry, RunStats, SandboxError, ErrorKind, Limits } from "../host/types.js";
