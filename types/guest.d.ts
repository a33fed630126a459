// Types for scripts that run inside a scriptbox sandbox (package entry "scriptbox/guest").
//
// A sandbox has the ECMAScript built-ins, the web-style globals below and the builtin
// modules "http", "cloud" and "runtime". It has no DOM and no Node APIs, so use this file
// instead of the "dom" lib and @types/node, e.g. in the script project's tsconfig.json:
//
//   { "compilerOptions": { "target": "ES2022", "lib": ["ES2023"], "types": ["scriptbox/guest"],
//                          "module": "ESNext", "moduleResolution": "Bundler", "noEmit": true } }
// ("target": without it TypeScript assumes ES5 and rejects `[...headers.entries()]`.)
//
// Every global and every notable absence: docs/globals.md. `Intl` comes from the ES lib:
// scriptbox provides DateTimeFormat, NumberFormat, Collator, PluralRules,
// RelativeTimeFormat, ListFormat and DisplayNames, not Segmenter or Locale.
// Behaviour and choices: docs/http.md (web and http), docs/cloud.md (cloud), docs/network.md.

/// <reference path="./cloud.d.ts" />

// ---------------------------------------------------------------- console, timers, crypto, performance, structuredClone

interface Console {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
  trace(...data: unknown[]): void;
  dir(item?: unknown, options?: { depth?: number }): void;
  /** Node's table: rows are the object's entries; `columns` picks the properties shown. */
  table(tabularData?: unknown, columns?: string[]): void;
  assert(condition?: boolean, ...data: unknown[]): void;
  count(label?: string): void;
  countReset(label?: string): void;
  time(label?: string): void;
  timeLog(label?: string, ...data: unknown[]): void;
  timeEnd(label?: string): void;
  group(...data: unknown[]): void;
  groupCollapsed(...data: unknown[]): void;
  groupEnd(): void;
}
declare var console: Console;

declare function setTimeout<A extends unknown[]>(handler: (...args: A) => void, timeout?: number, ...args: A): number;
declare function setInterval<A extends unknown[]>(handler: (...args: A) => void, timeout?: number, ...args: A): number;
declare function clearTimeout(id: number | undefined): void;
declare function clearInterval(id: number | undefined): void;
declare function queueMicrotask(callback: () => void): void;

interface Crypto {
  /** Web Crypto: digests (SHA-1/256/384/512) and HMAC keys; other algorithms reject with NotSupportedError (docs/globals.md). */
  readonly subtle: SubtleCrypto;
  /** Fills an integer typed array (at most 65,536 bytes) from the host's CSPRNG. */
  getRandomValues<T extends Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array>(array: T): T;
  randomUUID(): `${string}-${string}-${string}-${string}-${string}`;
}
declare var crypto: Crypto;

