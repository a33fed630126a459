// Builtins captured when a realm is built, before any script runs, and shared with the
// other guest modules as "scriptbox:intrinsics". Scripts may delete or replace globals
// (`delete globalThis.Map`, `JSON.stringify = null`); guest modules loaded later still get
// the originals from here.
import type * as Self from "./intrinsics.js";
export const { defineProperty, getPrototypeOf, setPrototypeOf, create: objectCreate, keys: objectKeys, freeze, is: objectIs } = Object;
export const ObjectPrototype = Object.prototype;
export const isArray = Array.isArray;
export const ArrayBufferCtor = ArrayBuffer;
export const isArrayBufferView = ArrayBuffer.isView;
export const Uint8ArrayCtor = Uint8Array;
export const DateCtor = Date;
export const ErrorCtor = Error;
export const TypeErrorCtor = TypeError;
export const MapCtor = Map;
export const jsonStringify = JSON.stringify;
export const jsonParse = JSON.parse;
export const StringCtor = String;
export const NumberCtor = Number;
export const isFinite = Number.isFinite;
export const PromiseCtor = Promise;
export const promiseResolve = Promise.resolve.bind(Promise);
export const promiseThen = Promise.prototype.then;
export const reflectApply = Reflect.apply;
/** `uncurry(fn)(thisArg, ...args)` calls a captured prototype method (immune to a poisoned Function.prototype.call). */
export const uncurry =
  <A extends unknown[], R>(fn: (...args: A) => R) =>
  (thisArg: unknown, ...args: A): R =>
    reflectApply(fn, thisArg, args) as R;
export const dateToISOString = uncurry(Date.prototype.toISOString);
export const dateGetTime = uncurry(Date.prototype.getTime);
export const arrayBufferSlice = uncurry(ArrayBuffer.prototype.slice as (begin?: number, end?: number) => ArrayBuffer);
export const stringSlice = uncurry(String.prototype.slice as (start?: number, end?: number) => string);
export const stringIndexOf = uncurry(String.prototype.indexOf as (search: string, from?: number) => number);
export const regexpExec = uncurry(RegExp.prototype.exec as (text: string) => RegExpExecArray | null);
export const hasOwn = uncurry(Object.prototype.hasOwnProperty as (key: PropertyKey) => boolean);
const mapProto = Map.prototype;
export const mapGet = uncurry(mapProto.get as (key: unknown) => unknown);
export const mapSet = uncurry(mapProto.set as (key: unknown, value: unknown) => Map<unknown, unknown>);
export const mapHas = uncurry(mapProto.has as (key: unknown) => boolean);
export const mapDelete = uncurry(mapProto.delete as (key: unknown) => boolean);
export const mapClear = uncurry(mapProto.clear as () => void);
export const mapKeys = uncurry(mapProto.keys as () => IterableIterator<unknown>);
export const mapIteratorNext = uncurry(Object.getPrototypeOf(new Map().keys()).next as () => IteratorResult<unknown>);

/**
 * A list of strings as JSON text, without JSON.stringify on the array: stringifying an
 * object looks up `toJSON` on it and its prototypes, which a script may have defined
 * (`Object.prototype.toJSON = () => { for (;;) {} }`). Strings are primitives: no lookup.
 */
export function jsonStringList(list: readonly string[]): string {
  let out = "[";
  for (let i = 0; i < list.length; i++) out += (i === 0 ? "" : ",") + (jsonStringify(list[i]) as string);
  return out + "]";
}

/** Defines an own data property: never calls a setter a script put on a prototype, and "__proto__" stays data. */
export function defineData(target: object, key: PropertyKey, value: unknown): void {
  // A prototype-free descriptor: defineProperty reads "get"/"set" with [[HasProperty]], which
  // would find (and call) accessors a script put on Object.prototype.
  defineProperty(target, key, { __proto__: null, value, writable: true, enumerable: true, configurable: true } as PropertyDescriptor);
}

/**
 * What other guest modules get from "scriptbox:intrinsics": one plain object. The core
 * registers this rather than an `import * as` namespace, which esbuild builds with a
 * getter function per name: ~40 closures in every realm, and a realm is built per run.
 */
export const intrinsicsModule: Omit<typeof Self, "intrinsicsModule"> = freeze({
  defineProperty,
  getPrototypeOf,
  setPrototypeOf,
  objectCreate,
  objectKeys,
  freeze,
  objectIs,
  ObjectPrototype,
  isArray,
  ArrayBufferCtor,
  isArrayBufferView,
  Uint8ArrayCtor,
  DateCtor,
  ErrorCtor,
  TypeErrorCtor,
  MapCtor,
  jsonStringify,
  jsonParse,
  StringCtor,
  NumberCtor,
  isFinite,
  PromiseCtor,
  promiseResolve,
  promiseThen,
  reflectApply,
  uncurry,
  dateToISOString,
  dateGetTime,
  arrayBufferSlice,
  stringSlice,
  stringIndexOf,
  regexpExec,
  hasOwn,
  mapGet,
  mapSet,
  mapHas,
  mapDelete,
  mapClear,
  mapKeys,
  mapIteratorNext,
  jsonStringList,
  defineData,
});
