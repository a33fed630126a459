// The lean call paths across the engine boundary (host/engine/lean-calls.ts) replace
// quickjs-emscripten's own; they must keep those paths' semantics exactly. Tested on an
// engine instance with nothing else installed, where each rule is visible on its own;
// every bridge, timer and plugin test in the suite runs over them as well.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { createEngineInstance } from "../../host/engine/instance.js";
import { installLeanCalls } from "../../host/engine/lean-calls.js";

let ctx: QuickJSContext;
beforeEach(async () => {
  const engine = await createEngineInstance(64 * 1024 * 1024);
  ctx = engine.module.newContext();
  installLeanCalls(ctx, engine);
});
afterEach(() => ctx.dispose());

function define(name: string, fn: (this: QuickJSHandle, ...args: QuickJSHandle[]) => unknown): void {
  const handle = ctx.newFunction(name, fn as never);
  ctx.setProp(ctx.global, name, handle);
  handle.dispose();
}

function evaluate(code: string): unknown {
  return ctx.unwrapResult(ctx.evalCode(code)).consume((value) => ctx.dump(value));
}

describe("guest calls into host functions", () => {
  test("arguments and `this` arrive as handles; a returned handle becomes the call's value", () => {
    define("join", function (this: QuickJSHandle, ...args) {
      const self = ctx.typeof(this) === "object" ? ctx.getProp(this, "tag").consume((t) => ctx.getString(t)) : "none";
      return ctx.newString(`${self}:${args.map((a) => String(ctx.dump(a))).join(",")}`);
    });
    expect(evaluate(`join(1, "two", true)`)).toBe("none:1,two,true");
    expect(evaluate(`({ tag: "obj", join }).join(null)`)).toBe("obj:null");
    define("nothing", () => undefined);
    expect(evaluate(`typeof nothing(1)`)).toBe("undefined");
    define("boxed", () => ({ value: ctx.newNumber(42) }));
    expect(evaluate(`boxed()`)).toBe(42);
  });

  test("a thrown host error becomes a guest exception with its name and message; { error } throws that value", () => {
    define("fails", () => {
      throw new RangeError("out of range here");
    });
    expect(evaluate(`try { fails(); "no" } catch (e) { e instanceof Error ? e.name + ": " + e.message : "not an Error" }`)).toBe(
      "RangeError: out of range here",
    );
    define("refuses", () => ({ error: ctx.newString("a plain string") }));
    expect(evaluate(`try { refuses(); "no" } catch (e) { typeof e + " " + e }`)).toBe("string a plain string");
  });

  test("argument handles die when the call returns: a kept one cannot be used later", () => {
    let kept: QuickJSHandle | null = null;
    define("keep", (value) => {
      kept = value!;
      return undefined;
    });
    evaluate(`keep({ big: "object" })`);
    expect(kept!.alive).toBe(false);
    expect(() => ctx.typeof(kept!)).toThrow(/not alive/);
  });

  test("many calls leave the engine's object and allocation counts where they were", () => {
    define("echo", (value) => value!.dup());
    const counts = () => {
      const usage = ctx.runtime.computeMemoryUsage();
      const dumped = ctx.dump(usage) as { obj_count: number; malloc_count: number };
      usage.dispose();
      return [dumped.obj_count, dumped.malloc_count];
    };
    // The same code each time, so that compiling it leaves the same traces (atoms, shapes).
    const calls = (n: number) => evaluate(`for (let i = 0; i < ${n}; i++) { echo({ i, s: "x" + i }); echo.call([i], "s" + i); }`);
    calls(10);
    calls(10);
    const before = counts();
    calls(10);
    calls(20000);
    calls(10);
    expect(counts()).toEqual(before);
  });
});

describe("host calls into guest functions", () => {
  const counts = () => {
    const usage = ctx.runtime.computeMemoryUsage();
    const dumped = ctx.dump(usage) as { obj_count: number; malloc_count: number };
    usage.dispose();
    return [dumped.obj_count, dumped.malloc_count];
  };

  test("arguments as a list or as rest parameters, `this`, the value returned", () => {
    const fn = ctx.unwrapResult(ctx.evalCode(`(function (...args) { return [this && this.tag, ...args].join("|"); })`));
    const self = ctx.unwrapResult(ctx.evalCode(`({ tag: "me" })`));
    const a = ctx.newString("a");
    const b = ctx.newNumber(2);
    expect(ctx.unwrapResult(ctx.callFunction(fn, self, a, b)).consume((v) => ctx.getString(v))).toBe("me|a|2");
    expect(ctx.unwrapResult(ctx.callFunction(fn, ctx.undefined, [b, a])).consume((v) => ctx.getString(v))).toBe("|2|a");
    expect(ctx.unwrapResult(ctx.callFunction(fn, ctx.undefined)).consume((v) => ctx.getString(v))).toBe("");
    for (const handle of [fn, self, a, b]) handle.dispose();
  });

  test("a guest exception is the call's error, as a handle of the thrown value", () => {
    const fn = ctx.unwrapResult(ctx.evalCode(`(x) => { throw new RangeError("bad " + x); }`));
    const result = ctx.callFunction(fn, ctx.undefined, ctx.newNumber(7));
    expect(result.error).toBeDefined();
    expect(ctx.dump(result.error!)).toMatchObject({ name: "RangeError", message: "bad 7" });
    result.dispose();
    fn.dispose();
  });

  test("nested calls (guest -> host -> guest) with more arguments than the shared buffer first holds", () => {
    const many = (n: number, base: number) => Array.from({ length: n }, (_, i) => ctx.newNumber(base + i));
    const sum = ctx.unwrapResult(ctx.evalCode(`(...xs) => xs.reduce((a, b) => a + b, 0)`));
    define("inner", (...args) => {
      // Called from the guest while an outer host -> guest call is running: the inner call
      // reuses (and here outgrows) the argument buffer the outer call filled.
      const extra = many(40, 1000);
      const inner = ctx.unwrapResult(ctx.callFunction(sum, ctx.undefined, [...args, ...extra]));
      extra.forEach((h) => h.dispose());
      return inner;
    });
    const outer = ctx.unwrapResult(ctx.evalCode(`(a, b, c) => inner(a, b, c) + a + b + c`));
    const abc = many(3, 1);
    const value = ctx.unwrapResult(ctx.callFunction(outer, ctx.undefined, abc)).consume((v) => ctx.getNumber(v));
    // inner: 1+2+3 + (1000..1039); outer adds 1+2+3 again.
    expect(value).toBe(6 + (40 * 1000 + (39 * 40) / 2) + 6);
    abc.forEach((h) => h.dispose());
    sum.dispose();
    outer.dispose();
  });

  test("many calls leave the engine's object and allocation counts where they were", () => {
    const fn = ctx.unwrapResult(ctx.evalCode(`(o, s) => ({ o, s: s + "!" })`));
    const call = (n: number) => {
      for (let i = 0; i < n; i++) {
        const o = ctx.newObject();
        const text = ctx.newString(`x${i}`);
        ctx.unwrapResult(ctx.callFunction(fn, ctx.undefined, o, text)).dispose();
        o.dispose();
        text.dispose();
      }
    };
    call(10);
    const before = counts();
    call(5000);
    expect(counts()).toEqual(before);
    fn.dispose();
  });
});
