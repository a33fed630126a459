// The bridge object's maker (host/engine/host-function-object.ts) replaces
// quickjs-emscripten's newFunction + setProp with the engine's own entry points: the
// functions must behave as the library's would, and building and freeing realms with it
// must leave nothing behind in the engine. Every sandbox test runs over it as well (the
// guest core reaches the host only through this object).
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import { describe, expect, test } from "vitest";
import { newHostFunctionObject } from "../../host/engine/host-function-object.js";
import { createEngineInstance, type EngineInstance } from "../../host/engine/instance.js";
import { moduleHeap } from "../../host/engine/internals.js";
import { installLeanCalls } from "../../host/engine/lean-calls.js";

const MiB = 1024 * 1024;

function evaluate(ctx: QuickJSContext, code: string): unknown {
  return ctx.unwrapResult(ctx.evalCode(code)).consume((value) => ctx.dump(value));
}

/** A context on `engine` whose global `host` is an object made by newHostFunctionObject. */
function contextWithHost(engine: EngineInstance, functions: [string, (...args: QuickJSHandle[]) => unknown][]) {
  const runtime = engine.module.newRuntime();
  const ctx = runtime.newContext();
  installLeanCalls(ctx, engine);
  const host = newHostFunctionObject(ctx, engine, functions);
  ctx.setProp(ctx.global, "host", host);
  host.dispose();
  return { ctx, runtime, dispose: () => (ctx.dispose(), runtime.dispose()) };
}

