// Web APIs computed by the host (issue 13): what a script pays for crypto.subtle and Intl.
// Each operation is timed inside the sandbox, per operation, with performance.now() (a
// plugin call runs it `n` times and returns the times), beside the same operation done
// directly by node:crypto / Intl on this thread: the floor, measured in the same run.
import { createHash, createHmac } from "node:crypto";
import { createSandbox } from "../dist/src/index.js";
import { sample, spread } from "./stats.mjs";

const PLUGIN = `
const key = await crypto.subtle.importKey("raw", new TextEncoder().encode("bench-key"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
const kilobyte = new Uint8Array(1024).fill(7);
const megabyte = new Uint8Array(1024 * 1024).fill(7);
const format = new Intl.NumberFormat("en", { maximumFractionDigits: 2 });
const OPS = {
  hmac1k: () => crypto.subtle.sign("HMAC", key, kilobyte),
  digest1m: () => crypto.subtle.digest("SHA-256", megabyte),
  intlFormat: () => format.format(1234.5678),
  now: () => performance.now(),
  empty: () => undefined,
};
export async function time(name, n) {
  const op = OPS[name];
  const times = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await op();
    times.push(performance.now() - start);
  }
  return times;
}
`;

export async function benchWebApis({ quick = false } = {}) {
  const samples = quick ? 200 : 2000;
  const warmup = quick ? 50 : 300;
  const sandbox = await createSandbox({ limits: { memoryBytes: 64 * 1024 * 1024, cpuTimeMs: 600_000, wallTimeMs: 600_000 } });
  try {
    const plugin = await sandbox.load(PLUGIN, { filename: "webapis-bench.js" });
    const guest = async (name, n = samples) => {
      await plugin.call("time", name, warmup);
      return spread(await plugin.call("time", name, n));
    };
    const kilobyte = Buffer.alloc(1024, 7);
    const megabyte = Buffer.alloc(1024 * 1024, 7);
    const hostFormat = new Intl.NumberFormat("en", { maximumFractionDigits: 2 });
    const host = async (op, n = samples) => spread(await sample(op, { warmup, samples: n }));
    const few = Math.max(50, samples / 10);
    return {
      empty: await guest("empty"),
      hmac1k: { ours: await guest("hmac1k"), host: await host(() => createHmac("sha256", "bench-key").update(kilobyte).digest()) },
      digest1m: { ours: await guest("digest1m", few), host: await host(() => createHash("sha256").update(megabyte).digest(), few) },
      intlFormat: { ours: await guest("intlFormat"), host: await host(() => hostFormat.format(1234.5678)) },
      now: await guest("now"),
    };
  } finally {
    await sandbox.dispose();
  }
}
