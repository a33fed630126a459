// Packages in scripts (issue 13): what a large dependency costs. A zod script against a
// baseline script of the same shape that imports nothing, both run as files
// (sandbox.runFile, the path `scriptbox run` takes), in the same run:
//  - cold bundle: esbuild bundles the script with zod (memory and disk cache emptied);
//  - warm bundle: the cache's check that no input changed (memory hit), and a disk hit
//    (as a new `scriptbox run` process sees it);
//  - warm run: bundle cached, the guest parses and evaluates the bundle on every run;
//  - plugin call: zod loaded once with sandbox.load, then one call per sample.
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { formatMs, ratio, sample, spread } from "./stats.mjs";

const SCRIPTS = fileURLToPath(new URL("../test/host/package-scripts/", import.meta.url));
const DISK_CACHE = fileURLToPath(new URL("../node_modules/.cache/scriptbox", import.meta.url));
const ZOD = `${SCRIPTS}zod-user.ts`;
const PLAIN = `${SCRIPTS}plain-user.ts`;
const INPUT = { name: "ann", age: 41 };

export async function benchPackages({ quick }) {
  const { createSandbox } = await import("../dist/src/index.js");
  const { bundleEntryFile, bundleCache } = await import("../dist/host/bundle/bundle.js");
  const cold = async (path) => {
    bundleCache.clear();
    rmSync(DISK_CACHE, { recursive: true, force: true });
    await bundleEntryFile(path);
  };
  const n = quick ? 3 : 8;
  const rows = [];
  const row = (name, ours, base, note = "") =>
    rows.push([name, formatMs(ours.p50), formatMs(base.p50), ratio(ours.p50, base.p50), `p90 ${formatMs(ours.p90)}, p99 ${formatMs(ours.p99)}, n=${ours.n}`, note, { ours, base }]);

  row("cold bundle (esbuild, caches empty)", spread(await sample(() => cold(ZOD), { warmup: 1, samples: n })), spread(await sample(() => cold(PLAIN), { warmup: 1, samples: n })));
  await bundleEntryFile(ZOD);
  await bundleEntryFile(PLAIN);
  row("warm bundle: memory cache hit", spread(await sample(() => bundleEntryFile(ZOD), { warmup: 3, samples: n * 5 })), spread(await sample(() => bundleEntryFile(PLAIN), { warmup: 3, samples: n * 5 })), "stat of every input");
  const diskHit = async (path) => {
    bundleCache.clear();
    await bundleEntryFile(path);
  };
  row("warm bundle: disk cache hit (new process)", spread(await sample(() => diskHit(ZOD), { warmup: 2, samples: n * 3 })), spread(await sample(() => diskHit(PLAIN), { warmup: 2, samples: n * 3 })));

  const sandbox = await createSandbox({ limits: { cpuTimeMs: 10_000, wallTimeMs: 30_000 } });
  try {
    const cpu = { zod: [], plain: [] };
    const runOnce = async (path, into) => {
      const result = await sandbox.runFile(path, { input: INPUT });
      if (!result.ok) throw new Error(`${path}: ${result.error.message}`);
      into.push(result.stats.cpuTimeMs);
    };
    const zodRun = spread(await sample(() => runOnce(ZOD, cpu.zod), { warmup: 2, samples: n * 2 }));
    const plainRun = spread(await sample(() => runOnce(PLAIN, cpu.plain), { warmup: 2, samples: n * 2 }));
    row("warm run (runFile, bundle cached), wall", zodRun, plainRun);
    row("  guest CPU of that run", spread(cpu.zod.slice(2)), spread(cpu.plain.slice(2)), "parse + evaluate the bundle");

    const zodPlugin = await sandbox.load(`import { z } from "zod";\nconst User = z.object({ name: z.string().min(1), age: z.number().int() });\nexport const check = (v) => User.safeParse(v).success;`, { filename: "zod-plugin.js", resolveDir: SCRIPTS });
    const plainPlugin = await sandbox.load(`export const check = (v) => typeof v?.name === "string" && v.name.length > 0 && Number.isInteger(v?.age);`, { filename: "plain-plugin.js" });
    row(
      "plugin call, zod loaded once (sandbox.load)",
      spread(await sample(() => zodPlugin.call("check", INPUT), { warmup: 20, samples: n * 50 })),
      spread(await sample(() => plainPlugin.call("check", INPUT), { warmup: 20, samples: n * 50 })),
    );
  } finally {
    await sandbox.dispose();
  }
  return rows;
}
