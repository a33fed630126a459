// Loads the QuickJS wasm binary once per thread and compiles it with one small patch.
//
// The patch adds an export of the module's (already growable) function table. Nothing
// else changes: no code, no function indices. With the table in hand the host can
// install a trampoline for QuickJS's promise-rejection tracker, which quickjs-emscripten
// 0.32 does not expose but which we need to fail runs on unhandled rejections (see
// rejection-tracker.ts).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

export type EngineVariantName = "release" | "debug";

const VARIANT_PACKAGES: Record<EngineVariantName, string> = {
  release: "@jitl/quickjs-wasmfile-release-sync",
  debug: "@jitl/quickjs-wasmfile-debug-sync",
};

export const TABLE_EXPORT_NAME = "scriptboxTable";

const require = createRequire(import.meta.url);

export function variantPackage(name: EngineVariantName): string {
  return VARIANT_PACKAGES[name];
}

export function readVariantWasm(name: EngineVariantName): Uint8Array {
  const wasmPath = require.resolve(`${VARIANT_PACKAGES[name]}/wasm`);
  return readFileSync(wasmPath);
}

function readLeb128(bytes: Uint8Array, start: number): [value: number, next: number] {
  let value = 0;
  let shift = 0;
  let pos = start;
  for (;;) {
    const byte = bytes[pos++];
    if (byte === undefined) throw new Error("wasm patch: truncated LEB128");
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value >>> 0, pos];
    shift += 7;
  }
}

function encodeLeb128(value: number): number[] {
  const out: number[] = [];
  let rest = value >>> 0;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest !== 0) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0);
  return out;
}

const SECTION_TABLE = 4;
const SECTION_EXPORT = 7;
const EXTERNAL_KIND_TABLE = 0x01;

/** Returns a copy of `wasm` whose export section also exports table 0 as TABLE_EXPORT_NAME. */
export function exportFunctionTable(wasm: Uint8Array): Uint8Array<ArrayBuffer> {
  let pos = 8; // magic + version
  let sawTable = false;
  while (pos < wasm.length) {
    const id = wasm[pos]!;
    const [size, contentStart] = readLeb128(wasm, pos + 1);
    const contentEnd = contentStart + size;
    if (id === SECTION_TABLE) sawTable = true;
    if (id === SECTION_EXPORT) {
      if (!sawTable) throw new Error("wasm patch: the module defines no function table");
      const [count, entriesStart] = readLeb128(wasm, contentStart);
      const name = new TextEncoder().encode(TABLE_EXPORT_NAME);
      const content = new Uint8Array([
        ...encodeLeb128(count + 1),
        ...wasm.subarray(entriesStart, contentEnd),
        ...encodeLeb128(name.length),
        ...name,
        EXTERNAL_KIND_TABLE,
        0, // table index 0
      ]);
      const header = new Uint8Array([SECTION_EXPORT, ...encodeLeb128(content.length)]);
      const out = new Uint8Array(pos + header.length + content.length + (wasm.length - contentEnd));
      out.set(wasm.subarray(0, pos), 0);
      out.set(header, pos);
      out.set(content, pos + header.length);
      out.set(wasm.subarray(contentEnd), pos + header.length + content.length);
      return out;
    }
    pos = contentEnd;
  }
  throw new Error("wasm patch: no export section");
}

const compiled = new Map<EngineVariantName, WebAssembly.Module>();

/** The patched, compiled module for a variant: compiled once per thread, shared by instances. */
export function compiledEngineModule(name: EngineVariantName): WebAssembly.Module {
  let module = compiled.get(name);
  if (!module) {
    module = new WebAssembly.Module(exportFunctionTable(readVariantWasm(name)) as Uint8Array<ArrayBuffer>);
    compiled.set(name, module);
  }
  return module;
}

/** Lets a thread reuse a module compiled elsewhere (WebAssembly.Module crosses postMessage). */
export function adoptCompiledEngineModule(name: EngineVariantName, module: WebAssembly.Module): void {
  compiled.set(name, module);
}
