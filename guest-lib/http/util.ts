// Builtins captured at load (scripts may delete or replace globals), WebIDL shaping and
// byte helpers shared by the http module's classes.
export const { defineProperty, getOwnPropertyDescriptor } = Object;
export const TypeErrorCtor = TypeError;
export const RangeErrorCtor = RangeError;
export const Uint8ArrayCtor = Uint8Array;
export const ArrayBufferCtor = ArrayBuffer;
export const isView = ArrayBuffer.isView;
export const isArray = Array.isArray;
export const PromiseCtor = Promise;
export const promiseResolve = Promise.resolve.bind(Promise);
export const promiseReject = Promise.reject.bind(Promise);
export const jsonParse = JSON.parse;
export const jsonStringify = JSON.stringify;
export const dateNow = Date.now;
export const mathRandom = Math.random;
export const iteratorSymbol: typeof Symbol.iterator = Symbol.iterator;
const toStringTag: typeof Symbol.toStringTag = Symbol.toStringTag;
const ownKeys = Reflect.ownKeys;

/**
 * Shapes a class as WebIDL defines an interface: operations and attributes enumerable,
 * `@@toStringTag` on the prototype, the interface object's `length` as the IDL says.
 */
export function webidlInterface(cls: Function, length: number): void {
  const proto = cls.prototype;
  for (const key of ownKeys(proto)) {
    if (key === "constructor") continue;
    const d = getOwnPropertyDescriptor(proto, key)!;
    d.enumerable = true;
    defineProperty(proto, key, d);
  }
  defineProperty(proto, toStringTag, { value: cls.name, configurable: true });
  defineProperty(cls, "length", { value: length, configurable: true });
}

/** WebIDL DOMString/USVString (ToString, which throws a TypeError for symbols). */
export const toStringValue = (value: unknown): string => `${value as string}`;

/** WebIDL ByteString: a TypeError for characters above U+00FF. */
// Regular expressions used per call live at module level: QuickJS makes a new RegExp
// object each time a literal is evaluated, which costs as much as the match on short input.
const NOT_BYTE = /[^\x00-\xff]/;
const EDGE_HTTP_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

export function toByteString(value: unknown): string {
  const s = `${value as string}`;
  if (NOT_BYTE.test(s)) throw new TypeErrorCtor(`${JSON.stringify(s)} is not a valid ByteString`);
  return s;
}

/** WebIDL dictionary argument: undefined and null mean empty; other non-objects are a TypeError. */
export function toDictionary(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" && typeof value !== "function") throw new TypeErrorCtor(`${what} must be an object`);
  return value as Record<string, unknown>;
}

/** WebIDL enumeration: the value's string, which must be one of the allowed values. */
export function toEnum(value: unknown, allowed: string, what: string): string {
  const s = toStringValue(value);
  if (!allowed.split(",").includes(s)) throw new TypeErrorCtor(`${what}: "${s}" is not one of ${allowed}`);
  return s;
}

/** A copy of a BufferSource's bytes, or null when value is not one. */
export function copyBufferSource(value: unknown): Uint8Array | null {
  if (value instanceof ArrayBufferCtor) return new Uint8ArrayCtor(value.slice(0));
  if (isView(value)) return new Uint8ArrayCtor(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  return null;
}

/** Concatenates byte arrays with native copies. */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8ArrayCtor(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const isToken = (s: string): boolean => HTTP_TOKEN.test(s);

/** Strips leading and trailing HTTP whitespace (Fetch "normalize"). */
const isHttpWhitespace = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
export const trimHttpWhitespace = (s: string): string =>
  s.length > 0 && (isHttpWhitespace(s.charCodeAt(0)) || isHttpWhitespace(s.charCodeAt(s.length - 1))) ? s.replace(EDGE_HTTP_WHITESPACE, "") : s;

export interface MimeType {
  essence: string;
  params: Map<string, string>;
}

/** MIME Sniffing §4.4 "parse a MIME type"; null on failure. */
export function parseMimeType(input: string): MimeType | null {
  input = trimHttpWhitespace(input);
  const slash = input.indexOf("/");
  const semicolon = input.indexOf(";");
  const end = semicolon < 0 ? input.length : semicolon;
  if (slash < 0 || slash > end) return null;
  const type = input.slice(0, slash);
  const subtype = input.slice(slash + 1, end).replace(/[\t\n\r ]+$/, "");
  if (!isToken(type) || !isToken(subtype)) return null;
  const mime: MimeType = { essence: `${type}/${subtype}`.toLowerCase(), params: new Map() };
  let pos = end;
  while (pos < input.length) {
    pos++; // past ";"
    while (/[\t\n\r ]/.test(input[pos] ?? "")) pos++;
    let nameEnd = pos;
    while (nameEnd < input.length && input[nameEnd] !== ";" && input[nameEnd] !== "=") nameEnd++;
    const name = input.slice(pos, nameEnd).toLowerCase();
    pos = nameEnd;
    if (pos >= input.length) break;
    if (input[pos] === ";") continue;
    pos++; // past "="
    let value = "";
    if (input[pos] === '"') {
      pos++;
      while (pos < input.length && input[pos] !== '"') {
        if (input[pos] === "\\" && pos + 1 < input.length) pos++;
        value += input[pos++];
      }
      while (pos < input.length && input[pos] !== ";") pos++;
    } else {
      let valueEnd = input.indexOf(";", pos);
      if (valueEnd < 0) valueEnd = input.length;
      value = input.slice(pos, valueEnd).replace(/[\t\n\r ]+$/, "");
      pos = valueEnd;
      if (value === "") continue;
    }
    if (isToken(name) && /^[\t\x20-\x7e\x80-\xff]*$/.test(value) && !mime.params.has(name)) mime.params.set(name, value);
  }
  return mime;
}

export function serializeMimeType(mime: MimeType): string {
  let out = mime.essence;
  for (const [name, value] of mime.params) {
    out += `;${name}=${isToken(value) ? value : `"${value.replace(/(["\\])/g, "\\$1")}"`}`;
  }
  return out;
}

/** Fetch §3.1.7 "extract a MIME type" from a Content-Type header value (combined). */
export function extractMimeType(contentType: string | null): MimeType | null {
  if (contentType === null) return null;
  let result: MimeType | null = null;
  let essence: string | null = null;
  let charset: string | undefined;
  for (const value of contentType.split(",")) {
    const mime = parseMimeType(value);
    if (!mime || mime.essence === "*/*") continue;
    result = mime;
    if (mime.essence !== essence) {
      charset = mime.params.get("charset");
      essence = mime.essence;
    } else if (!mime.params.has("charset") && charset !== undefined) mime.params.set("charset", charset);
  }
  return result;
}

const fromCharCode = String.fromCharCode;

/** Bytes as a string of U+0000-U+00FF, one char per byte (native copies, 8 KiB at a time). */
export function bytesToBinary(bytes: Uint8Array): string {
  const parts: string[] = [];
  for (let i = 0; i < bytes.length; i += 8192) parts.push(fromCharCode.apply(null, bytes.subarray(i, i + 8192) as unknown as number[]));
  return parts.join("");
}

/** A string of U+0000-U+00FF as bytes (the inverse of bytesToBinary). */
export function binaryToBytes(binary: string): Uint8Array {
  const bytes = new Uint8ArrayCtor(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
