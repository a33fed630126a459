// Reading the rest of a refused request body before answering. A client that writes its
// whole body before it reads the answer (most do) gets EPIPE instead of our 413 when the
// server answers and closes while the body is still coming. So the body is read and
// thrown away, up to a cap and a deadline, and then the answer goes out on a connection
// that can stay open. Beyond the cap the server answers at once and closes (it will not
// read gigabytes to be polite).
import type { IncomingMessage } from "node:http";

/** Bodies up to this size are read to the end before a 413. */
export const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;
/** ... if they arrive within this time. */
export const DRAIN_TIMEOUT_MS = 10_000;

export function drainRequest(raw: IncomingMessage, maxBytes = DRAIN_LIMIT_BYTES, timeoutMs = DRAIN_TIMEOUT_MS): Promise<void> {
  if (raw.complete || raw.readableEnded || raw.destroyed) return Promise.resolve();
  const declared = Number(raw.headers["content-length"]);
  if (declared > maxBytes) return Promise.resolve();
  return new Promise((resolve) => {
    let received = 0;
    const finish = () => {
      clearTimeout(timer);
      raw.off("data", onData).off("end", finish).off("error", finish).off("close", finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxBytes) finish();
    };
    const timer = setTimeout(finish, timeoutMs);
    raw.on("data", onData).on("end", finish).on("error", finish).on("close", finish);
    raw.resume();
  });
}
