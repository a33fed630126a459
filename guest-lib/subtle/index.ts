// Web Crypto API §14 SubtleCrypto, the part scripts reach for: digest (SHA-1/256/384/512)
// and HMAC (importKey raw/jwk, exportKey raw/jwk, generateKey, sign, verify). The hashing
// runs on the host (bridge.cryptoDigest / cryptoHmac, node:crypto); key objects and the
// algorithm rules live here. Loaded when a script first touches crypto.subtle, CryptoKey or
// SubtleCrypto. Every other algorithm and operation rejects with NotSupportedError.
import bridge from "scriptbox:bridge";
import { require as requireModule } from "scriptbox:core";
import { ArrayBufferCtor, PromiseCtor, Uint8ArrayCtor, arrayBufferSlice, freeze, isArrayBufferView } from "scriptbox:intrinsics";

type BufferSource = ArrayBuffer | ArrayBufferView;
interface JsonWebKey {
  kty: string;
  k: string;
  alg: string;
  key_ops: string[];
  ext: boolean;
}

const HASHES: Record<string, string> = { "sha-1": "SHA-1", "sha-256": "SHA-256", "sha-384": "SHA-384", "sha-512": "SHA-512" };
/** Block sizes in bits: an HMAC key's default length (Web Crypto §29.6 generate key, step 3). */
const BLOCK_BITS: Record<string, number> = { "SHA-1": 512, "SHA-256": 512, "SHA-384": 1024, "SHA-512": 1024 };
/** JWK "alg" values for HMAC (RFC 7518 §3.2). */
const JWK_ALG: Record<string, string> = { "SHA-1": "HS1", "SHA-256": "HS256", "SHA-384": "HS384", "SHA-512": "HS512" };
const HMAC_USAGES = ["sign", "verify"];
const ILLEGAL = Symbol("illegal constructor");

function domException(message: string, name: string): Error {
  const { DOMException } = requireModule("scriptbox:web") as { DOMException: new (message: string, name: string) => Error };
  return new DOMException(message, name);
}

/** WebIDL BufferSource: a copy of its bytes as an ArrayBuffer, or a TypeError. */
function bufferSource(value: unknown, what: string): ArrayBuffer {
  if (value instanceof ArrayBufferCtor) return arrayBufferSlice(value, 0);
  if (isArrayBufferView(value)) {
    const view = value as ArrayBufferView;
    return arrayBufferSlice(view.buffer as ArrayBuffer, view.byteOffset, view.byteOffset + view.byteLength);
  }
  throw new TypeError(`${what} is not a BufferSource (an ArrayBuffer, a typed array or a DataView)`);
}

type AlgorithmIdentifier = string | { name: string; [key: string]: unknown };

/** Web Crypto §18.4 normalize an algorithm: the name, case-insensitively, and its dictionary. */
function algorithmOf(algorithm: unknown): { name: string; dict: Record<string, unknown> } {
  if (typeof algorithm === "string") return { name: algorithm.toLowerCase(), dict: { name: algorithm } };
  if (typeof algorithm !== "object" || algorithm === null) throw new TypeError("the algorithm must be a string or an object with a name");
  const name = (algorithm as { name?: unknown }).name;
  if (typeof name !== "string") throw new TypeError("the algorithm object has no name");
  return { name: name.toLowerCase(), dict: algorithm as Record<string, unknown> };
}

function hashOf(algorithm: unknown): string {
  const { name } = algorithmOf(algorithm);
  const hash = HASHES[name];
  if (hash === undefined) throw domException(`unsupported hash algorithm "${name}" (supported: SHA-1, SHA-256, SHA-384, SHA-512)`, "NotSupportedError");
  return hash;
}

function notSupported(what: string): Error {
  return domException(`${what} is not supported by scriptbox (supported: digest with SHA-1/256/384/512; HMAC importKey, exportKey, generateKey, sign, verify)`, "NotSupportedError");
}

/** The HMAC parameters of importKey/generateKey: { name: "HMAC", hash, length? }. */
function hmacParams(algorithm: unknown): { hash: string; length: number | undefined } {
  const { name, dict } = algorithmOf(algorithm);
  if (name !== "hmac") throw notSupported(`the algorithm "${dict.name as string}"`);
  if (dict.hash === undefined) throw new TypeError("HMAC needs a hash (e.g. { name: \"HMAC\", hash: \"SHA-256\" })");
  const hash = hashOf(dict.hash);
  const length = dict.length === undefined ? undefined : Number(dict.length);
  if (length !== undefined && (!(length > 0) || length !== Math.floor(length))) {
    throw domException("the HMAC key length must be a positive whole number of bits", "OperationError");
  }
  return { hash, length };
}

