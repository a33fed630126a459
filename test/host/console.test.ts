// Issue 2 §4: console formats like Node, is captured in result.logs, streamed to onLog as
// it happens, and capped by maxLogBytes with a visible marker.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, runScript, type LogEntry, type Sandbox } from "scriptbox";
import { messageOfThrown } from "../../dist/host/thrown-values.js";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox();
});
afterAll(async () => {
  await sandbox.dispose();
});

async function logsOf(source: string): Promise<string[]> {
  const result = await sandbox.run(source);
  expect(result.ok).toBe(true);
  return result.logs.map((entry) => entry.message);
}

describe("console formatting (Node's util.inspect rules)", () => {
  it("formats objects, arrays and primitives the way Node does", async () => {
    expect(await logsOf("console.log({ a: 1, b: [ 1, 2 ] }, 'text', 3, -0, 10n, null, undefined, true)")).toEqual([
      "{ a: 1, b: [ 1, 2 ] } text 3 -0 10n null undefined true",
    ]);
    expect(await logsOf("console.log({ s: \"it's\", n: { deep: { deeper: { deepest: 1 } } } })")).toEqual([
      `{ s: "it's", n: { deep: { deeper: [Object] } } }`,
    ]);
  });

  it("breaks long objects over lines and groups long numeric arrays in columns", async () => {
    const [object, numbers] = await logsOf(
      "console.log({ alpha: 'aaaaaaaaaaaaaaaa', beta: 'bbbbbbbbbbbbbbbbbbbb', gamma: 'cccccccccccccccccc', d: 1 }); console.log(Array.from({ length: 30 }, (_, i) => i + 1))",
    );
    expect(object).toBe("{\n  alpha: 'aaaaaaaaaaaaaaaa',\n  beta: 'bbbbbbbbbbbbbbbbbbbb',\n  gamma: 'cccccccccccccccccc',\n  d: 1\n}");
    expect(numbers).toBe(
      // Exactly what Node 20's util.inspect prints for the same array.
      "[\n   1,  2,  3,  4,  5,  6,  7,  8,  9,\n  10, 11, 12, 13, 14, 15, 16, 17, 18,\n  19, 20, 21, 22, 23, 24, 25, 26, 27,\n  28, 29, 30\n]",
    );
  });

  it("formats Map, Set, Date, RegExp, typed arrays, functions, classes, symbols and cycles", async () => {
    const [line] = await logsOf(
      "const o = { m: new Map([['k', { v: 1 }]]), s: new Set(['x']), d: new Date(0), r: /a+/g, u: new Uint8Array([1, 2]), f() {}, C: class Foo {}, y: Symbol('q') }; o.self = o; console.log(o)",
    );
    expect(line).toBe(
      "<ref *1> {\n  m: Map(1) { 'k' => { v: 1 } },\n  s: Set(1) { 'x' },\n  d: 1970-01-01T00:00:00.000Z,\n  r: /a+/g,\n  u: Uint8Array(2) [ 1, 2 ],\n  f: [Function: f],\n  C: [class Foo],\n  y: Symbol(q),\n  self: [Circular *1]\n}",
    );
  });

  it("prints errors with their name, message and stack", async () => {
    const [line] = await logsOf("function where() { return new TypeError('bad input') }\nconsole.error(where())");
    expect(line).toMatch(/^TypeError: bad input\n\s+at where \(script\.js:1:\d+\)/);
  });

  it("applies printf-style format specifiers", async () => {
    expect(await logsOf("console.log('%s has %d items (%i%%) %j %o', 'cart', 3.5, 42.9, { a: 1 }, [1], 'rest', { r: 1 })")).toEqual([
      "cart has 3.5 items (42%) {\"a\":1} [ 1 ] rest { r: 1 }",
    ]);
  });

  it("shows promise states and class instances", async () => {
    const [line] = await logsOf("class Point { constructor() { this.x = 1 } }; console.log(Promise.resolve(4), new Promise(() => {}), new Point(), Object.create(null))");
    expect(line).toBe("Promise { 4 } Promise { <pending> } Point { x: 1 } [Object: null prototype] {}");
  });

  it("has table, trace, assert, count, time, group and dir", async () => {
    const result = await sandbox.run(
      "console.table([{ a: 1, b: 'x' }, { a: 2 }]); console.trace('here'); console.assert(1 === 2, 'math'); console.count(); console.count(); console.group('g'); console.log('inner'); console.groupEnd(); console.dir({ a: { b: { c: {} } } }, { depth: 0 }); console.time('t'); console.timeEnd('t')",
    );
    expect(result.ok).toBe(true);
    const entries = result.logs.map((l) => [l.level, l.message]);
    expect(entries[0]).toEqual(["log", "┌─────────┬───┬─────┐\n│ (index) │ a │ b   │\n├─────────┼───┼─────┤\n│ 0       │ 1 │ 'x' │\n│ 1       │ 2 │     │\n└─────────┴───┴─────┘"]);
    expect(entries[1]![0]).toBe("trace");
    expect(entries[1]![1]).toMatch(/^Trace: here\n\s+at /);
    expect(entries[2]).toEqual(["error", "Assertion failed: math"]);
    expect(entries.slice(3, 7)).toEqual([["info", "default: 1"], ["info", "default: 2"], ["log", "g"], ["log", "  inner"]]);
    expect(entries[7]).toEqual(["log", "{ a: [Object] }"]);
    expect(entries[8]![1]).toMatch(/^t: \d+ms$/);
  });

  it("records each level with a timestamp", async () => {
    const before = Date.now();
    const result = await sandbox.run("console.log('l'); console.info('i'); console.warn('w'); console.error('e'); console.debug('d')");
    expect(result.logs.map((l) => l.level)).toEqual(["log", "info", "warn", "error", "debug"]);
    for (const entry of result.logs) expect(entry.time).toBeGreaterThanOrEqual(before);
  });
});

