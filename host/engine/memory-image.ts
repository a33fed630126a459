// A memory image: the bytes of an engine instance's memory that a fresh realm depends on,
// captured right after the realm was built and copied back before a later run, so that run
// starts from exactly the same bytes without building (~0.3 ms) or freeing (~0.1 ms) a realm
// (the pre-initialisation technique Wizer brings to QuickJS; docs/performance.md, "A memory
// image per run").
//
// What is copied: the module's statics (data and zero-initialised data: the allocator's
// state, the heap's break) and the heap up to the allocator's top chunk (dlmalloc's
// `_gm_.top`, found by shape: see allocatorTop). What is not: the C stack between them
// (garbage whenever no call is in progress, which is the only time an image is captured or
// restored) and the top chunk's free bytes and what lies past them (free as far as the
// allocator knows once its state is restored). The wasm memory never shrinks, so a restore
// never needs more memory than the instance has.
//
// What lives outside the memory has to follow it: JavaScript-side caches of pointers into
// an engine's heap register here (registerHeapCache) and are saved and put back with the
// bytes; the realm's own JavaScript objects are made anew around the image's pointers
// (Realm's image constructor).
import { createHash } from "node:crypto";
import type { EngineInstance } from "./instance.js";
import { MEMORY_LAYOUT_SECTION, readU } from "./wasm-patch.js";
import { compiledEngineModule } from "./wasm-binary.js";

/** Zero-initialised statics follow the data segments: the build's take ~3 KiB (its stack starts 2,981 bytes past the data). */
const STATICS_MARGIN_BYTES = 16 * 1024;
/** An image whose heap is larger than this (grown or fragmented by earlier runs) is not kept. */
const MAX_IMAGE_BYTES = 1024 * 1024;
/** All images of a thread together: beyond this, sandboxes build their realms (memory over speed). */
const THREAD_IMAGE_BUDGET_BYTES = 64 * 1024 * 1024;

let imageBytesInUse = 0;

interface MemoryLayout {
  dataEnd: number;
  stackTop: number;
  /** Where the allocator keeps its state (dlmalloc's `_gm_`), once found; null: not found. */
  allocatorState?: number | null;
}

const layouts = new WeakMap<WebAssembly.Module, MemoryLayout | null>();

/** The layout the patch recorded (wasm-patch.ts), or null when this build has none. */
function memoryLayout(engine: EngineInstance): MemoryLayout | null {
  const module = compiledEngineModule(engine.variant);
  let layout = layouts.get(module);
  if (layout === undefined) {
    const [section] = WebAssembly.Module.customSections(module, MEMORY_LAYOUT_SECTION);
    layout = section ? readLayout(new Uint8Array(section)) : null;
    layouts.set(module, layout);
  }
  return layout;
}

/** The section's two unsigned LEB128 numbers (wasm-patch.ts writes them), or null when it is not that. */
function readLayout(bytes: Uint8Array): MemoryLayout | null {
  try {
    const [dataEnd, next] = readU(bytes, 0);
    const [stackTop] = readU(bytes, next);
    return stackTop > dataEnd ? { dataEnd, stackTop } : null;
  } catch {
    return null; // truncated
  }
}

/** JavaScript-side state that points into an engine's heap: saved with an image, put back with it. */
export interface HeapCache {
  save(engine: EngineInstance): unknown;
  restore(engine: EngineInstance, saved: unknown): void;
}

const heapCaches: HeapCache[] = [];

/** Every module that keeps pointers into an engine's heap across realms registers its cache here. */
export function registerHeapCache(cache: HeapCache): void {
  heapCaches.push(cache);
}

/** Whether images can be made for this engine's build at all. */
export function imagesSupported(engine: EngineInstance): boolean {
  return memoryLayout(engine) !== null;
}

/**
 * A page of an image, shared by every image of the thread that holds the same bytes: the
 * images of sandboxes built alike differ in a few pages only (30 sandboxes' images: 1,740
 * pages, 118 distinct; 50 images held 562 KiB together), so a further sandbox's image costs
 * ~7-19 KiB of the worker's memory, not its ~230 KiB.
 */
interface SharedPage {
  readonly bytes: Uint8Array;
  /** Its key in `pages` (kept: hashing it again on release is work done twice). */
  readonly key: string;
  refs: number;
}

const PAGE_BYTES = 4096;
/** Shared pages by a hash of their bytes; each hash's pages are told apart by their bytes. */
const pages = new Map<string, SharedPage[]>();

function pageKey(bytes: Uint8Array): string {
  return createHash("sha1").update(bytes).digest("base64");
}

