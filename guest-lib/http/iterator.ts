// WebIDL §3.7.10 default iterator objects for pair iterables (Headers, FormData): the
// prototype inherits %IteratorPrototype%, `next` is enumerable, and every step reads the
// current list, so changes made during iteration are seen as the standard says.
import { defineProperty } from "./util";

const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
type Kind = 0 | 1 | 2; // keys, values, entries

export function pairIterator<T extends object>(
  tag: string,
  pairs: (target: T) => [string, unknown][],
): (target: T, kind: Kind) => IterableIterator<unknown> {
  const state = new WeakMap<object, { target: T; kind: Kind; index: number }>();
  const proto = Object.create(IteratorPrototype);
  defineProperty(proto, "next", {
    value: function next(this: object) {
      const s = state.get(this);
      if (!s) throw new TypeError(`next called on an object that is not a ${tag}`);
      const list = pairs(s.target);
      if (s.index >= list.length) return { value: undefined, done: true };
      const [key, value] = list[s.index++];
      return { value: s.kind === 0 ? key : s.kind === 1 ? value : [key, value], done: false };
    },
    writable: true,
    enumerable: true,
    configurable: true,
  });
  defineProperty(proto, Symbol.toStringTag, { value: tag, configurable: true });
  return (target, kind) => {
    const iterator = Object.create(proto);
    state.set(iterator, { target, kind, index: 0 });
    return iterator;
  };
}

/** Adds keys/values/entries/forEach/@@iterator to a pair-iterable interface. */
export function definePairIterable<T extends object>(cls: { prototype: T; name: string }, pairs: (target: T) => [string, unknown][]): void {
  const make = pairIterator<T>(`${cls.name} Iterator`, pairs);
  const proto = cls.prototype as Record<PropertyKey, unknown>;
  const methods: Record<string, Function> = {
    entries(this: T) {
      pairs(this); // brand check
      return make(this, 2);
    },
    keys(this: T) {
      pairs(this);
      return make(this, 0);
    },
    values(this: T) {
      pairs(this);
      return make(this, 1);
    },
    forEach(this: T, callback: (value: unknown, key: string, parent: T) => void, thisArg?: unknown) {
      if (typeof callback !== "function") throw new TypeError("forEach: the callback is not a function");
      for (let i = 0, list = pairs(this); i < list.length; i++, list = pairs(this)) {
        callback.call(thisArg, list[i][1], list[i][0], this);
      }
    },
  };
  // Own keys only: the module may load after a script added enumerable properties to Object.prototype.
  for (const name of Object.keys(methods)) defineProperty(proto, name, { value: methods[name], writable: true, enumerable: true, configurable: true });
  defineProperty(proto, Symbol.iterator, { value: methods.entries, writable: true, configurable: true });
}
