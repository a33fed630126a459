// Bytes written straight into an engine instance's heap, then handed to the guest as an
// ArrayBuffer without another copy (issue 12: one copy from the socket into the guest).
//
// quickjs-emscripten 0.32's QTS_NewArrayBuffer is QuickJS's JS_NewArrayBuffer with a free
// function: the ArrayBuffer adopts the malloc'd block it is given (the library's own
// newArrayBuffer mallocs a staging block, copies the host bytes in, and hands the block
// over). So a block malloc'd here, filled chunk by chunk as the bytes arrive, becomes the
// guest's ArrayBuffer as it is; QuickJS frees it when the ArrayBuffer is collected.
//
// The block is our own malloc, checked (0: no room), unlike the library's staging malloc
// (see headroom.ts). Until it is adopted it belongs to whoever allocated it: release()
// frees it, at most once.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import type { EngineInstance } from "./instance.js";
import { contextPointer, moduleHeap } from "./internals.js";

interface ArrayBufferFfi {
  QTS_NewArrayBuffer(ctx: number, buffer: number, length: number): number;
  QTS_ResolveException(ctx: number, value: number): number;
  QTS_FreeValuePointer(ctx: number, value: number): void;
}

export class EngineBytes {
  readonly length: number;
  #engine: EngineInstance;
  #pointer: number;
  #view: Uint8Array;
  #onGone: ((block: EngineBytes) => void) | null;

  /**
   * A block of `length` (> 0) bytes in the engine's heap, or null when malloc finds no
   * room. `onGone` runs once, when the block stops being ours (adopted or released).
   */
  static allocate(engine: EngineInstance, length: number, onGone?: (block: EngineBytes) => void): EngineBytes | null {
    if (!Number.isSafeInteger(length) || length <= 0) throw new RangeError(`EngineBytes: bad length ${length}`);
    const pointer = moduleHeap(engine.module)._malloc(length);
    return pointer === 0 ? null : new EngineBytes(engine, pointer, length, onGone ?? null);
  }

  private constructor(engine: EngineInstance, pointer: number, length: number, onGone: ((block: EngineBytes) => void) | null) {
    this.#engine = engine;
    this.#pointer = pointer;
    this.length = length;
    this.#view = new Uint8Array(engine.memory.buffer);
    this.#onGone = onGone;
  }

  /** Marks the block as no longer ours; returns its address (0 if it already was not). */
  #giveUp(): number {
    const pointer = this.#pointer;
    this.#pointer = 0;
    const onGone = this.#onGone;
    this.#onGone = null;
    if (pointer !== 0) onGone?.(this);
    return pointer;
  }

  /** Whether the block is still ours (not yet adopted or released). */
  get alive(): boolean {
    return this.#pointer !== 0;
  }

  /** Copies `chunk` into the block at `offset`; never writes outside the block. */
  write(chunk: Uint8Array, offset: number): void {
    if (this.#pointer === 0) throw new Error("EngineBytes: the block was released");
    if (!(offset >= 0 && offset + chunk.byteLength <= this.length)) throw new RangeError("EngineBytes: write outside the block");
    // The heap's ArrayBuffer is replaced when the wasm memory grows (the guest may run
    // between two chunks): a view of the old one is detached (byteLength 0).
    let view = this.#view;
    if (view.byteLength === 0 || view.buffer !== this.#engine.memory.buffer) view = this.#view = new Uint8Array(this.#engine.memory.buffer);
    view.set(chunk, this.#pointer + offset);
  }

  /**
   * The block as a guest ArrayBuffer (adopted: no copy), or null when QuickJS could not
   * make the object (out of memory); the block is freed either way and no longer ours.
   */
  adopt(context: QuickJSContext): QuickJSHandle | null {
    if (this.#pointer === 0) throw new Error("EngineBytes: the block was released");
    const pointer = this.#giveUp();
    const ffi = (context as unknown as { ffi: ArrayBufferFfi }).ffi;
    const ctx = contextPointer(context);
    const value = ffi.QTS_NewArrayBuffer(ctx, pointer, this.length);
    const error = ffi.QTS_ResolveException(ctx, value);
    if (error !== 0) {
      // JS_NewArrayBuffer failed before it took the block: it is still ours to free.
      ffi.QTS_FreeValuePointer(ctx, error);
      ffi.QTS_FreeValuePointer(ctx, value);
      moduleHeap(this.#engine.module)._free(pointer);
      return null;
    }
    return (context as unknown as { memory: { heapValueHandle(ptr: number): QuickJSHandle } }).memory.heapValueHandle(value);
  }

  /** Frees the block if it is still ours. */
  release(): void {
    const pointer = this.#giveUp();
    if (pointer !== 0) moduleHeap(this.#engine.module)._free(pointer);
  }

  /** release(), under the name the realm's owned set calls. */
  dispose(): void {
    this.release();
  }
}