describe("log capture", () => {
  it("streams entries to onLog as they happen, before the run ends", async () => {
    const seen: { message: string; at: number }[] = [];
    const streaming = await createSandbox({ onLog: (entry: LogEntry) => seen.push({ message: entry.message, at: Date.now() }) });
    try {
      const result = await streaming.run(
        "console.log('first'); await new Promise(r => setTimeout(r, 300)); console.log('second'); export default () => 1",
      );
      const settledAt = Date.now();
      expect(result.logs.map((l) => l.message)).toEqual(["first", "second"]);
      expect(seen.map((s) => s.message)).toEqual(["first", "second"]);
      // "first" reached the embedder while the script was still waiting on its timer.
      expect(settledAt - seen[0]!.at).toBeGreaterThanOrEqual(250);
    } finally {
      await streaming.dispose();
    }
  });

  it("a listener that throws anything (null, a Symbol, a revoked Proxy) costs a warning, not the process, the run or the other entries", async () => {
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const thrown: unknown[] = [null, Symbol("odd"), revoked.proxy, { get message(): string { throw new Error("no"); } }, new Error("listener broke")];
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    let delivered = 0;
    const noisy = await createSandbox({
      onLog: () => {
        throw thrown[delivered++ % thrown.length];
      },
    });
    try {
      // A flood of entries, each making the listener throw: one warning a second, not one
      // per entry (one per entry stalled the embedder's thread for seconds).
      const started = performance.now();
      const flood = await noisy.run("for (let i = 0; i < 2000; i++) console.log(i); export default () => 7");
      const elapsedMs = performance.now() - started;
      expect(flood.ok && flood.value).toBe(7);
      expect(delivered).toBe(2000);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(warnings[0]).toBe("scriptbox: onLog threw: null");
      expect(warnings.length).toBeLessThanOrEqual(Math.floor(elapsedMs / 1000) + 1);
      // Every throw is in a warning: the ones left out are counted in the next, or in one of
      // their own once the second is over.
      const counted = () =>
        warnings.reduce((sum, text) => {
          const alone = /\((\d+) like it since the last warning\)$/.exec(text);
          return sum + (alone ? Number(alone[1]) : 1 + Number(/\(and (\d+) more like it/.exec(text)?.[1] ?? 0));
        }, 0);
      await new Promise((resolve) => setTimeout(resolve, 1200));
      expect(counted()).toBe(2000);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const last = await noisy.run("console.log('once more'); export default () => 8");
      expect(last.ok && last.value).toBe(8);
      await new Promise((resolve) => setImmediate(resolve));
      expect(counted()).toBe(2001);
    } finally {
      process.off("warning", onWarning);
      await noisy.dispose();
    }
  });

  it("what a throw says is read without ever throwing, whatever was thrown", () => {
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    const cases: [unknown, string][] = [
      [new Error("listener broke"), "listener broke"],
      [null, "null"],
      [undefined, "undefined"],
      [Symbol("odd"), "Symbol(odd)"],
      [revoked.proxy, "a non-Error object"],
      [{ get message(): string { throw new Error("no"); } }, "a non-Error object"],
      [{ message: "plain object" }, "a non-Error object: plain object"],
      [Object.assign(new Error("x"), { message: 42 }), "an error whose message could not be read"],
      ["x".repeat(5000), `'${"x".repeat(5000)}`.slice(0, 1024)],
    ];
    for (const [value, described] of cases) expect(messageOfThrown(value, 1024)).toBe(described);
  });

  it("caps output at maxLogBytes and marks the cut once", async () => {
    const result = await runScript("for (let i = 0; i < 1000; i++) console.log('x'.repeat(100)); export default () => 'finished'", {
      limits: { maxLogBytes: 1000 },
    });
    expect(result).toMatchObject({ ok: true, value: "finished" });
    const kept = result.logs.slice(0, -1);
    expect(kept.reduce((n, l) => n + Buffer.byteLength(l.message), 0)).toBe(1000);
    expect(result.logs.at(-1)).toMatchObject({ level: "warn", message: "[scriptbox] console output truncated: maxLogBytes limit (1000 bytes) reached" });
  });

  it("cuts on a character boundary", async () => {
    const result = await runScript("console.log('é'.repeat(10))", { limits: { maxLogBytes: 5 } });
    expect(result.logs[0]!.message).toBe("éé");
  });
});