type BufferSource = ArrayBufferView | ArrayBuffer;
type HashAlgorithmIdentifier = "SHA-1" | "SHA-256" | "SHA-384" | "SHA-512" | { name: "SHA-1" | "SHA-256" | "SHA-384" | "SHA-512" | (string & {}) } | (string & {});
type KeyUsage = "sign" | "verify";
interface HmacKeyParams {
  name: "HMAC";
  hash: HashAlgorithmIdentifier;
  /** Key length in bits; default: the hash's block size (512 for SHA-1/256, 1024 for SHA-384/512). */
  length?: number;
}
interface JsonWebKey {
  kty?: string;
  k?: string;
  alg?: string;
  use?: string;
  key_ops?: string[];
  ext?: boolean;
  [member: string]: unknown;
}
/** Web Crypto §13: an HMAC key. Its bytes are not reachable from the object. */
declare class CryptoKey {
  private constructor();
  readonly type: "secret";
  readonly extractable: boolean;
  readonly algorithm: { readonly name: "HMAC"; readonly hash: { readonly name: string }; readonly length: number };
  readonly usages: KeyUsage[];
}
/** Web Crypto §14, the subset scriptbox implements (computed by the host's node:crypto). */
declare class SubtleCrypto {
  private constructor();
  digest(algorithm: HashAlgorithmIdentifier, data: BufferSource): Promise<ArrayBuffer>;
  importKey(format: "raw", keyData: BufferSource, algorithm: HmacKeyParams, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
  importKey(format: "jwk", keyData: JsonWebKey, algorithm: HmacKeyParams, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
  exportKey(format: "raw", key: CryptoKey): Promise<ArrayBuffer>;
  exportKey(format: "jwk", key: CryptoKey): Promise<JsonWebKey>;
  generateKey(algorithm: HmacKeyParams, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
  sign(algorithm: "HMAC" | { name: "HMAC" }, key: CryptoKey, data: BufferSource): Promise<ArrayBuffer>;
  verify(algorithm: "HMAC" | { name: "HMAC" }, key: CryptoKey, signature: BufferSource, data: BufferSource): Promise<boolean>;
}

/** High Resolution Time: the host's monotonic clock, in ms since the run started (5 µs steps). */
declare class Performance {
  private constructor();
  now(): number;
  /** The start of the run, in ms since the Unix epoch. */
  readonly timeOrigin: number;
  toJSON(): { timeOrigin: number };
}
declare var performance: Performance;

/**
 * HTML structured clone: a deep copy keeping cycles, Dates, RegExps, Maps, Sets, bytes and
 * errors. Functions, symbols, promises and web objects throw a DataCloneError;
 * `transfer` with buffers is not supported (DataCloneError).
 */
declare function structuredClone<T>(value: T, options?: { transfer?: never[] }): T;

declare var self: typeof globalThis;

// ---------------------------------------------------------------- events and abort (DOM)

interface EventInit {
  bubbles?: boolean;
  cancelable?: boolean;
  composed?: boolean;
}
declare class Event {
  constructor(type: string, eventInitDict?: EventInit);
  readonly type: string;
  readonly target: EventTarget | null;
  readonly currentTarget: EventTarget | null;
  readonly eventPhase: number;
  readonly bubbles: boolean;
  readonly cancelable: boolean;
  readonly composed: boolean;
  readonly defaultPrevented: boolean;
  readonly isTrusted: boolean;
  readonly timeStamp: number;
  cancelBubble: boolean;
  returnValue: boolean;
  composedPath(): EventTarget[];
  preventDefault(): void;
  stopPropagation(): void;
  stopImmediatePropagation(): void;
  static readonly NONE: 0;
  static readonly CAPTURING_PHASE: 1;
  static readonly AT_TARGET: 2;
  static readonly BUBBLING_PHASE: 3;
}

interface CustomEventInit<T = unknown> extends EventInit {
  detail?: T;
}
declare class CustomEvent<T = unknown> extends Event {
  constructor(type: string, eventInitDict?: CustomEventInit<T>);
  readonly detail: T;
  initCustomEvent(type: string, bubbles?: boolean, cancelable?: boolean, detail?: T): void;
}

type EventListenerOrEventListenerObject = ((event: Event) => void) | { handleEvent(event: Event): void };
interface AddEventListenerOptions {
  capture?: boolean;
  once?: boolean;
  passive?: boolean;
  signal?: AbortSignal;
}
declare class EventTarget {
  constructor();
  addEventListener(type: string, callback: EventListenerOrEventListenerObject | null, options?: AddEventListenerOptions | boolean): void;
  removeEventListener(type: string, callback: EventListenerOrEventListenerObject | null, options?: { capture?: boolean } | boolean): void;
  dispatchEvent(event: Event): boolean;
}

declare class AbortSignal extends EventTarget {
  private constructor();
  readonly aborted: boolean;
  readonly reason: any;
  onabort: ((this: AbortSignal, event: Event) => void) | null;
  throwIfAborted(): void;
  static abort(reason?: unknown): AbortSignal;
  /** Aborts with a "TimeoutError" DOMException after `milliseconds`. */
  static timeout(milliseconds: number): AbortSignal;
  static any(signals: Iterable<AbortSignal>): AbortSignal;
}
declare class AbortController {
  constructor();
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

declare class DOMException extends Error {
  constructor(message?: string, options?: string | { name?: string; cause?: unknown });
  readonly name: string;
  readonly message: string;
  /** Legacy code (0 for names without one). */
  readonly code: number;
}

// ---------------------------------------------------------------- URL, encoding, base64

declare class URL {
  constructor(url: string | URL, base?: string | URL);
  static canParse(url: string | URL, base?: string | URL): boolean;
  static parse(url: string | URL, base?: string | URL): URL | null;
  href: string;
  readonly origin: string;
  protocol: string;
  username: string;
  password: string;
  host: string;
  hostname: string;
  port: string;
  pathname: string;
  search: string;
  readonly searchParams: URLSearchParams;
  hash: string;
  toString(): string;
  toJSON(): string;
}

declare class URLSearchParams {
  constructor(init?: string[][] | Record<string, string> | string | URLSearchParams);
  readonly size: number;
  append(name: string, value: string): void;
  delete(name: string, value?: string): void;
  get(name: string): string | null;
  getAll(name: string): string[];
  has(name: string, value?: string): boolean;
  set(name: string, value: string): void;
  sort(): void;
  forEach(callbackfn: (value: string, key: string, parent: URLSearchParams) => void): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
  toString(): string;
}

/** UTF-8 only. */
declare class TextEncoder {
  constructor();
  readonly encoding: "utf-8";
  encode(input?: string): Uint8Array;
  encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
}
/** UTF-8 labels only (other encodings are a RangeError). */
declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  readonly encoding: "utf-8";
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  decode(input?: ArrayBuffer | ArrayBufferView, options?: { stream?: boolean }): string;
}

declare function atob(data: string): string;
declare function btoa(data: string): string;

// ---------------------------------------------------------------- http (spec: http-module.md)

interface BlobPropertyBag {
  type?: string;
  endings?: "transparent" | "native";
}
interface FilePropertyBag extends BlobPropertyBag {
  lastModified?: number;
}
type BlobPart = string | Blob | ArrayBuffer | ArrayBufferView;

declare class Blob {
  constructor(parts?: BlobPart[], options?: BlobPropertyBag);
  readonly size: number;
  readonly type: string;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  slice(start?: number, end?: number, contentType?: string): Blob;
  text(): Promise<string>;
}
declare class File extends Blob {
  constructor(parts: BlobPart[], fileName: string, options?: FilePropertyBag);
  readonly name: string;
  readonly lastModified: number;
}

type FormDataEntryValue = File | string;
declare class FormData {
  constructor();
  append(name: string, value: string): void;
  append(name: string, value: Blob, fileName?: string): void;
  set(name: string, value: string): void;
  set(name: string, value: Blob, fileName?: string): void;
  delete(name: string): void;
  get(name: string): FormDataEntryValue | null;
  getAll(name: string): FormDataEntryValue[];
  has(name: string): boolean;
  forEach(callbackfn: (value: FormDataEntryValue, key: string, parent: FormData) => void): void;
  entries(): IterableIterator<[string, FormDataEntryValue]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<FormDataEntryValue>;
  [Symbol.iterator](): IterableIterator<[string, FormDataEntryValue]>;
}

type HeadersInit = [string, string][] | Record<string, string> | Headers;
declare class Headers {
  constructor(init?: HeadersInit);
  append(name: string, value: string): void;
  delete(name: string): void;
  get(name: string): string | null;
  getSetCookie(): string[];
  has(name: string): boolean;
  set(name: string, value: string): void;
  forEach(callbackfn: (value: string, key: string, parent: Headers) => void): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}

type BodyInit = string | ArrayBuffer | ArrayBufferView | Blob | URLSearchParams | FormData | null;

interface RequestInit {
  body?: BodyInit;
  headers?: HeadersInit;
  method?: string;
  signal?: AbortSignal | null;
  /** Replaces the URL taken from the input. */
  url?: string;
  redirect?: "follow" | "error" | "manual";
  credentials?: "omit" | "same-origin" | "include";
  integrity?: string;
  referrer?: string;
  referrerPolicy?: string;
}

declare class Request {
  constructor(input: Request | string | URL, init?: RequestInit);
  /** A Blob with the body's bytes, or null (bodies are whole values, not streams). */
  readonly body: Blob | null;
  readonly bodyUsed: boolean;
  readonly cache: "no-cache";
  readonly credentials: "omit" | "same-origin" | "include";
  readonly destination: "";
  readonly headers: Headers;
  readonly integrity: string;
  readonly keepalive: false;
  readonly method: string;
  readonly mode: "navigate";
  readonly redirect: "follow" | "error" | "manual";
  readonly referrer: string;
  readonly referrerPolicy: string;
  readonly signal: AbortSignal;
  readonly url: string;
  arrayBuffer(): Promise<ArrayBuffer>;
  blob(): Promise<Blob>;
  bytes(): Promise<Uint8Array>;
  formData(): Promise<FormData>;
  json(): Promise<any>;
  text(): Promise<string>;
  clone(): Request;
}

interface ResponseInit {
  headers?: HeadersInit;
  status?: number;
  statusText?: string;
  /** scriptbox: sets response.url. */
  url?: string;
  /** scriptbox: reading the body rejects once this signal is aborted. */
  signal?: AbortSignal;
}

declare class Response {
  constructor(body?: BodyInit, init?: ResponseInit);
  static error(): Response;
  static json(data: unknown, init?: ResponseInit): Response;
  static redirect(url: string | URL, status?: number): Response;
  /** Always null: bodies are whole values, read them with text(), json(), … */
  readonly body: null;
  readonly bodyUsed: boolean;
  readonly headers: Headers;
  readonly ok: boolean;
  readonly redirected: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly type: "basic" | "error";
  readonly url: string;
  arrayBuffer(): Promise<ArrayBuffer>;
  blob(): Promise<Blob>;
  formData(): Promise<FormData>;
  json(): Promise<any>;
  text(): Promise<string>;
  clone(): Response;
}

/** The host performs the request under the sandbox's network policy (docs/network.md). */
declare function fetch(input: Request | string | URL, init?: RequestInit): Promise<Response>;

// ---------------------------------------------------------------- builtin modules

declare module "http" {
  // The same classes as the globals of the same names (local aliases: an ambient module
  // can only export its own declarations).
  const _Blob: typeof Blob;
  type _Blob = Blob;
  const _File: typeof File;
  type _File = File;
  const _FormData: typeof FormData;
  type _FormData = FormData;
  const _Headers: typeof Headers;
  type _Headers = Headers;
  const _Request: typeof Request;
  type _Request = Request;
  const _Response: typeof Response;
  type _Response = Response;
  const _fetch: typeof fetch;
  export { _Blob as Blob, _File as File, _FormData as FormData, _Headers as Headers, _Request as Request, _Response as Response, _fetch as fetch };
}

declare module "runtime" {
  /** The sandbox's `env` option (CLI: --env K=V). */
  export const env: Readonly<Record<string, string>>;
  /**
   * An opaque placeholder for secret `name` (never its value). The host puts the value in
   * its place in request headers bound for the secret's origins, and refuses every other
   * use (another origin, the URL, the body). Throws a TypeError for an unknown name.
   */
  export function secret(name: string): string;
}
