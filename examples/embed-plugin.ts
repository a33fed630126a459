// Embedding scriptbox in a Node app (this file is a Node program, not a sandbox script):
// the app loads a user's plugin once with `sandbox.load`, calls its exported functions
// many times (the plugin keeps its state between calls), and a limit stops a bad plugin
// without hurting the app or the good plugin.
//
// Run it after `npm run build`:
//   npx esbuild examples/embed-plugin.ts --format=esm --platform=node --outfile=dist/examples/embed-plugin.mjs
//   node dist/examples/embed-plugin.mjs
// ("scriptbox" resolves to this package itself; test/examples/embed-plugin.test.ts does exactly this.)
import { pathToFileURL } from "node:url";
import { createSandbox, ScriptError } from "scriptbox";

/** The plugin a user uploaded: prices order lines, and counts what it saw. */
const PRICING_PLUGIN = `
const prices = new Map();
let calls = 0;

export function configure({ currency, prices: table }) {
  for (const [sku, cents] of Object.entries(table)) prices.set(sku, cents);
  return { currency, skus: prices.size };
}

export function quote({ sku, quantity }) {
  calls++;
  const unit = prices.get(sku);
  if (unit === undefined) throw new RangeError("unknown sku " + sku);
  const discount = quantity >= 10 ? 0.1 : 0;
  return { sku, quantity, total: Math.round(unit * quantity * (1 - discount)) };
}

export function stats() {
  return { calls };
}
`;

/** A plugin that never returns from quote(). */
const RUNAWAY_PLUGIN = `
export function quote(line) {
  let n = 0;
  while (true) n += line.quantity;
}
`;

export interface EmbedReport {
  calls: number;
  totalCents: number;
  pluginStats: unknown;
  unknownSku: string;
  runaway: { kind: string; message: string };
  afterRunaway: unknown;
}

export async function main(log: (line: string) => void = console.log): Promise<EmbedReport> {
  // A small budget per call: plugins are meant to be quick.
  const sandbox = await createSandbox({ limits: { cpuTimeMs: 500, wallTimeMs: 5_000, memoryBytes: 32 * 1024 * 1024 } });
  try {
    const pricing = await sandbox.load(PRICING_PLUGIN, { filename: "pricing-plugin.js" });
    log(`loaded pricing-plugin.js, exports: ${pricing.exports.join(", ")}`);
    log(`configured: ${JSON.stringify(await pricing.call("configure", { currency: "usd", prices: { widget: 250, gadget: 1999, gizmo: 75 } }))}`);

    const skus = ["widget", "gadget", "gizmo"];
    let totalCents = 0;
    const calls = 1_000;
    const started = performance.now();
    for (let i = 0; i < calls; i++) {
      const line = await pricing.call<{ total: number }>("quote", { sku: skus[i % 3], quantity: (i % 12) + 1 });
      totalCents += line.total;
    }
    const ms = performance.now() - started;
    const pluginStats = await pricing.call("stats");
    log(`${calls} quote() calls in ${ms.toFixed(0)} ms (${((ms * 1000) / calls).toFixed(0)} µs each): total $${(totalCents / 100).toFixed(2)}; plugin says ${JSON.stringify(pluginStats)}`);

    // A plugin's exception is an error for this call only.
    let unknownSku = "";
    try {
      await pricing.call("quote", { sku: "sprocket", quantity: 1 });
    } catch (error) {
      if (!(error instanceof ScriptError)) throw error;
      unknownSku = `${error.guestName}: ${error.message}`;
      log(`quote(sprocket) failed in the plugin: ${unknownSku}`);
    }

    // The runaway plugin is stopped by the CPU limit; the app goes on.
    const runawayPlugin = await sandbox.load(RUNAWAY_PLUGIN, { filename: "runaway-plugin.js" });
    let runaway = { kind: "", message: "" };
    try {
      await runawayPlugin.call("quote", { sku: "widget", quantity: 1 });
    } catch (error) {
      if (!(error instanceof ScriptError)) throw error;
      runaway = { kind: error.kind, message: error.message };
      log(`runaway-plugin.js stopped: ${error.kind}: ${error.message}`);
    }

    // The good plugin kept its state and still answers.
    const afterRunaway = await pricing.call("quote", { sku: "gadget", quantity: 2 });
    log(`pricing-plugin.js still answers: ${JSON.stringify(afterRunaway)}`);
    return { calls, totalCents, pluginStats, unknownSku, runaway, afterRunaway };
  } finally {
    await sandbox.dispose();
  }
}

// Run as a program (node dist/examples/embed-plugin.mjs), not when imported by a test.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