function usagesOf(usages: unknown): string[] {
  if (usages === null || typeof usages !== "object" || typeof (usages as { length?: unknown }).length !== "number") throw new TypeError("keyUsages must be an array");
  const list: string[] = [];
  for (const usage of Array.from(usages as ArrayLike<unknown>)) {
    if (typeof usage !== "string") throw new TypeError("keyUsages must be strings");
    if (HMAC_USAGES.indexOf(usage) === -1) throw domException(`an HMAC key cannot be used to "${usage}" (only sign and verify)`, "SyntaxError");
    if (list.indexOf(usage) === -1) list.push(usage);
  }
  // Web Crypto §14.3.9 importKey step 10 / §14.3.6 generateKey step 9.
  if (list.length === 0) throw domException("a secret key needs at least one usage (sign, verify)", "SyntaxError");
  return list;
}

// ---------------------------------------------------------------- CryptoKey

interface KeyInternals {
  hash: string;
  bytes: Uint8Array;
  extractable: boolean;
  usages: string[];
  algorithm: Readonly<{ name: "HMAC"; hash: Readonly<{ name: string }>; length: number }>;
}

const keys = new WeakMap<CryptoKey, KeyInternals>();

/** Web Crypto §13: an opaque key. The key bytes stay in this module, never on the object. */
export class CryptoKey {
  constructor(key?: symbol) {
    if (key !== ILLEGAL) throw new TypeError("Illegal constructor");
  }
  get type(): "secret" {
    internals(this);
    return "secret";
  }
  get extractable(): boolean {
    return internals(this).extractable;
  }
  get algorithm(): KeyInternals["algorithm"] {
    return internals(this).algorithm;
  }
  get usages(): string[] {
    return internals(this).usages.slice();
  }
  get [Symbol.toStringTag](): string {
    return "CryptoKey";
  }
}

function internals(key: unknown): KeyInternals {
  const found = typeof key === "object" && key !== null ? keys.get(key as CryptoKey) : undefined;
  if (found === undefined) throw new TypeError("not a CryptoKey");
  return found;
}

function newHmacKey(hash: string, bytes: Uint8Array, extractable: boolean, usages: string[]): CryptoKey {
  const key = new CryptoKey(ILLEGAL);
  const algorithm = freeze({ name: "HMAC" as const, hash: freeze({ name: hash }), length: bytes.length * 8 });
  keys.set(key, { hash, bytes, extractable: extractable === true, usages, algorithm });
  return key;
}

function usableFor(key: unknown, usage: string): KeyInternals {
  const found = internals(key);
  if (found.usages.indexOf(usage) === -1) throw domException(`the key's usages (${found.usages.join(", ")}) do not include "${usage}"`, "InvalidAccessError");
  return found;
}

// ---------------------------------------------------------------- base64url for JWK

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function base64url(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += B64[n >> 18]! + B64[(n >> 12) & 63]! + (i + 1 < bytes.length ? B64[(n >> 6) & 63]! : "") + (i + 2 < bytes.length ? B64[n & 63]! : "");
  }
  return out;
}

