// Builtins captured when a realm is built, before any script runs, and shared with the
// other guest modules as "scriptbox:intrinsics". Scripts may delete or replace globals
// (`delete globalThis.Map`, `JSON.stringify = null`); guest modules loaded later still get
// the originals from here.
export const { defineProperty, getPrototypeOf, keys: objectKeys, freeze, is: objectIs } = Object;
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
