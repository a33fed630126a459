// Fetch §5.1 body mixin: extracting a body from BodyInit and reading it once. Bodies are
// whole values (no streams): bytes, or a string kept as is until bytes are needed.
import { URLSearchParams } from "scriptbox:web";
import { type Blob, blobBytes, createBlob, decoder, encoder, isBlob } from "./blob";
import { FormData, encodeMultipart, isFormData, parseMultipart, parseUrlencoded } from "./form-data";
import type { Headers } from "./headers";
import {
  ArrayBufferCtor,
  TypeErrorCtor,
  Uint8ArrayCtor,
  copyBufferSource,
  defineProperty,
  extractMimeType,
  jsonParse,
  promiseReject,
  promiseResolve,
  serializeMimeType,
  toStringValue,
} from "./util";

export type BodyInit = string | ArrayBuffer | ArrayBufferView | Blob | URLSearchParams | FormData | null;

export interface BodyState {
  /** The body's source: a string until bytes are needed, else bytes (never written to). */
  data: string | Uint8Array | null;
  used: boolean;
  /** Another object may hold the same bytes (clone, blob(), Request.body): copy on read. */
  shared: boolean;
  headers: Headers;
  /** ResponseOpts.signal: reading the body of an aborted response rejects with its reason. */
  signal: { aborted: boolean; reason: unknown } | null;
}

/** Fetch "extract a body": [source, Content-Type or null]. */
export function extractBody(init: unknown): [string | Uint8Array, string | null] {
  if (isBlob(init)) return [blobBytes(init), init.type || null];
  const bytes = copyBufferSource(init);
  if (bytes) return [bytes, null];
  if (isFormData(init)) return encodeMultipart(init);
  if (init instanceof URLSearchParams) return [init.toString(), "application/x-www-form-urlencoded;charset=UTF-8"];
  return [toStringValue(init).toWellFormed(), "text/plain;charset=UTF-8"];
}

/** The body as bytes (encoding a string body once). */
export function bodyBytes(state: BodyState): Uint8Array {
  const data = state.data;
  if (data === null) return new Uint8ArrayCtor(0);
  if (typeof data !== "string") return data;
  return (state.data = encoder.encode(data));
}

/** An ArrayBuffer with the body's bytes: handed over when nothing else holds them. */
function takeBuffer(state: BodyState): ArrayBuffer {
  const bytes = bodyBytes(state);
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBufferCtor;
  return !state.shared && whole ? (bytes.buffer as ArrayBuffer) : bytes.slice().buffer;
}

const fromCharCode = String.fromCharCode;
const NON_ASCII = /[^\x00-\x7f]/;

function bodyText(state: BodyState): string {
  const data = state.data;
  if (data === null) return "";
  // A string body reads back as UTF-8 decode would: without a leading BOM.
  if (typeof data === "string") return data.charCodeAt(0) === 0xfeff ? data.slice(1) : data;
  // Most small bodies (JSON of APIs) are ASCII, which decodes to itself: one native call
  // instead of the TextDecoder's argument handling. Anything else, or larger, is decoded.
  if (data.length <= 4096) {
    const binary = fromCharCode.apply(null, data as unknown as number[]);
    if (!NON_ASCII.test(binary)) return binary;
  }
  return decoder.decode(data);
}

export const bodyStates = new WeakMap<object, BodyState>();

function stateOf(target: unknown): BodyState {
  const state = bodyStates.get(target as object);
  if (!state) throw new TypeErrorCtor("Illegal invocation: not a Request or Response");
  return state;
}

/** Fetch "consume body": a used body is a TypeError; a null body reads as empty. */
function consume<T>(target: unknown, read: (state: BodyState) => T): Promise<T> {
  let state: BodyState;
  try {
    state = stateOf(target);
  } catch (error) {
    return promiseReject(error);
  }
  if (state.used) return promiseReject(new TypeErrorCtor("Body has already been used"));
  const signal = state.signal;
  if (signal && signal.aborted) return promiseReject(signal.reason);
  if (state.data === null) {
    try {
      return promiseResolve(read(state));
    } catch (error) {
      return promiseReject(error);
    }
  }
  state.used = true;
  try {
    const value = read(state);
    // The bytes are the script's now (or were decoded): the state lets go of them at once.
    // A Response's state sits in a reference cycle (its lazy headers getter), which QuickJS
    // frees only in a cycle collection, and a fetched body's bytes live in a block QuickJS
    // does not count towards that collection's trigger: kept here, a loop of large reads
    // filled the heap (issue 12). Empty, not null: a used body stays a body (Request).
    state.data = CONSUMED;
    return promiseResolve(value);
  } catch (error) {
    return promiseReject(error);
  }
}

/** What a used body's state holds instead of its bytes. */
const CONSUMED = new Uint8ArrayCtor(0);

function mimeTypeOf(state: BodyState): string {
  const mime = extractMimeType(state.headers.get("content-type"));
  return mime ? serializeMimeType(mime) : "";
}

const bodyMethods = {
  arrayBuffer(this: object): Promise<ArrayBuffer> {
    return consume(this, takeBuffer);
  },
  blob(this: object): Promise<Blob> {
    return consume(this, (state) => createBlob(new Uint8ArrayCtor(takeBuffer(state)), mimeTypeOf(state)));
  },
  bytes(this: object): Promise<Uint8Array> {
    return consume(this, (state) => new Uint8ArrayCtor(takeBuffer(state)));
  },
  formData(this: object): Promise<FormData> {
    return consume(this, (state) => {
      const mime = extractMimeType(state.headers.get("content-type"));
      if (mime?.essence === "multipart/form-data") {
        const boundary = mime.params.get("boundary");
        if (boundary === undefined || state.data === null) throw new TypeErrorCtor("multipart/form-data without a boundary or a body");
        return parseMultipart(bodyBytes(state), boundary);
      }
      if (mime?.essence === "application/x-www-form-urlencoded") return parseUrlencoded(bodyBytes(state));
      throw new TypeErrorCtor("Body is neither multipart/form-data nor application/x-www-form-urlencoded");
    });
  },
  json(this: object): Promise<unknown> {
    return consume(this, (state) => jsonParse(bodyText(state)));
  },
  text(this: object): Promise<string> {
    return consume(this, bodyText);
  },
};

/** Installs the body mixin's members on a class (Response has no bytes(): see the spec). */
export function installBody(proto: object, names: (keyof typeof bodyMethods)[]): void {
  for (const name of names) {
    defineProperty(proto, name, { value: bodyMethods[name], writable: true, enumerable: true, configurable: true });
  }
  defineProperty(proto, "bodyUsed", {
    get: function bodyUsed(this: object) {
      return stateOf(this).used;
    },
    enumerable: true,
    configurable: true,
  });
}

/** A body state for a new Request or Response, setting Content-Type when none is set. */
export function newBodyState(init: unknown, headers: Headers, contentType?: string): BodyState {
  const state: BodyState = { data: null, used: false, shared: false, headers, signal: null };
  if (init !== null && init !== undefined) {
    const [data, extracted] = extractBody(init);
    const type = contentType ?? extracted;
    state.data = data;
    state.shared = isBlob(init); // the Blob keeps the same bytes
    if (type !== null && !headers.has("content-type")) headers.append("content-type", type);
  }
  return state;
}

/** clone(): the same bytes (immutable) in a new, unused state. */
export function cloneBodyState(state: BodyState, headers: Headers): BodyState {
  if (state.used) throw new TypeErrorCtor("Cannot clone: the body has already been used");
  state.shared = true;
  return { data: state.data, used: false, shared: true, headers, signal: state.signal };
}

export { promiseResolve };
