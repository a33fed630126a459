// Names shared by the submitting side and the workers.
export const DEFAULT_QUEUE_NAME = "scripts";

/** Redis key prefix of scriptbox's queues (bullmq's default is "bull"). */
export const QUEUE_PREFIX = "scriptbox";

/** Pub/sub channel on which a running job is told to stop (bullmq cancels per worker only). */
export function cancelChannel(queueName: string): string {
  return `${QUEUE_PREFIX}:${queueName}:cancel`;
}

/** The failedReason of a cancelled job. */
export const CANCELLED_REASON = "cancelled";
