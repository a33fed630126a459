// The lean guest-to-host call path (host/engine/host-calls.ts) replaces quickjs-emscripten's
// own; it must keep that path's semantics exactly. Tested on a bare engine, where each rule
// is visible on its own; every bridge test in the suite runs over it as well.
import { newQuickJSWASMModuleFromVariant, type QuickJSContext, type QuickJSHandle } from "quickjs-emscripten-core";
import releaseVariant from "@jitl/quickjs-wasmfile-release-sync";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { installLeanHostCalls } from "../../host/engine/host-calls.js";

let ctx: QuickJSContext;
beforeEach(async () => {
  const module = await newQuickJSWASMModuleFromVariant(releaseVariant as never);
  ctx = module.newContext();
  installLeanHostCalls(ctx);
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
