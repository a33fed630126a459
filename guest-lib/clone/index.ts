// HTML §2.10 structuredClone(value, { transfer }): a deep copy by the structured clone
// algorithm (StructuredSerializeInternal + StructuredDeserialize fused into one walk).
// Copied: primitives (not symbols), Boolean/Number/String/BigInt objects, Date, RegExp,
// ArrayBuffer, typed arrays and DataView (views of one buffer still share the copy), Map,
// Set, Error objects (name, message, cause, stack), arrays and plain objects (own
// enumerable string keys; class instances become plain objects, as in browsers); cycles and
// shared references are kept. Functions, symbols, promises, WeakMap/WeakSet/WeakRef and the
// sandbox's web objects (Headers, Request, URL, …) throw a DataCloneError.
//
// This is the standard's algorithm, not the rules for values crossing the sandbox boundary
// (docs/architecture.md "Values in and out"): a clone stays inside the script.
import { require as requireModule } from "scriptbox:core";

const { getPrototypeOf, keys: objectKeys } = Object;
const isArray = Array.isArray;
const isView = ArrayBuffer.isView;
const MapCtor = Map;
const DataViewCtor = DataView;
const ERROR_NAMES = ["Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError"];
const ERROR_TYPES: Record<string, ErrorConstructor> = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
const TYPED_ARRAYS: Record<string, new (buffer: ArrayBuffer, offset: number, length: number) => ArrayBufferView> = {
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array,
};
const typedArrayTag = Object.getOwnPropertyDescriptor(getPrototypeOf(Uint8Array.prototype) as object, Symbol.toStringTag)!.get!;
const toStringTag = Object.prototype.toString;
const PRIMITIVE_OF: Record<string, (this: object) => unknown> = {
  Boolean: Boolean.prototype.valueOf,
  Number: Number.prototype.valueOf,
  String: String.prototype.valueOf,
  BigInt: BigInt.prototype.valueOf,
} as never;
// Brand checks: the internal slot, not the prototype chain, decides what a value is.
const brands: [string, (value: object) => unknown][] = [
  ["Date", (v) => Date.prototype.getTime.call(v)],
  ["Map", (v) => Reflect.apply(Object.getOwnPropertyDescriptor(Map.prototype, "size")!.get!, v, [])],
  ["Set", (v) => Reflect.apply(Object.getOwnPropertyDescriptor(Set.prototype, "size")!.get!, v, [])],
  ["ArrayBuffer", (v) => Reflect.apply(Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")!.get!, v, [])],
  ["RegExp", (v) => Reflect.apply(Object.getOwnPropertyDescriptor(RegExp.prototype, "source")!.get!, v, [])],
  ["Boolean", (v) => Boolean.prototype.valueOf.call(v)],
  ["Number", (v) => Number.prototype.valueOf.call(v)],
  ["String", (v) => String.prototype.valueOf.call(v)],
  ["BigInt", (v) => BigInt.prototype.valueOf.call(v)],
  ["Promise", (v) => Promise.prototype.then.call(v, undefined, () => undefined)],
  ["WeakMap", (v) => WeakMap.prototype.has.call(v, {})],
  ["WeakSet", (v) => WeakSet.prototype.has.call(v, {})],
  ["Symbol", (v) => Symbol.prototype.valueOf.call(v)],
];
if (typeof WeakRef === "function") brands.push(["WeakRef", (v) => WeakRef.prototype.deref.call(v)]);

function brandOf(value: object): string | null {
  if (value === RegExp.prototype) return null; // RegExp.prototype.source answers without a slot
  for (let i = 0; i < brands.length; i++) {
    try {
      brands[i]![1](value);
      return brands[i]![0];
    } catch {
      // not this brand
    }
  }
  return null;
}

function dataCloneError(message: string): Error {
  const { DOMException } = requireModule("scriptbox:web") as { DOMException: new (message: string, name: string) => Error };
  return new DOMException(message, "DataCloneError");
}

/** Our web classes are platform objects: HTML says they clone only if serializable, and none is here. */
function isPlatformObject(value: object): string | null {
  const tag = toStringTag.call(value).slice(8, -1);
  const web = ["Headers", "Request", "Response", "Blob", "File", "FormData", "URL", "URLSearchParams", "AbortController", "AbortSignal", "EventTarget", "Event", "TextEncoder", "TextDecoder", "CryptoKey", "SubtleCrypto", "Performance", "DOMException"];
  return web.indexOf(tag) !== -1 ? tag : null;
}

function cloneBuffer(buffer: ArrayBuffer, memory: Map<object, unknown>): ArrayBuffer {
  let copy = memory.get(buffer) as ArrayBuffer | undefined;
  if (copy === undefined) {
    copy = ArrayBuffer.prototype.slice.call(buffer, 0) as ArrayBuffer;
    memory.set(buffer, copy);
  }
  return copy;
}

function clone(value: unknown, memory: Map<object, unknown>): unknown {
  const type = typeof value;
  if (type === "symbol") throw dataCloneError(`${String(value)} could not be cloned`);
  if (type === "function") throw dataCloneError(`${String((value as { name?: string }).name || "function")}() could not be cloned`);
  if (type !== "object" || value === null) return value;
  const object = value as object;
  const seen = memory.get(object);
  if (seen !== undefined) return seen;

  if (isView(object)) {
    const view = object as ArrayBufferView;
    const buffer = cloneBuffer(view.buffer as ArrayBuffer, memory);
    let copy: ArrayBufferView;
    if (view instanceof DataViewCtor) copy = new DataViewCtor(buffer, view.byteOffset, view.byteLength);
    else {
      const tag = typedArrayTag.call(view) as string;
      copy = new TYPED_ARRAYS[tag]!(buffer, view.byteOffset, (view as unknown as { length: number }).length);
    }
    memory.set(object, copy);
    return copy;
  }
  const platform = isPlatformObject(object);
  if (platform !== null) throw dataCloneError(`${platform} object could not be cloned`);
  const brand = brandOf(object);
  switch (brand) {
    case "Date":
      return remember(memory, object, new Date(Date.prototype.getTime.call(object)));
    case "RegExp": {
      const regexp = object as RegExp;
      return remember(memory, object, new RegExp(regexp.source, regexp.flags));
    }
    case "ArrayBuffer":
      return cloneBuffer(object as ArrayBuffer, memory);
    case "Boolean":
    case "Number":
    case "String":
    case "BigInt":
      return remember(memory, object, Object(PRIMITIVE_OF[brand]!.call(object)));
    case "Map": {
      const copy = new MapCtor();
      memory.set(object, copy);
      // Entries are read first, then cloned (HTML step 26.1: a copy of the list).
      const entries: [unknown, unknown][] = [];
      Map.prototype.forEach.call(object, (v: unknown, k: unknown) => void entries.push([k, v]));
      for (let i = 0; i < entries.length; i++) copy.set(clone(entries[i]![0], memory), clone(entries[i]![1], memory));
      return copy;
    }
    case "Set": {
      const copy = new Set();
      memory.set(object, copy);
      const items: unknown[] = [];
      Set.prototype.forEach.call(object, (v: unknown) => void items.push(v));
      for (let i = 0; i < items.length; i++) copy.add(clone(items[i], memory));
      return copy;
    }
    case null:
      break;
    default:
      throw dataCloneError(`${brand} object could not be cloned`);
  }

  if (object instanceof Error) {
    // HTML step 17: the name if it is a standard one (else "Error"), the message, and our
    // (like V8's) stack and cause.
    const name = (object as Error).name;
    const Ctor = ERROR_TYPES[ERROR_NAMES.indexOf(name) === -1 ? "Error" : name]!;
    const copy = new Ctor();
    memory.set(object, copy);
    const describe = Object.getOwnPropertyDescriptor;
    const message = describe(object, "message");
    if (message && "value" in message) Object.defineProperty(copy, "message", { value: String(message.value), writable: true, configurable: true });
    const stack = (object as Error).stack;
    if (typeof stack === "string") Object.defineProperty(copy, "stack", { value: stack, writable: true, configurable: true });
    const cause = describe(object, "cause");
    if (cause && "value" in cause) Object.defineProperty(copy, "cause", { value: clone(cause.value, memory), writable: true, configurable: true });
    return copy;
  }

  // Arrays and ordinary objects; a class instance becomes a plain object (its prototype is
  // not cloned, as in browsers).
  const copy = (isArray(object) ? new Array((object as unknown[]).length) : {}) as Record<string, unknown>;
  memory.set(object, copy);
  const names = objectKeys(object);
  for (let i = 0; i < names.length; i++) copy[names[i]!] = clone((object as Record<string, unknown>)[names[i]!], memory);
  return copy;
}

function remember<T>(memory: Map<object, unknown>, original: object, copy: T): T {
  memory.set(original, copy);
  return copy;
}

export function structuredClone<T>(value: T, options?: { transfer?: unknown[] }): T {
  if (arguments.length === 0) throw new TypeError("structuredClone: 1 argument required, but only 0 present");
  const transfer = options === undefined || options === null ? undefined : options.transfer;
  if (transfer !== undefined && transfer !== null) {
    if (typeof transfer !== "object" || typeof (transfer as { length?: unknown }).length !== "number") throw new TypeError("structuredClone: options.transfer must be an array");
    if ((transfer as unknown[]).length > 0) {
      // Transferring detaches the source buffer; QuickJS offers no way to detach one here.
      throw dataCloneError("structuredClone: transferring is not supported in scriptbox (the value is copied without options.transfer)");
    }
  }
  return clone(value, new MapCtor()) as T;
}
