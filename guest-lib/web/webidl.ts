// Small WebIDL helpers shared by the web module's classes. Builtins are captured at load
// so that a script deleting or replacing globals cannot break our classes.
export const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
export const ownKeys = Reflect.ownKeys;
export const TypeErrorCtor = TypeError;
export const RangeErrorCtor = RangeError;
export const StringCtor = String;
export const SetCtor = Set;
export const dateNow = Date.now;
export const toStringTag: typeof Symbol.toStringTag = Symbol.toStringTag;
export const iteratorSymbol: typeof Symbol.iterator = Symbol.iterator;

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

/** WebIDL DOMString: ToString, which throws a TypeError for symbols. */
export const toDOMString = (value: unknown): string => `${value as string}`;

/** WebIDL dictionary argument: undefined and null mean empty; other non-objects are a TypeError. */
export function toDictionary(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" && typeof value !== "function") throw new TypeErrorCtor(`${what} must be an object`);
  return value as Record<string, unknown>;
}
