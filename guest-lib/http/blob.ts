// File API §3 Blob and §4 File. A Blob holds an immutable byte array; slices share it
// (nothing writes to it, and readers always get copies).
import { TextDecoder, TextEncoder } from "scriptbox:web";
import {
  ArrayBufferCtor,
  TypeErrorCtor,
  Uint8ArrayCtor,
  concatBytes,
  dateNow,
  isView,
  iteratorSymbol,
  promiseResolve,
  toDictionary,
  toEnum,
  toStringValue,
  webidlInterface,
} from "./util";

export const encoder = new TextEncoder();
export const decoder = new TextDecoder();

type BlobPart = string | Blob | ArrayBuffer | ArrayBufferView;
export interface BlobOpts {
  type?: string;
  endings?: "transparent" | "native";
}
export interface FileOpts extends BlobOpts {
  lastModified?: number;
}

/**
 * File API §3.1 and §4.1: a type with characters outside U+0020-U+007E is ignored;
 * otherwise every character is lower-cased, parameters included ("TEXT/PLAIN" and
 * "text/plain;charset=UTF-8" become "text/plain" and "text/plain;charset=utf-8"), as in
 * Node and the browsers.
 */
function normalizeType(type: unknown): string {
  const s = toStringValue(type);
  if (/[^\x20-\x7e]/.test(s)) return "";
  return s.toLowerCase();
}

let blobBytes: (blob: Blob) => Uint8Array;
let setBytes: (blob: Blob, bytes: Uint8Array, type?: string) => void;
export let isBlob: (value: unknown) => value is Blob;

/** File API "process blob parts", reading options in WebIDL order (endings, then type). */
function processParts(parts: unknown, options: unknown): [Uint8Array, string] {
  const chunks: Uint8Array[] = [];
  if (parts !== undefined) {
    const method = (typeof parts === "object" || typeof parts === "function") && parts !== null ? (parts as Iterable<unknown>)[iteratorSymbol] : undefined;
    if (typeof method !== "function") throw new TypeErrorCtor("Blob parts must be a sequence (an iterable object)");
    let strings: string[] | null = null;
    const flush = () => {
      if (strings) chunks.push(encoder.encode(strings.join("")));
      strings = null;
    };
    for (const part of { [iteratorSymbol]: () => method.call(parts) } as Iterable<unknown>) {
      if (isBlob(part)) {
        flush();
        chunks.push(blobBytes(part));
      } else if (part instanceof ArrayBufferCtor) {
        flush();
        chunks.push(new Uint8ArrayCtor(part.slice(0)));
      } else if (isView(part)) {
        flush();
        chunks.push(new Uint8ArrayCtor(part.buffer.slice(part.byteOffset, part.byteOffset + part.byteLength)));
      } else (strings ??= []).push(toStringValue(part));
    }
    // endings and type are read after the parts (arguments convert left to right).
    const init = toDictionary(options, "Blob options");
    const endings = init.endings === undefined ? "transparent" : toEnum(init.endings, "transparent,native", "Blob endings");
    if (endings === "native" && strings) strings = (strings as string[]).map((s) => s.replace(/\r\n?/g, "\n"));
    flush();
    return [concatBytes(chunks.length ? chunks : [new Uint8ArrayCtor(0)]), init.type === undefined ? "" : normalizeType(init.type)];
  }
  const init = toDictionary(options, "Blob options");
  if (init.endings !== undefined) toEnum(init.endings, "transparent,native", "Blob endings");
  return [new Uint8ArrayCtor(0), init.type === undefined ? "" : normalizeType(init.type)];
}

export class Blob {
  #bytes: Uint8Array;
  #type: string;

  constructor(blobParts?: BlobPart[], options?: BlobOpts) {
    [this.#bytes, this.#type] = processParts(blobParts, options);
  }

  get size(): number {
    return this.#bytes.length;
  }

  get type(): string {
    return this.#type;
  }

  slice(start?: number, end?: number, contentType?: string): Blob {
    const size = this.#bytes.length;
    const relative = (value: number | undefined, fallback: number) => {
      if (value === undefined) return fallback;
      const n = clampLongLong(value);
      return n < 0 ? Math.max(size + n, 0) : Math.min(n, size);
    };
    const from = relative(start, 0);
    const to = relative(end, size);
    // File API slice step 4: the whole contentType is lower-cased, like the constructor's type.
    const type = contentType === undefined ? "" : toStringValue(contentType).toLowerCase();
    const blob = new Blob([], { type });
    blob.#bytes = this.#bytes.subarray(from, Math.max(from, to));
    return blob;
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    return promiseResolve(this.#bytes.slice().buffer);
  }

  bytes(): Promise<Uint8Array> {
    return promiseResolve(this.#bytes.slice());
  }

  text(): Promise<string> {
    return promiseResolve(decoder.decode(this.#bytes));
  }

  static {
    blobBytes = (blob) => blob.#bytes;
    isBlob = (value): value is Blob => typeof value === "object" && value !== null && #bytes in value;
    setBytes = (blob, bytes, type) => {
      blob.#bytes = bytes;
      if (type !== undefined) blob.#type = type;
    };
  }
}

/**
 * WebIDL §3.2.4.4 [Clamp] long long: clamp to the range, then round to the nearest
 * integer, ties to even (0.5 → 0, 1.5 → 2, 2.5 → 2), and -0 → +0.
 */
function clampLongLong(value: unknown): number {
  const n = Number(value);
  if (Number.isNaN(n)) return 0;
  const x = Math.min(Math.max(n, -Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
  const floor = Math.floor(x);
  const diff = x - floor;
  const rounded = diff < 0.5 ? floor : diff > 0.5 ? floor + 1 : floor % 2 === 0 ? floor : floor + 1;
  return rounded + 0;
}

webidlInterface(Blob, 0);

export class File extends Blob {
  #name: string;
  #lastModified: number;

  constructor(fileBits: BlobPart[], fileName: string, options?: FileOpts) {
    if (arguments.length < 2) throw new TypeErrorCtor(`File constructor: 2 arguments required, ${arguments.length} given`);
    super(fileBits, options);
    this.#name = toStringValue(fileName);
    const lastModified = toDictionary(options, "File options").lastModified;
    // WebIDL long long (modulo 2^64), and "now" when the date is not known.
    this.#lastModified = lastModified === undefined ? dateNow() : Math.trunc(Number(lastModified)) || 0;
  }

  get name(): string {
    return this.#name;
  }

  get lastModified(): number {
    return this.#lastModified;
  }
}

webidlInterface(File, 2);

/** The bytes of a Blob, shared: callers must not write to them. */
export { blobBytes };

/**
 * A Blob over bytes the caller gives up (no copy). `type` is used as given: a body's
 * blob() has Fetch's serialized MIME type, whose parameter values keep their case.
 */
export function createBlob(bytes: Uint8Array, type: string): Blob {
  const blob = new Blob([]);
  setBytes(blob, bytes, type);
  return blob;
}

/** A File over bytes the caller gives up (no copy), its type used as given. */
export function createFile(bytes: Uint8Array, name: string, type: string, lastModified?: number): File {
  const file = new File([], name, { lastModified });
  setBytes(file, bytes, type);
  return file;
}