function samePage(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** The shared page holding `bytes` (copied in if no image holds them yet). */
function sharePage(bytes: Uint8Array): SharedPage {
  const key = pageKey(bytes);
  let candidates = pages.get(key);
  if (candidates === undefined) pages.set(key, (candidates = []));
  let page = candidates.find((candidate) => samePage(candidate.bytes, bytes));
  if (page === undefined) {
    page = { bytes: bytes.slice(), key, refs: 0 };
    candidates.push(page);
    imageBytesInUse += page.bytes.length;
  }
  page.refs++;
  return page;
}

function unsharePage(page: SharedPage): void {
  if (--page.refs > 0) return;
  const candidates = pages.get(page.key) ?? [];
  candidates.splice(candidates.indexOf(page), 1);
  if (candidates.length === 0) pages.delete(page.key);
  imageBytesInUse -= page.bytes.length;
}

/** The bytes of the thread's images together (each shared page counted once). */
export function threadImageBytes(): number {
  return imageBytesInUse;
}

export class MemoryImage {
  private released = false;

  private constructor(
    /** Where each page goes back, in order. */
    private readonly placed: readonly { at: number; page: SharedPage }[],
    private readonly caches: readonly unknown[],
    /** The image's size, shared pages included. */
    readonly byteLength: number,
  ) {}

  /**
   * The engine's statics and heap as they are now, or null when this build has no layout,
   * the heap is past MAX_IMAGE_BYTES, or the thread's images already hold their budget.
   * Call only between calls into the engine.
   */
  static capture(engine: EngineInstance): MemoryImage | null {
    const layout = memoryLayout(engine);
    if (layout === null) return null;
    const memory = new Uint8Array(engine.memory.buffer);
    const staticsEnd = Math.min(layout.stackTop, layout.dataEnd + STATICS_MARGIN_BYTES);
    const top = allocatorTop(memory, layout, staticsEnd);
    if (top === null) return null;
    // The top chunk's header (prev_foot, head: 8 bytes) is the allocator's too; 16 for alignment.
    const heapEnd = Math.min(memory.length, top + 16);
    const byteLength = staticsEnd + (heapEnd - layout.stackTop);
    // Budgeted as if nothing were shared: a bound, whatever the sharing turns out to be.
    if (heapEnd - layout.stackTop > MAX_IMAGE_BYTES || imageBytesInUse + byteLength > THREAD_IMAGE_BUDGET_BYTES) return null;
    const placed: { at: number; page: SharedPage }[] = [];
    for (const [from, to] of [
      [0, staticsEnd],
      [layout.stackTop, heapEnd],
    ] as const) {
      for (let at = from; at < to; at += PAGE_BYTES) placed.push({ at, page: sharePage(memory.subarray(at, Math.min(to, at + PAGE_BYTES))) });
    }
    return new MemoryImage(
      placed,
      heapCaches.map((cache) => cache.save(engine)),
      byteLength,
    );
  }

  /** Puts the captured bytes (and the heap caches) back. Call only between calls into the engine. */
  restore(engine: EngineInstance): void {
    if (this.released) throw new Error("a released memory image cannot be restored");
    const memory = new Uint8Array(engine.memory.buffer); // a view made now: the memory may have grown
    for (const { at, page } of this.placed) memory.set(page.bytes, at);
    heapCaches.forEach((cache, i) => cache.restore(engine, this.caches[i]));
  }

  /** Gives the image's pages back (a page no other image holds is dropped); the image is not used again. */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const { page } of this.placed) unsharePage(page);
  }
}

/**
 * The address of the allocator's top chunk (everything the heap has handed out lies below
 * it), read from dlmalloc's state: { smallmap, treemap, dvsize, topsize, least_addr, dv,
 * top, … } (32-bit words). The state is a zero-initialised static; it is found once, as the
 * only place among the statics where least_addr is the heap's start, top lies in the heap,
 * and the word at top + 4 (the top chunk's head) holds topsize with its flag bits. Checked
 * again at every capture; null when the shape does not hold (another allocator).
 */
function allocatorTop(memory: Uint8Array, layout: MemoryLayout, staticsEnd: number): number | null {
  const words = new Uint32Array(memory.buffer, 0, memory.length >> 2);
  const topAt = (state: number): number | null => {
    const topsize = words[(state + 12) >> 2]!;
    const least = words[(state + 16) >> 2]!;
    const top = words[(state + 24) >> 2]!;
    if (least !== layout.stackTop || top < least || top + 8 > memory.length || topsize === 0 || top + topsize > memory.length) return null;
    return (words[(top + 4) >> 2]! & ~7) === topsize ? top : null;
  };
  if (layout.allocatorState === undefined) {
    const found: number[] = [];
    for (let state = (layout.dataEnd + 3) & ~3; state + 28 <= staticsEnd; state += 4) if (topAt(state) !== null) found.push(state);
    layout.allocatorState = found.length === 1 ? found[0]! : null;
  }
  return layout.allocatorState === null ? null : topAt(layout.allocatorState);
}
