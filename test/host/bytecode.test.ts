// Guest library code enters realms as QuickJS bytecode (host/engine/bytecode.ts), through
// functions host/engine/wasm-patch.ts adds to the engine's wasm. Tested on bare engine
// instances: the patch must find its sites in the release build we pin (otherwise every
// realm would silently parse source again, several times slower), the bytes must load into
// another instance and behave like the source, and a build without the functions must
// fall back to source.
import { describe, expect, it } from "vitest";
import { createEngineInstance, type EngineInstance } from "../../host/engine/instance.js";
import { evalLibraryCode } from "../../host/engine/bytecode.js";
import { readFileSync } from "node:fs";

const MiB = 1024 * 1024;

function evaluate(engine: EngineInstance, source: string, filename: string, expression: string): unknown {
  const runtime = engine.module.newRuntime();
  const context = runtime.newContext();
  try {
    const factory = context.unwrapResult(evalLibraryCode(context, engine, source, filename));
    context.setProp(context.global, "factory", factory);
    factory.dispose();
    const result = context.unwrapResult(context.evalCode(expression));
    const value = context.dump(result);
    result.dispose();
    return value;
  } finally {
    context.dispose();
    runtime.dispose();
  }
}

describe("guest library bytecode", () => {
  it("the pinned release build gets the bytecode functions", async () => {
    const engine = await createEngineInstance(32 * MiB);
    expect(engine.bytecode).not.toBeNull();
  });

  it("compiles once, then every instance of the module reads the same bytes and gets the same behaviour", async () => {
    const source = "(function (n) { const list = [`a${n}`, /b+/.exec('abbb')[0], { k: n }]; return JSON.stringify(list) + (function inner() { return inner.name })() })";
    const filename = `scriptbox:test-${Math.random()}`;
    const first = await createEngineInstance(32 * MiB);
    expect(first.bytecode!.cache.has(filename)).toBe(false);
    const compiled = evaluate(first, source, filename, "factory(1)");
    const bytes = first.bytecode!.cache.get(filename);
    expect(bytes).toBeInstanceOf(ArrayBuffer);
    const second = await createEngineInstance(32 * MiB);
    expect(second.bytecode!.cache.get(filename)).toBe(bytes); // shared per compiled module
    const read = evaluate(second, source, filename, "factory(1)");
    expect(read).toBe(compiled);
    expect(read).toBe('["a1","bbb",{"k":1}]inner');
  });

  it("the real guest core loads from bytecode and keeps its stack frames' file names", async () => {
    const engine = await createEngineInstance(32 * MiB);
    const source = "(function () { throw new Error('from the library') })";
    const filename = "scriptbox:stack-test";
    for (let i = 0; i < 2; i++) {
      // The first evaluation compiles; the second reads the bytes back.
      const stack = evaluate(engine, source, filename, "(() => { try { factory() } catch (e) { return e.stack } })()");
      expect(stack).toContain("scriptbox:stack-test");
    }
    const bundle = JSON.parse(readFileSync(new URL("../../dist/guest-lib/bundle.json", import.meta.url), "utf8")) as { modules: Record<string, { source: string }> };
    const core = bundle.modules.core!.source;
    expect(evaluate(engine, core, "scriptbox:core", "typeof factory")).toBe("function");
    expect(engine.bytecode!.cache.get("scriptbox:core")).toBeInstanceOf(ArrayBuffer);
  });

  it("an engine build without the functions evaluates the source (the debug variant)", async () => {
    // The debug build needs ~100 MB of wasm memory for a realm (see leak.test.ts).
    const engine = await createEngineInstance(256 * MiB, "debug");
    expect(engine.bytecode).toBeNull();
    expect(evaluate(engine, "(function () { return 42 })", "scriptbox:debug-test", "factory()")).toBe(42);
  });
});