function fromBase64url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) throw domException("the JWK's k is not base64url", "DataError");
  const out = new Uint8ArrayCtor(Math.floor((text.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let index = 0;
  for (let i = 0; i < text.length; i++) {
    value = (value << 6) | B64.indexOf(text[i]!);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (value >> bits) & 0xff;
    }
  }
  return out;
}

// ---------------------------------------------------------------- SubtleCrypto

/** Runs `work` as a promise: every failure, argument errors included, is a rejection. */
function promised<T>(work: () => T): Promise<T> {
  return new PromiseCtor<T>((resolve) => resolve(work()));
}

/** Same length and same bytes, in time independent of where they differ. */
function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

function hmac(found: KeyInternals, data: ArrayBuffer): ArrayBuffer {
  const key = arrayBufferSlice(found.bytes.buffer as ArrayBuffer, found.bytes.byteOffset, found.bytes.byteOffset + found.bytes.byteLength);
  return bridge.cryptoHmac(found.hash, key, data);
}

function hmacAlgorithm(algorithm: unknown): void {
  const { name, dict } = algorithmOf(algorithm);
  if (name !== "hmac") throw notSupported(`the algorithm "${dict.name as string}"`);
}

export class SubtleCrypto {
  constructor(key?: symbol) {
    if (key !== ILLEGAL) throw new TypeError("Illegal constructor");
  }

  digest(algorithm: AlgorithmIdentifier, data: BufferSource): Promise<ArrayBuffer> {
    return promised(() => {
      const hash = hashOf(algorithm);
      return bridge.cryptoDigest(hash, bufferSource(data, "data"));
    });
  }

  importKey(format: string, keyData: unknown, algorithm: AlgorithmIdentifier, extractable: boolean, keyUsages: string[]): Promise<CryptoKey> {
    return promised(() => {
      const params = hmacParams(algorithm);
      let bytes: Uint8Array;
      if (format === "raw") {
        bytes = new Uint8ArrayCtor(bufferSource(keyData, "keyData"));
      } else if (format === "jwk") {
        const jwk = keyData as { kty?: unknown; k?: unknown; alg?: unknown; use?: unknown; ext?: unknown; key_ops?: unknown } | null;
        if (typeof jwk !== "object" || jwk === null) throw new TypeError("keyData must be a JsonWebKey object for the jwk format");
        if (jwk.kty !== "oct") throw domException('an HMAC JWK has kty "oct"', "DataError");
        if (typeof jwk.k !== "string") throw domException("the JWK has no k", "DataError");
        bytes = fromBase64url(jwk.k);
        if (jwk.alg !== undefined && jwk.alg !== JWK_ALG[params.hash]) throw domException(`the JWK's alg ${String(jwk.alg)} does not match ${params.hash}`, "DataError");
        if (jwk.use !== undefined && jwk.use !== "sig") throw domException('the JWK\'s use must be "sig"', "DataError");
        if (jwk.ext === false && extractable) throw domException("the JWK is not extractable (ext: false)", "DataError");
      } else {
        throw notSupported(`importKey format "${String(format)}"`);
      }
      if (bytes.length === 0) throw domException("an HMAC key cannot be empty", "DataError");
      if (params.length !== undefined && params.length !== bytes.length * 8) {
        throw domException(`the key has ${bytes.length * 8} bits, not the ${params.length} given as length`, "DataError");
      }
      return newHmacKey(params.hash, bytes, extractable, usagesOf(keyUsages));
    });
  }

  exportKey(format: string, key: CryptoKey): Promise<ArrayBuffer | JsonWebKey> {
    return promised(() => {
      const found = internals(key);
      if (format !== "raw" && format !== "jwk") throw notSupported(`exportKey format "${String(format)}"`);
      if (!found.extractable) throw domException("the key is not extractable", "InvalidAccessError");
      const bytes = found.bytes;
      if (format === "raw") return arrayBufferSlice(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      return { kty: "oct", k: base64url(bytes), alg: JWK_ALG[found.hash]!, key_ops: found.usages.slice(), ext: true };
    });
  }

  generateKey(algorithm: AlgorithmIdentifier, extractable: boolean, keyUsages: string[]): Promise<CryptoKey> {
    return promised(() => {
      const params = hmacParams(algorithm);
      const bits = params.length ?? BLOCK_BITS[params.hash]!;
      if (bits > 65536 * 8) throw domException("the HMAC key length is too large", "OperationError");
      const bytes = new Uint8ArrayCtor(bridge.randomBytes(Math.ceil(bits / 8)));
      // A length that is not a whole number of bytes: the unused low bits are zero.
      if (bits % 8 !== 0) bytes[bytes.length - 1]! &= (0xff << (8 - (bits % 8))) & 0xff;
      return newHmacKey(params.hash, bytes, extractable, usagesOf(keyUsages));
    });
  }

  sign(algorithm: AlgorithmIdentifier, key: CryptoKey, data: BufferSource): Promise<ArrayBuffer> {
    return promised(() => {
      hmacAlgorithm(algorithm);
      const buffer = bufferSource(data, "data");
      return hmac(usableFor(key, "sign"), buffer);
    });
  }

  verify(algorithm: AlgorithmIdentifier, key: CryptoKey, signature: BufferSource, data: BufferSource): Promise<boolean> {
    return promised(() => {
      hmacAlgorithm(algorithm);
      const expected = new Uint8ArrayCtor(bufferSource(signature, "signature"));
      const buffer = bufferSource(data, "data");
      return equalBytes(new Uint8ArrayCtor(hmac(usableFor(key, "verify"), buffer)), expected);
    });
  }

  encrypt(): Promise<never> {
    return promised(() => {
      throw notSupported("encrypt");
    });
  }
  decrypt(): Promise<never> {
    return promised(() => {
      throw notSupported("decrypt");
    });
  }
  deriveBits(): Promise<never> {
    return promised(() => {
      throw notSupported("deriveBits");
    });
  }
  deriveKey(): Promise<never> {
    return promised(() => {
      throw notSupported("deriveKey");
    });
  }
  wrapKey(): Promise<never> {
    return promised(() => {
      throw notSupported("wrapKey");
    });
  }
  unwrapKey(): Promise<never> {
    return promised(() => {
      throw notSupported("unwrapKey");
    });
  }

  get [Symbol.toStringTag](): string {
    return "SubtleCrypto";
  }
}

export const subtle = new SubtleCrypto(ILLEGAL);
