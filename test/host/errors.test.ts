// Issue 2 §7: syntax errors with file:line:column; uncaught exceptions (also `throw 42`)
// and unhandled promise rejections fail the run with name, message and the guest stack.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type RunResult, type Sandbox } from "scriptbox";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox();
});
afterAll(async () => {
  await sandbox.dispose();
});

function failure(result: RunResult) {
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error("expected a failure");
  return result.error;
}

describe("syntax errors", () => {
  it("report file:line:column for JavaScript", async () => {
    const error = failure(await sandbox.run("const ok = 1;\nconst = 2;", { filename: "job.js" }));
    expect(error).toMatchObject({ kind: "syntax", name: "SyntaxError" });
    expect(error.message).toMatch(/^job\.js:2:7: /);
  });

  it("report file:line:column for TypeScript (from the transpiler)", async () => {
    const error = failure(await sandbox.run("let a: number = 1;\nlet b = (;\n", { filename: "job.ts" }));
    expect(error).toMatchObject({ kind: "syntax", name: "SyntaxError" });
    expect(error.message).toMatch(/^job\.ts:2:10: /);
  });

  it("are not confused with a SyntaxError thrown at run time", async () => {
    const error = failure(await sandbox.run("JSON.parse('{')", { filename: "job.js" }));
    expect(error).toMatchObject({ kind: "script", name: "SyntaxError" });
    expect(error.stack).toContain("job.js:1:");
  });
});

describe("uncaught exceptions", () => {
  it("in module code fail the run with name, message and stack", async () => {
    const error = failure(await sandbox.run("function f() { throw new RangeError('too far') }\nf()", { filename: "job.js" }));
    expect(error).toMatchObject({ kind: "script", name: "RangeError", message: "too far" });
    expect(error.stack).toMatch(/^RangeError: too far\n\s+at f \(job\.js:1:\d+\)/);
  });

  it("in the default function fail the run", async () => {
    const error = failure(await sandbox.run("export default async () => { await null; throw new TypeError('late') }"));
    expect(error).toMatchObject({ kind: "script", name: "TypeError", message: "late" });
  });

  it("of non-Error values say what was thrown", async () => {
    expect(failure(await sandbox.run("throw 42"))).toMatchObject({ kind: "script", name: "Error", message: "Uncaught 42" });
    expect(failure(await sandbox.run("export default () => { throw { code: 'E1' } }"))).toMatchObject({ message: "Uncaught { code: 'E1' }" });
    expect(failure(await sandbox.run("throw 'text'"))).toMatchObject({ message: "Uncaught 'text'" });
  });

  it("with a huge message or name reach the embedder cut (16 KiB message, 256-character name, stack at a line's end within 64 KiB)", async () => {
    const big = await createSandbox({ limits: { memoryBytes: 256 * 1024 * 1024 } });
    try {
      const message = failure(await big.run("export default () => { throw new Error('x'.repeat(20e6)) }", { filename: "big.js" }));
      expect(message.message).toBe(`${"x".repeat(16 * 1024)}... ${20e6 - 16 * 1024} more characters`);
      expect(message.stack.length).toBeLessThan(64 * 1024);
      expect(message.stack).toMatch(/\n    at default \(big\.js:1:\d+\)$/);
      const name = failure(await big.run("export default () => { const e = new Error('m'); e.name = 'n'.repeat(20e6); throw e }"));
      expect(name.name).toBe(`${"n".repeat(256)}... ${20e6 - 256} more characters`);
      expect(name.message).toBe("m");
      expect(name.stack.length).toBeLessThan(64 * 1024);
      // A script that replaced String.prototype methods does not break the cut.
      const poisoned = failure(await big.run("export default () => { String.prototype.slice = () => { for (;;) {} }; String.prototype.charCodeAt = null; throw new Error('y'.repeat(1e5)) }"));
      expect(poisoned.message).toBe(`${"y".repeat(16 * 1024)}... ${1e5 - 16 * 1024} more characters`);
      // A deep stack is cut at a frame's end: every line left is whole.
      const deep = failure(await big.run("export default () => { const f = (n) => n === 0 ? (() => { const e = new Error('deep'); e.stack = 'at frame\\n'.repeat(20000); throw e })() : f(n - 1); return f(3) }"));
      expect(deep.stack.length).toBeLessThan(64 * 1024 + 64);
      expect(deep.stack).toMatch(/at frame\n\.\.\. \d+ more characters/);
    } finally {
      await big.dispose();
    }
  });

  it("in a timer callback fail the run", async () => {
    const error = failure(await sandbox.run("setTimeout(() => { throw new Error('from timer') }, 1); export default () => 'done'"));
    expect(error).toMatchObject({ kind: "script", name: "Error", message: "from timer" });
  });

  it("in a queueMicrotask callback fail the run", async () => {
    const error = failure(await sandbox.run("queueMicrotask(() => { throw new Error('from microtask') }); export default () => 1"));
    expect(error).toMatchObject({ name: "Error", message: "from microtask" });
  });

  it("whose getters throw while being described still give a clear failure", async () => {
    const error = failure(
      await sandbox.run("const e = new Error('x'); Object.defineProperty(e, 'message', { get() { throw new Error('no') } }); throw e"),
    );
    expect(error.kind).toBe("script");
    expect(error.name).toBe("Error");
  });
});

