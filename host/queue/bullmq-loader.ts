// bullmq is an optional peer dependency: embedders who never use the queue do not install
// it. It is loaded on first use, and its absence is one clear line, not a stack trace.
import { createRequire } from "node:module";

import { QueueDependencyError } from "./dependency-error.js";

type BullMQ = typeof import("bullmq");
type IORedisModule = typeof import("ioredis");

let loading: Promise<BullMQ> | null = null;

function missing(error: unknown, name: string): boolean {
  const err = error as NodeJS.ErrnoException;
  return (err.code === "ERR_MODULE_NOT_FOUND" || err.code === "MODULE_NOT_FOUND") && String(err.message).includes(name);
}

export function loadBullMQ(): Promise<BullMQ> {
  loading ??= import("bullmq").catch((error: unknown) => {
    loading = null;
    throw missing(error, "bullmq") ? new QueueDependencyError() : error;
  });
  return loading;
}

/** ioredis as bullmq itself resolves it (bullmq depends on it; we do not, directly). */
export async function loadIORedis(): Promise<IORedisModule["default"]> {
  await loadBullMQ();
  const requireFromBullMQ = createRequire(createRequire(import.meta.url).resolve("bullmq"));
  return (requireFromBullMQ("ioredis") as IORedisModule).default;
}
