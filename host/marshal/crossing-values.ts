// Values crossing the sandbox boundary, host side. Two steps:
//  - toCrossable (embedder thread): checks that a value the embedder passes in (input,
//    plugin arguments) is JSON-like data, Dates or bytes, and returns a normalised copy
//    that survives postMessage unchanged (Dates become ISO strings, bytes Uint8Arrays).
//  - encodeForGuest / decodeFromGuest (worker): the wire format shared with
//    guest-lib/core/marshal.ts (JSON text plus ArrayBuffers; see that file).
const MARK = "$sbx";

/**
 * Writes an own data property. `out[key] = value` with key "__proto__" would set the
 * object's prototype instead (and the key would be gone); defining keeps it as data, so
 * `{ "__proto__": … }` in input, results, env or secrets crosses as a plain key and
 * pollutes nothing.
 */
export function defineData(target: object, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else (target as Record<string, unknown>)[key] = value;
}

function refuse(path: string, what: string): never {
  throw new TypeError(`${path}: ${what} cannot cross into the sandbox (only JSON-like data, undefined, Date and bytes can)`);
}

export function toCrossable(value: unknown, path: string, ancestors: object[] = []): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "number":
    case "undefined":
      return value;
    case "bigint":
      return refuse(path, "a BigInt");
    case "symbol":
      return refuse(path, "a symbol");
    case "function":
      return refuse(path, "a function");
  }
  if (value === null) return null;
  const object = value as object;
  if (ancestors.includes(object)) refuse(path, "a value with a cycle");
  if (object instanceof Date) return Number.isFinite(object.getTime()) ? object.toISOString() : null;
  if (object instanceof ArrayBuffer) return new Uint8Array(object.slice(0));
  // A copy in a fresh, unshared ArrayBuffer: a view over a SharedArrayBuffer sliced as it is
  // stays shared, and cannot be transferred to the worker (postMessage threw inside the
  // embedder's message handler).
  if (ArrayBuffer.isView(object)) return new Uint8Array(object.buffer, object.byteOffset, object.byteLength).slice();
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return toCrossable(toJSON.call(object), path, ancestors);
  ancestors.push(object);
  try {
    if (Array.isArray(object)) return object.map((item, i) => toCrossable(item, `${path}[${i}]`, ancestors));
    const proto = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      return refuse(path, `a ${(object as { constructor?: { name?: string } }).constructor?.name ?? "class"} instance`);
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(object)) defineData(out, key, toCrossable((object as Record<string, unknown>)[key], `${path}.${key}`, ancestors));
    return out;
  } finally {
    ancestors.pop();
  }
}

function encode(value: unknown, buffers: ArrayBuffer[]): unknown {
  if (value === undefined) return { [MARK]: "undefined" };
  if (typeof value === "number") {
    return Number.isFinite(value) && !Object.is(value, -0) ? value : { [MARK]: "number", v: Object.is(value, -0) ? "-0" : String(value) };
  }
  if (typeof value !== "object" || value === null) return value;
  if (value instanceof Uint8Array) {
    buffers.push(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength) as ArrayBuffer);
    return { [MARK]: "bytes", i: buffers.length - 1 };
  }
  if (Array.isArray(value)) return value.map((item) => encode(item, buffers));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) defineData(out, key, encode((value as Record<string, unknown>)[key], buffers));
  return Object.hasOwn(out, MARK) ? { [MARK]: "object", v: out } : out;
}

/** Encodes a crossable host value (see toCrossable) for guest-lib/core/marshal.ts's deserialize. */
export function encodeForGuest(value: unknown): { json: string; buffers: ArrayBuffer[] } {
  const buffers: ArrayBuffer[] = [];
  return { json: JSON.stringify(encode(value, buffers)), buffers };
}

function decode(value: unknown, buffers: Uint8Array[]): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => decode(item, buffers));
  const record = value as Record<string, unknown>;
  switch (record[MARK]) {
    case "undefined":
      return undefined;
    case "number":
      return Number(record.v);
    case "bytes": {
      const bytes = buffers[record.i as number];
      if (!bytes) throw new TypeError("malformed value from the guest: missing bytes");
      return bytes;
    }
    case "object":
      return decodeProperties(record.v as Record<string, unknown>, buffers);
  }
  return decodeProperties(record, buffers);
}

/** An object's own properties; its own "$sbx" key (if any) is data, not a marker. */
function decodeProperties(record: Record<string, unknown>, buffers: Uint8Array[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(record)) defineData(out, key, decode(record[key], buffers));
  return out;
}

/** Decodes what guest-lib/core/marshal.ts's serialize produced. */
export function decodeFromGuest(json: string, buffers: Uint8Array[]): unknown {
  return decode(JSON.parse(json), buffers);
}
