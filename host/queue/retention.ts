// How long finished jobs stay in Redis. Without a bound every job ever run stays there;
// these keep Redis's memory bounded while leaving results around long enough to fetch.
export const DEFAULT_RETENTION = {
  /** Completed jobs: a day, and at most 10,000 of them. */
  completed: { age: 24 * 3600, count: 10_000 },
  /** Failed jobs (kept longer: someone may want to look at them): a week, at most 10,000. */
  failed: { age: 7 * 24 * 3600, count: 10_000 },
} as const;

export interface Retention {
  /** Seconds a finished job is kept, and how many are kept at most (the newest). */
  completed?: { age?: number; count?: number };
  failed?: { age?: number; count?: number };
}
