// readOwnProps (host/engine/own-props.ts) reads the guest core's hooks with keys made from
// names written into the engine once, instead of quickjs-emscripten's getProp: it must read
// what the library reads, free every key it makes, and at the heap's cap fail with a
// RangeError that leaves nothing behind. Every sandbox test runs over it as well (the host
// calls the core only through the hooks it reads).
import type { QuickJSContext } from "quickjs-emscripten-core";
import { describe, expect, test } from "vitest";
import { createEngineInstance, type EngineInstance } from "../../host/engine/instance.js";
import { moduleHeap } from "../../host/engine/internals.js";
import { readOwnProps } from "../../host/engine/own-props.js";

const MiB = 1024 * 1024;

function contextOn(engine: EngineInstance) {
  const runtime = engine.module.newRuntime();
  const ctx = runtime.newContext();
  return { ctx, runtime, dispose: () => (ctx.dispose(), runtime.dispose()) };
}

function counts(ctx: QuickJSContext, runtime: { computeMemoryUsage(): ReturnType<QuickJSContext["newObject"]> }) {
  const usage = runtime.computeMemoryUsage();
  const dumped = ctx.dump(usage) as { obj_count: number; malloc_count: number; str_count: number; malloc_size: number };
  usage.dispose();
  return dumped;
}

describe("readOwnProps", () => {
  test("reads what the library's getProp reads, as independent owned handles; known names write nothing more into the engine", async () => {
    const engine = await createEngineInstance(64 * MiB);
    const { ctx, dispose } = contextOn(engine);
    try {
      const object = ctx.unwrapResult(ctx.evalCode(`Object.freeze({ add: (a, b) => a + b, answer: 42, "héllo wörld": "utf-8 key", nested: { deep: true } })`));
      const read = readOwnProps(ctx, engine, object, ["add", "answer", "héllo wörld", "nested", "missing"]);
      const sum = ctx.unwrapResult(ctx.callFunction(read.add, ctx.undefined, ctx.newNumber(2), ctx.newNumber(40)));
      expect(ctx.getNumber(sum)).toBe(42);
      sum.dispose();
      expect(ctx.getNumber(read.answer)).toBe(42);
      expect(ctx.getString(read["héllo wörld"])).toBe("utf-8 key");
      expect(ctx.typeof(read.missing)).toBe("undefined");
      const same = ctx.unwrapResult(ctx.evalCode("(a, b) => a === b"));
      for (const name of ["add", "answer", "héllo wörld", "nested", "missing"] as const) {
        const library = ctx.getProp(object, name);
        expect(ctx.unwrapResult(ctx.callFunction(same, ctx.undefined, library, read[name])).consume((result) => ctx.dump(result))).toBe(true);
        library.dispose();
      }
      same.dispose();
      // Each handle is its own: disposing one (and the object) leaves the others usable.
      read.add.dispose();
      object.dispose();
      expect(ctx.dump(read.nested)).toEqual({ deep: true });
      for (const name of ["answer", "héllo wörld", "nested", "missing"] as const) read[name].dispose();

      // Reading the same names again mallocs nothing from JavaScript (the names were
      // written once; every malloc from the host goes through this export).
      const again = ctx.unwrapResult(ctx.evalCode(`({ add: 1, answer: 2 })`));
      const heap = moduleHeap(engine.module);
      const malloc = heap._malloc;
      let mallocs = 0;
      heap._malloc = (bytes: number) => (mallocs++, malloc(bytes));
      try {
        for (const handle of Object.values(readOwnProps(ctx, engine, again, ["add", "answer"]))) handle.dispose();
        expect(mallocs).toBe(0);
        for (const handle of Object.values(readOwnProps(ctx, engine, again, ["a new name"]))) handle.dispose();
        expect(mallocs).toBe(1);
      } finally {
        heap._malloc = malloc;
        again.dispose();
      }
    } finally {
      dispose();
    }
  });

  test("frees every key it makes: the engine's counts return after 500 reads, and the debug engine's teardown (which asserts on leaked values) passes", async () => {
    // The debug build needs ~100 MB of wasm memory for a context (see leak.test.ts).
    const engine = await createEngineInstance(256 * MiB, "debug");
    const { ctx, runtime, dispose } = contextOn(engine);
    const object = ctx.unwrapResult(ctx.evalCode(`({ f() {}, n: 1, s: "text" })`));
    const readAll = () => {
      for (const handle of Object.values(readOwnProps(ctx, engine, object, ["f", "n", "s", "absent"]))) handle.dispose();
    };
    readAll();
    const before = counts(ctx, runtime);
    for (let i = 0; i < 500; i++) readAll();
    const after = counts(ctx, runtime);
    expect([after.obj_count, after.malloc_count, after.str_count]).toEqual([before.obj_count, before.malloc_count, before.str_count]);
    object.dispose();
    // A JSValue this module failed to free would make JS_FreeRuntime abort the debug build.
    expect(() => dispose()).not.toThrow();
  });

  test("at the heap's limit it fails with a RangeError and leaves nothing behind (where the library would hand out QuickJS's exception as the value)", async () => {
    const engine = await createEngineInstance(64 * MiB);
    const { ctx, runtime, dispose } = contextOn(engine);
    const names = Array.from({ length: 2000 }, (_, i) => `p${i}`);
    const object = ctx.unwrapResult(ctx.evalCode(`const o = {}; for (let i = 0; i < 2000; i++) o["p" + i] = { i }; o`));
    // Warm: the names written into the engine, every key's atom made once.
    for (const handle of Object.values(readOwnProps(ctx, engine, object, names))) handle.dispose();
    const before = counts(ctx, runtime);
    // No room for even one key's string (each is freed right after its read): the first fails.
    runtime.setMemoryLimit(before.malloc_size + 8);
    try {
      expect(() => readOwnProps(ctx, engine, object, names)).toThrow(RangeError);
      expect(() => readOwnProps(ctx, engine, object, names)).toThrow(/out of memory for the key p0/);
    } finally {
      runtime.setMemoryLimit(-1);
    }
    const after = counts(ctx, runtime);
    expect([after.obj_count, after.malloc_count]).toEqual([before.obj_count, before.malloc_count]);
    // The context still works, and so does the next read.
    const { p7 } = readOwnProps(ctx, engine, object, ["p7"]);
    expect(ctx.dump(p7)).toEqual({ i: 7 });
    p7.dispose();
    object.dispose();
    dispose();
  });

  test("a read that throws (an accessor: never on the core's frozen data) fails with a RangeError and frees the handles it had made", async () => {
    const engine = await createEngineInstance(64 * MiB);
    const { ctx, runtime, dispose } = contextOn(engine);
    const object = ctx.unwrapResult(ctx.evalCode(`({ first: {}, get second() { throw new Error("no") } })`));
    const read = () => readOwnProps(ctx, engine, object, ["first", "second"]);
    expect(read).toThrow(/out of memory for the value of second/);
    const before = counts(ctx, runtime);
    for (let i = 0; i < 100; i++) expect(read).toThrow(RangeError);
    const after = counts(ctx, runtime);
    expect([after.obj_count, after.malloc_count]).toEqual([before.obj_count, before.malloc_count]);
    object.dispose();
    dispose();
  });
});
