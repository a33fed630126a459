// Issue 2 §5: timers and microtasks driven by the host event loop; a run ends when the
// module, its default function and everything they started have settled.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type Sandbox } from "scriptbox";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox();
});
afterAll(async () => {
  await sandbox.dispose();
});

describe("timers", () => {
  it("fire in delay order with their extra arguments", async () => {
    const result = await sandbox.run(`
      const order = [];
      setTimeout((a, b) => order.push(a + b), 30, "thir", "ty");
      setTimeout(() => order.push("ten"), 10);
      setTimeout(() => order.push("zero"));
      export default () => order;`);
    // The default function returns the array before the timers fire; the run still waits
    // for them, but the value is the one returned (a snapshot), which was empty.
    expect(result).toMatchObject({ ok: true, value: [] });
  });

  it("keep the run alive until they have fired", async () => {
    const result = await sandbox.run(`
      const order = [];
      export default async () => {
        setTimeout(() => order.push(2), 20);
        setTimeout(() => order.push(1), 5);
        await new Promise((r) => setTimeout(r, 40));
        return order;
      };`);
    expect(result).toMatchObject({ ok: true, value: [1, 2] });
    expect(result.stats.wallTimeMs).toBeGreaterThanOrEqual(35);
  });

  it("setInterval repeats until clearInterval", async () => {
    const result = await sandbox.run(`
      let ticks = 0;
      let fifth;
      const done = new Promise((r) => (fifth = r));
      const id = setInterval(() => { if (++ticks === 5) { clearInterval(id); fifth() } }, 2);
      // Waits for the fifth tick (however slow a loaded machine is), then 30 ms more for any sixth.
      export default async () => { await done; await new Promise((r) => setTimeout(r, 30)); return ticks };`);
    expect(result).toMatchObject({ ok: true, value: 5 });
  });

  it("clearTimeout cancels, including from another timer, and ignores unknown ids", async () => {
    const result = await sandbox.run(`
      const fired = [];
      const a = setTimeout(() => fired.push("a"), 20);
      setTimeout(() => clearTimeout(a), 5);
      clearTimeout(12345); clearTimeout(undefined); clearInterval("x");
      export default async () => { await new Promise((r) => setTimeout(r, 40)); return fired };`);
    expect(result).toMatchObject({ ok: true, value: [] });
  });

  it("returns numeric ids and refuses a non-function callback like Node", async () => {
    const result = await sandbox.run(`
      const id = setTimeout(() => {}, 1);
      let error;
      try { setTimeout("alert(1)", 1) } catch (e) { error = e.name + ": " + e.message }
      export default () => [typeof id, error];`);
    expect(result).toMatchObject({ ok: true, value: ["number", 'TypeError: The "callback" argument must be of type function. Received type string (\'alert(1)\')'] });
  });

  it("an interval that is never cleared keeps the run going until the wall-time limit", async () => {
    const limited = await createSandbox({ limits: { wallTimeMs: 300 } });
    try {
      const result = await limited.run("let n = 0; setInterval(() => n++, 5); export default () => 'returned'");
      expect(result).toMatchObject({ ok: false, error: { kind: "timeout", message: "wallTimeMs limit (300 ms) exceeded" } });
      expect(result.stats.wallTimeMs).toBeGreaterThanOrEqual(300);
    } finally {
      await limited.dispose();
    }
  });
});

describe("microtasks", () => {
  it("queueMicrotask runs after the current task, in order with promise jobs", async () => {
    const result = await sandbox.run(`
      const order = [];
      queueMicrotask(() => order.push("micro 1"));
      Promise.resolve().then(() => order.push("promise"));
      queueMicrotask(() => order.push("micro 2"));
      order.push("sync");
      setTimeout(() => order.push("timer"), 0);
      export default async () => { await new Promise((r) => setTimeout(r, 10)); return order };`);
    expect(result).toMatchObject({ ok: true, value: ["sync", "micro 1", "promise", "micro 2", "timer"] });
  });

  it("refuses a non-function callback", async () => {
    const result = await sandbox.run("export default () => { try { queueMicrotask(1) } catch (e) { return e instanceof TypeError } }");
    expect(result).toMatchObject({ ok: true, value: true });
  });
});
