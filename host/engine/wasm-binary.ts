// Loads the QuickJS wasm binary once per thread and compiles it with scriptbox's patches
// (wasm-patch.ts: an export of the function table, and the bytecode loader functions).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { glueExportNames, patchEngineWasm } from "./wasm-patch.js";

export type EngineVariantName = "release" | "debug";

const VARIANT_PACKAGES: Record<EngineVariantName, string> = {
  release: "@jitl/quickjs-wasmfile-release-sync",
  debug: "@jitl/quickjs-wasmfile-debug-sync",
};

export { TABLE_EXPORT_NAME } from "./wasm-patch.js";

const require = createRequire(import.meta.url);

export function variantPackage(name: EngineVariantName): string {
  return VARIANT_PACKAGES[name];
}

export function readVariantWasm(name: EngineVariantName): Uint8Array {
  const wasmPath = require.resolve(`${VARIANT_PACKAGES[name]}/wasm`);
  return readFileSync(wasmPath);
}

/** The variant's wasm with scriptbox's patches applied. */
export function patchedVariantWasm(name: EngineVariantName): Uint8Array<ArrayBuffer> {
  // The emscripten glue names the module's (minified) exports: the patch needs a few.
  const glue = readFileSync(require.resolve(`${VARIANT_PACKAGES[name]}/emscripten-module`), "utf8");
  return patchEngineWasm(readVariantWasm(name), glueExportNames(glue));
}

const compiled = new Map<EngineVariantName, WebAssembly.Module>();

/** The patched, compiled module for a variant: compiled once per thread, shared by instances. */
export function compiledEngineModule(name: EngineVariantName): WebAssembly.Module {
  let module = compiled.get(name);
  if (!module) {
    module = new WebAssembly.Module(patchedVariantWasm(name));
    compiled.set(name, module);
  }
  return module;
}

/** Lets a thread reuse a module compiled elsewhere (WebAssembly.Module crosses postMessage). */
export function adoptCompiledEngineModule(name: EngineVariantName, module: WebAssembly.Module): void {
  compiled.set(name, module);
}
