// Names shared by the submitting side and the workers.
export const DEFAULT_QUEUE_NAME = "scripts";

/** Redis key prefix of scriptbox's queues (bullmq's default is "bull"). */
export const QUEUE_PREFIX = "scriptbox";

/** Pub/sub channel on which a running job is told to stop (bullmq cancels per worker only). */
export function cancelChannel(queueName: string): string {
  return `${QUEUE_PREFIX}:${queueName}:cancel`;
}

/**
 * A cancelled job's mark: set by cancel() before it removes or signals the job, kept as
 * long as failed jobs are. It answers job.result() for a job cancelled before it started
 * (its hash is removed with it), and a worker checks it when it starts a job, so a cancel
 * whose signal arrived before the worker tracked the job is not lost.
 */
export function cancelledKey(queueName: string, id: string): string {
  return `${QUEUE_PREFIX}:${queueName}:cancelled:${id}`;
}

/** The failedReason of a cancelled job. */
export const CANCELLED_REASON = "cancelled";
