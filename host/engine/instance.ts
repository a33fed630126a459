// One QuickJS engine instance = one wasm instance with its own capped WebAssembly.Memory.
//
// Why one instance per sandbox: QuickJS's own memory limit is not enforced in the wasm
// builds (each allocation counts as 8 bytes), while a `maximum` on the instance's Memory
// is a hard cap the engine reports as "out of memory" (DESIGN.md, measured facts).
import { newQuickJSWASMModuleFromVariant, newVariant } from "quickjs-emscripten-core";
import type { QuickJSSyncVariant, QuickJSWASMModule } from "quickjs-emscripten-core";
import * as releaseVariantModule from "@jitl/quickjs-wasmfile-release-sync";
import { TABLE_EXPORT_NAME, compiledEngineModule, type EngineVariantName } from "./wasm-binary.js";
import { bytecodeFunctions, type BytecodeFunctions } from "./bytecode.js";

const WASM_PAGE = 65536;
import { ENGINE_INITIAL_MEMORY_BYTES } from "./initial-memory.js";

export interface EngineInstance {
  readonly module: QuickJSWASMModule;
  readonly memory: WebAssembly.Memory;
  readonly table: WebAssembly.Table;
  readonly memoryLimitBytes: number;
  /** The engine build it runs (a debug build is never handed to a sandbox that asked for release). */
  readonly variant: EngineVariantName;
  /** Loads guest library code as bytecode (bytecode.ts); null when this engine build cannot. */
  readonly bytecode: BytecodeFunctions | null;
  /**
   * How many times the engine needed more memory and could not get it (the cap). At the cap
   * QuickJS may throw `null` (no room even for its "out of memory" error), and by the time
   * the host sees that `null` the unwound frames have freed their memory, so a probe of
   * the heap cannot tell it from a script's own `throw null`; a failure since the
   * activation began can (Realm.failWithGuestError). The host's own headroom probes
   * (probe) do not count.
   */
  readonly failedGrowths: () => number;
  /** Runs the host's malloc probe `fn` without counting its failed growths (headroom.ts). */
  readonly probe: <T>(fn: () => T) => T;
}

/**
 * Counts the failed growths of `memory`. emscripten's glue grows the heap from JavaScript,
 * through this very object's `grow`: its emscripten_resize_heap tries 1.2x, 1.1x, then
 * 1.05x the current size (each capped at 2 GiB, not at this memory's maximum) and stops at
 * the first that works. So a refused attempt alone is no failure (near the cap the 1.2x
 * one is refused and the 1.1x one works); three refused in a row at the same size are.
 */
function countFailedGrowths(memory: WebAssembly.Memory): { failedGrowths: () => number; probe: <T>(fn: () => T) => T } {
  let failures = 0;
  let refusedInARow = 0;
  let refusedAtBytes = -1;
  let probing = 0;
  const grow = WebAssembly.Memory.prototype.grow;
  Object.defineProperty(memory, "grow", {
    value(this: WebAssembly.Memory, pages: number): number {
      const bytes = this.buffer.byteLength;
      try {
        const previous = grow.call(this, pages);
        refusedInARow = 0;
        return previous;
      } catch (error) {
        if (bytes !== refusedAtBytes) refusedInARow = 0;
        refusedAtBytes = bytes;
        if (++refusedInARow === 3) {
          refusedInARow = 0;
          if (probing === 0) failures++;
        }
        throw error;
      }
    },
  });
  return {
    failedGrowths: () => failures,
    probe<T>(fn: () => T): T {
      probing++;
      try {
        return fn();
      } finally {
        probing--;
      }
    },
  };
}

/** The variant packages ship CommonJS typings for an ES module: take the default export either way. */
function variantFrom(namespace: unknown): QuickJSSyncVariant {
  const candidate = (namespace as { default?: unknown }).default;
  if ((candidate as { type?: unknown } | undefined)?.type === "sync") return candidate as QuickJSSyncVariant;
  return (candidate as { default: QuickJSSyncVariant }).default;
}

let debugVariant: QuickJSSyncVariant | undefined;
async function loadVariant(name: EngineVariantName): Promise<QuickJSSyncVariant> {
  if (name === "release") return variantFrom(releaseVariantModule);
  // The debug build (assertions, leak names) is a devDependency used by tests only.
  debugVariant ??= variantFrom(await import("@jitl/quickjs-wasmfile-debug-sync"));
  return debugVariant;
}

export async function createEngineInstance(memoryLimitBytes: number, variantName: EngineVariantName = "release"): Promise<EngineInstance> {
  const maximumPages = Math.floor(memoryLimitBytes / WASM_PAGE);
  const memory = new WebAssembly.Memory({ initial: ENGINE_INITIAL_MEMORY_BYTES / WASM_PAGE, maximum: maximumPages });
  const growth = countFailedGrowths(memory);
  const compiled = compiledEngineModule(variantName);
  let table: WebAssembly.Table | undefined;
  let instantiated: WebAssembly.Instance | undefined;
  const variant = newVariant(await loadVariant(variantName), {
    wasmMemory: memory,
    emscriptenModule: {
      // Our own instantiation: the same precompiled module for every instance (2 ms
      // instead of 7-10 ms to recompile), and a hold on the exported function table.
      instantiateWasm(imports: WebAssembly.Imports, receiveInstance: (instance: WebAssembly.Instance, module: WebAssembly.Module) => void) {
        const instance = new WebAssembly.Instance(compiled, imports);
        table = instance.exports[TABLE_EXPORT_NAME] as WebAssembly.Table;
        instantiated = instance;
        receiveInstance(instance, compiled);
        return instance.exports;
      },
    } as never,
  });
  const module = await newQuickJSWASMModuleFromVariant(variant);
  if (!table || !instantiated) throw new Error("engine: the patched wasm did not export its function table");
  const bytecode = bytecodeFunctions(instantiated, compiled, module);
  return { module, memory, table, memoryLimitBytes: maximumPages * WASM_PAGE, variant: variantName, bytecode, failedGrowths: growth.failedGrowths, probe: growth.probe };
}
