// The "bare quickjs-emscripten" baseline of the sandbox benchmark: the same operations done
// with quickjs-emscripten alone, on the embedder's thread: no guest library, no limits, no
// workers, no realm per run. One precompiled WebAssembly.Module serves every instance, as
// in our host (so the ratio shows our layer's cost, not a recompilation).
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { newQuickJSWASMModuleFromVariant, newVariant } from "quickjs-emscripten-core";
import releaseVariant from "@jitl/quickjs-wasmfile-release-sync";

const require = createRequire(import.meta.url);
let compiled = null;

function wasmModule() {
  compiled ??= new WebAssembly.Module(readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")));
  return compiled;
}

/** A bare engine: its own wasm instance (own memory), from the shared compiled module. */
export async function bareEngine() {
  return newQuickJSWASMModuleFromVariant(newVariant(releaseVariant, { wasmModule: wasmModule() }));
}

/** Evaluates `source` as a module in `ctx`, calls its default export, returns the number. */
export function evalDefault(ctx, source, filename) {
  const namespace = ctx.unwrapResult(ctx.evalCode(source, filename, { type: "module" }));
  // A module without top-level await evaluates to its namespace; one with it, to a promise.
  const state = ctx.getPromiseState(namespace);
  if (state.type !== "fulfilled") throw new Error(`bare: module evaluation is ${state.type}`);
  const exports = state.notAPromise ? namespace : state.value;
  const fn = ctx.getProp(exports, "default");
  const result = ctx.unwrapResult(ctx.callFunction(fn, ctx.undefined));
  const value = ctx.getNumber(result);
  result.dispose();
  fn.dispose();
  if (exports !== namespace) exports.dispose();
  namespace.dispose();
  return value;
}

/** A bare "sandbox": engine instance + runtime + context, with `source` evaluated in it. */
export async function bareCreateAndRun(source) {
  const engine = await bareEngine();
  const runtime = engine.newRuntime();
  const context = runtime.newContext();
  const value = evalDefault(context, source, "script.js");
  return {
    value,
    dispose() {
      context.dispose();
      runtime.dispose();
    },
  };
}

/** A bare "plugin": a module whose default export is kept as a handle and called from the host. */
export async function barePlugin(source, exportName) {
  const engine = await bareEngine();
  const runtime = engine.newRuntime();
  const ctx = runtime.newContext();
  const namespace = ctx.unwrapResult(ctx.evalCode(source, "plugin.js", { type: "module" }));
  const fn = ctx.getProp(namespace, exportName);
  return {
    call(n) {
      const arg = ctx.newNumber(n);
      const result = ctx.unwrapResult(ctx.callFunction(fn, ctx.undefined, arg));
      const value = ctx.getNumber(result);
      result.dispose();
      arg.dispose();
      return value;
    },
    dispose() {
      fn.dispose();
      namespace.dispose();
      ctx.dispose();
      runtime.dispose();
    },
  };
}

/** A bare engine kept for many runs: `freshRealm` evaluates each run in a new runtime+context
 * (the isolation our host gives every run), otherwise in one reused context. */
export async function bareReusedSandbox({ freshRealm }) {
  const engine = await bareEngine();
  let runtime = engine.newRuntime();
  let context = runtime.newContext();
  let n = 0;
  return {
    run(source) {
      if (!freshRealm) return evalDefault(context, source, `script-${n++}.js`);
      const rt = engine.newRuntime();
      const ctx = rt.newContext();
      try {
        return evalDefault(ctx, source, "script.js");
      } finally {
        ctx.dispose();
        rt.dispose();
      }
    },
    dispose() {
      context.dispose();
      runtime.dispose();
    },
  };
}
