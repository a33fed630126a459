// startAtLowestPriority (host/thread-priority.ts): a demoted worker's thread runs at the
// lowest OS priority from its start, not only once its entry module lowers it.
import { getPriority } from "node:os";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { startAtLowestPriority } from "../../host/thread-priority.js";

/** The first thing the worker does: report its own nice value (field 19 of /proc/thread-self/stat). */
const REPORT_NICE = `
  const { parentPort } = require("node:worker_threads");
  const stat = require("node:fs").readFileSync("/proc/thread-self/stat", "utf8");
  parentPort.postMessage(Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]));`;

async function niceAtStart(start: () => Worker): Promise<number> {
  const worker = start();
  try {
    return await new Promise<number>((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
  } finally {
    await worker.terminate();
  }
}

describe.runIf(process.platform === "linux")("startAtLowestPriority", () => {
  it("the new thread already runs at nice 19 when its own code starts (after Node's bootstrap); a thread started the usual way at the embedder's", async () => {
    const start = () => new Worker(REPORT_NICE, { eval: true });
    expect(await niceAtStart(() => startAtLowestPriority(start))).toBe(19);
    expect(await niceAtStart(start)).toBe(getPriority());
  });
});