describe("unhandled promise rejections", () => {
  it("fail the run even when the default function succeeds", async () => {
    const error = failure(await sandbox.run("Promise.reject(new TypeError('nobody caught me')); export default () => 1", { filename: "job.js" }));
    expect(error).toMatchObject({ kind: "script", name: "TypeError", message: "nobody caught me" });
    expect(error.stack).toContain("job.js:1:");
  });

  it("from an async function called without await fail the run", async () => {
    const error = failure(await sandbox.run("async function work() { await null; throw new Error('forgotten') }\nexport default () => { work(); return 1 }"));
    expect(error).toMatchObject({ message: "forgotten" });
  });

  it("do not fire when the rejection is handled later in the same turn", async () => {
    const result = await sandbox.run("const p = Promise.reject(new Error('x')); await null; const v = await p.catch(() => 'handled'); export default () => v");
    expect(result).toMatchObject({ ok: true, value: "handled" });
  });

  it("of non-Error reasons are reported too", async () => {
    expect(failure(await sandbox.run("Promise.reject(7); export default () => 1"))).toMatchObject({ message: "Uncaught 7" });
  });

  it("say so: error.origin is \"unhandled-rejection\", and a thrown exception has no origin", async () => {
    expect(failure(await sandbox.run("Promise.reject(new RangeError('r')); export default () => 1"))).toMatchObject({ origin: "unhandled-rejection", name: "RangeError" });
    expect(failure(await sandbox.run("export default async () => { (async () => { throw new Error('later') })(); await null; return 1; }"))).toMatchObject({
      origin: "unhandled-rejection",
    });
    expect(failure(await sandbox.run("export default () => { throw new Error('thrown') }"))).not.toHaveProperty("origin");
    // A rejected default-function promise is the run's own result, not an unhandled rejection.
    expect(failure(await sandbox.run("export default async () => { throw new Error('returned') }"))).not.toHaveProperty("origin");
  });
});

describe("a default export that is not a function (issue 13 §5)", () => {
  it("is not called: a [scriptbox] warning says so, and the run succeeds with undefined", async () => {
    for (const [exported, described] of [["{ a: 1 }", "an object"], ["42", "a number"], ["'text'", "a string"], ["null", "null"]]) {
      const result = await sandbox.run(`export default ${exported};`);
      expect(result).toMatchObject({ ok: true, value: undefined });
      expect(result.logs).toEqual([
        expect.objectContaining({ level: "warn", message: `[scriptbox] the module's default export is ${described}, not a function, so it was not called (export default a function to return a result)` }),
      ]);
    }
  });

  it("fails the run with a TypeError when an input was given", async () => {
    const error = failure(await sandbox.run("export default { a: 1 };", { input: { x: 1 } }));
    expect(error).toMatchObject({ kind: "script", name: "TypeError" });
    expect(error.message).toMatch(/^the module's default export is an object, not a function: the input has nothing to be passed to/);
  });

  it("no default export at all stays silent", async () => {
    expect(await sandbox.run("export const value = 1;")).toMatchObject({ ok: true, value: undefined, logs: [] });
  });
});
