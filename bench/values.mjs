// Values crossing the boundary: what a script pays (its run's CPU time, as stats report
// it) to return or receive structured data, beside the engine's own JSON writer and parser
// on the same data in the same sandbox: a run that returns JSON.stringify(value) (a string
// crosses without the marshal module) and a run that receives the JSON text and parses it.
// Blocks of each alternate, so both see the same load.
import { createSandbox } from "../dist/src/index.js";
import { spread } from "./stats.mjs";

const RECORDS = "Array.from({ length: 10000 }, (_, i) => ({ id: i, name: 'item ' + i, done: i % 2 === 0, score: i / 8 }))";
const NUMBERS = "Array.from({ length: 100000 }, (_, i) => i * 3)";

const records = Array.from({ length: 10000 }, (_, i) => ({ id: i, name: `item ${i}`, done: i % 2 === 0, score: i / 8 }));

const CASES = {
  recordsOut: {
    ours: { source: `export default () => ${RECORDS}` },
    floor: { source: `export default () => JSON.stringify(${RECORDS})` },
  },
  numbersOut: {
    ours: { source: `export default () => ${NUMBERS}` },
    floor: { source: `export default () => JSON.stringify(${NUMBERS})` },
  },
  recordsIn: {
    ours: { source: "export default (records) => records.length", input: records },
    floor: { source: "export default (text) => JSON.parse(text).length", input: JSON.stringify(records) },
  },
};

async function cpuOf(sandbox, { source, input }) {
  const result = await sandbox.run(source, input === undefined ? {} : { input });
  if (!result.ok) throw new Error(`values bench: ${result.error.message}`);
  return result.stats.cpuTimeMs;
}

export async function benchValues({ quick = false } = {}) {
  const blocks = quick ? 3 : 8;
  const perBlock = 5;
  const sandbox = await createSandbox({ limits: { memoryBytes: 128 * 1024 * 1024, cpuTimeMs: 60_000, wallTimeMs: 60_000 } });
  try {
    const out = {};
    for (const [name, pair] of Object.entries(CASES)) {
      const ours = [];
      const floor = [];
      for (let i = 0; i < 2; i++) {
        await cpuOf(sandbox, pair.ours);
        await cpuOf(sandbox, pair.floor);
      }
      for (let block = 0; block < blocks; block++) {
        for (let i = 0; i < perBlock; i++) ours.push(await cpuOf(sandbox, pair.ours));
        for (let i = 0; i < perBlock; i++) floor.push(await cpuOf(sandbox, pair.floor));
      }
      out[name] = { ours: spread(ours), floor: spread(floor) };
    }
    return out;
  } finally {
    await sandbox.dispose();
  }
}