describe("newHostFunctionObject", () => {
  test("each entry is a host function under its name: arguments in, a handle or { error } out", async () => {
    const engine = await createEngineInstance(64 * MiB);
    const calls: string[] = [];
    const { ctx, dispose } = contextWithHost(engine, [
      ["add", (a, b) => ctx.newNumber(ctx.getNumber(a!) + ctx.getNumber(b!))],
      ["note", (...args) => void calls.push(args.length === 0 ? "nothing" : ctx.getString(args[0]!))],
      ["refuse", () => ({ error: ctx.newString("refused") })],
      ["fail", () => {
        throw new TypeError("bad argument");
      }],
      ["héllo wörld", () => ctx.newString("utf-8 name")],
    ]);
    try {
      expect(evaluate(ctx, `host.add(2, 40)`)).toBe(42);
      expect(evaluate(ctx, `host.note("one"); host.note("two"); typeof host.note()`)).toBe("undefined");
      expect(calls).toEqual(["one", "two", "nothing"]);
      expect(evaluate(ctx, `try { host.refuse(); "no" } catch (e) { e }`)).toBe("refused");
      expect(evaluate(ctx, `try { host.fail(); "no" } catch (e) { e.name + ": " + e.message }`)).toBe("TypeError: bad argument");
      expect(evaluate(ctx, `host["héllo wörld"]()`)).toBe("utf-8 name");
      // As the library makes them: named, own enumerable data properties, not constructors,
      // and of length 0 (the library passes fn.length too; the engine's QTS_NewFunction
      // makes every host function with length 0, checked against ctx.newFunction below).
      expect(evaluate(ctx, `Object.keys(host).join()`)).toBe("add,note,refuse,fail,héllo wörld");
      expect(evaluate(ctx, `[host.add.name, host["héllo wörld"].name, host.add.length].join()`)).toBe("add,héllo wörld,0");
      const library = ctx.newFunction("add", (_a, _b) => undefined);
      ctx.setProp(ctx.global, "libraryAdd", library);
      library.dispose();
      expect(evaluate(ctx, `libraryAdd.length + " " + libraryAdd.name`)).toBe("0 add");
      expect(evaluate(ctx, `try { new host.add(1, 2); "constructed" } catch (e) { e.name }`)).toBe("TypeError");
    } finally {
      dispose();
    }
  });

  test("each context gets its own functions; the names are written into the engine once, not per context", async () => {
    const engine = await createEngineInstance(64 * MiB);
    const first = contextWithHost(engine, [["which", () => first.ctx.newString("first")]]);
    const second = contextWithHost(engine, [["which", () => second.ctx.newString("second")]]);
    try {
      expect(evaluate(first.ctx, `host.which()`)).toBe("first");
      expect(evaluate(second.ctx, `host.which()`)).toBe("second");
    } finally {
      first.dispose();
      second.dispose();
    }
    // Another context with the same names: nothing is written into the engine's memory from
    // JavaScript any more (every malloc from the host goes through this export).
    const heap = moduleHeap(engine.module);
    const malloc = heap._malloc;
    let mallocs = 0;
    heap._malloc = (bytes: number) => (mallocs++, malloc(bytes));
    const third = contextWithHost(engine, [["which", () => third.ctx.newString("third")]]);
    try {
      mallocs = 0;
      newHostFunctionObject(third.ctx, engine, [["which", () => undefined]]).dispose();
      expect(mallocs).toBe(0);
      newHostFunctionObject(third.ctx, engine, [["a new name", () => undefined]]).dispose();
      expect(mallocs).toBe(1);
    } finally {
      heap._malloc = malloc;
      third.dispose();
    }
  });

  test("frees everything it makes: the engine's object and allocation counts return, and the debug engine's teardown (which asserts on leaked objects) passes", async () => {
    // The debug build needs ~100 MB of wasm memory for a context (see leak.test.ts).
    const engine = await createEngineInstance(256 * MiB, "debug");
    const functions: [string, (...args: QuickJSHandle[]) => unknown][] = [
      ["echo", (value) => value!.dup()],
      ["nothing", () => undefined],
    ];
    const { ctx, runtime, dispose } = contextWithHost(engine, functions);
    const counts = () => {
      const usage = runtime.computeMemoryUsage();
      const dumped = ctx.dump(usage) as { obj_count: number; malloc_count: number; str_count: number };
      usage.dispose();
      return [dumped.obj_count, dumped.malloc_count, dumped.str_count];
    };
    // Objects made and dropped: their functions and the property keys go with them.
    const made = () => newHostFunctionObject(ctx, engine, functions).dispose();
    made();
    const beforeMaking = counts();
    for (let i = 0; i < 200; i++) made();
    expect(counts()).toEqual(beforeMaking);
    // Calls through them leave nothing either (the same code each time: same atoms and shapes).
    const calls = (n: number) => evaluate(ctx, `for (let i = 0; i < ${n}; i++) { host.echo({ i }); host.nothing(i); }`);
    calls(10);
    calls(10);
    const beforeCalls = counts();
    calls(5000);
    calls(10);
    expect(counts()).toEqual(beforeCalls);
    // A JSValue this module failed to free would make JS_FreeRuntime abort the debug build.
    expect(() => dispose()).not.toThrow();
  });

  test("at the heap's limit it fails with a RangeError and leaves nothing behind (where the library would store QuickJS's exception as a value)", async () => {
    const engine = await createEngineInstance(64 * MiB);
    const { ctx, runtime, dispose } = contextWithHost(engine, [["first", () => undefined]]);
    const usage = () => {
      const handle = runtime.computeMemoryUsage();
      const dumped = ctx.dump(handle) as { obj_count: number; malloc_count: number; malloc_size: number };
      handle.dispose();
      return dumped;
    };
    const many = Array.from({ length: 500 }, (_, i) => [`fn${i}`, () => undefined] as [string, () => undefined]);
    // Warm: the names written into the engine, the atoms made once.
    newHostFunctionObject(ctx, engine, many).dispose();
    const before = usage();
    // Room for a few functions, not 500.
    runtime.setMemoryLimit(before.malloc_size + 4096);
    try {
      expect(() => newHostFunctionObject(ctx, engine, many)).toThrow(RangeError);
      expect(() => newHostFunctionObject(ctx, engine, many)).toThrow(/out of memory for host function fn\d+/);
    } finally {
      runtime.setMemoryLimit(-1);
    }
    const after = usage();
    expect([after.obj_count, after.malloc_count]).toEqual([before.obj_count, before.malloc_count]);
    // The context still works, and so does a new object.
    const again = newHostFunctionObject(ctx, engine, [["works", () => ctx.newString("yes")]]);
    ctx.setProp(ctx.global, "again", again);
    again.dispose();
    expect(evaluate(ctx, `again.works()`)).toBe("yes");
    dispose();
  });
});
