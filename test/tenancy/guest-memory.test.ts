// Issue 10 §4 and §5: every host allocation into the guest heap checks headroom first and
// a full heap ends the run with kind `memory` (never an engine trap, never a raw
// RuntimeError, never `Uncaught null`); error kinds match docs/limits.md. Each case runs
// beside bystanders, which keep answering, and the hostile sandbox stays usable.
import { describe, expect, it } from "vitest";
import { bystandersAnswer, hostileAmongBystanders } from "./guest-helpers.js";

const limits = { memoryBytes: 24 * 1024 * 1024, cpuTimeMs: 10_000, wallTimeMs: 60_000 };

const CASES: Record<string, { source: string; kind: string; message: RegExp }> = {
  "crypto.getRandomValues in a loop": {
    source: `const keep = []; export default () => { for (;;) keep.push(crypto.getRandomValues(new Uint8Array(65536))) }`,
    kind: "memory",
    message: /^memoryBytes limit \(24 MiB\) exceeded/,
  },
  "crypto.getRandomValues in a loop that catches everything": {
    source: `const keep = []; export default () => { for (;;) { try { keep.push(crypto.getRandomValues(new Uint8Array(65536))) } catch {} } }`,
    kind: "memory",
    message: /^memoryBytes limit \(24 MiB\) exceeded/,
  },
  "FormData filling the heap": {
    source: `const keep = []; export default () => { const big = "b".repeat(1 << 20); for (;;) { const f = new FormData(); f.append("a", big + keep.length); keep.push(f) } }`,
    kind: "memory",
    message: /^memoryBytes limit \(24 MiB\) exceeded: out of memory$/,
  },
  "deeply nested JSON.parse": {
    source: `export default () => JSON.parse("[".repeat(100000) + "]".repeat(100000))`,
    kind: "limit",
    message: /^stackBytes limit \(262144 bytes\) exceeded: stack overflow$/,
  },
  "deeply nested eval": {
    source: `export default () => eval("(".repeat(100000) + "1" + ")".repeat(100000))`,
    kind: "limit",
    message: /^stackBytes limit \(262144 bytes\) exceeded: stack overflow$/,
  },
};

describe("memory and nesting limits beside bystanders", () => {
  for (const [name, { source, kind, message }] of Object.entries(CASES)) {
    it(`${name}: kind ${kind}, the sandbox stays usable`, async () => {
      const world = await hostileAmongBystanders({ limits });
      try {
        const [result] = await Promise.all([world.hostile.run(source), bystandersAnswer(world.bystanders)]);
        expect(result.ok).toBe(false);
        if (!result.ok) {
          expect(result.error.kind).toBe(kind);
          expect(result.error.message).toMatch(message);
        }
        expect(world.hostile.disposed).toBe(false);
        expect(await world.hostile.run(`export default () => "alive"`)).toMatchObject({ ok: true, value: "alive" });
        await bystandersAnswer(world.bystanders);
      } finally {
        await world.dispose();
      }
    });
  }

  it("error messages made for the guest echo at most 1024 characters of what they quote", async () => {
    const world = await hostileAmongBystanders({ limits });
    try {
      const result = await world.hostile.run(`import { secret } from "runtime";
        export default () => { try { secret("n".repeat(100000)) } catch (e) { return e.message.length } }`);
      expect(result.ok).toBe(true);
      if (result.ok) expect(result.value).toBeLessThan(1100);
    } finally {
      await world.dispose();
    }
  });
});
