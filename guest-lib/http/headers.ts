// Fetch §5.2 Headers. Names are stored lower-cased (HTTP names are case-insensitive, and
// the standard iterates them lower-cased); values are normalized and validated so that
// nothing invalid can reach the wire.
import { definePairIterable } from "./iterator";
import {
  TypeErrorCtor,
  iteratorSymbol,
  isToken,
  toByteString,
  trimHttpWhitespace,
  webidlInterface,
} from "./util";

export type HeadersInit = [string, string][] | Record<string, string> | Headers;

/** Guards (Fetch §5.2): "immutable" headers throw on change (Response.error(), fetch responses). */
export const IMMUTABLE = 1;

let headersList: (headers: Headers) => string[];
let sortedPairs: (headers: Headers) => [string, string][];
export let isHeaders: (value: object) => value is Headers;
let setGuard: (headers: Headers, guard: number) => void;
export let guardOf: (headers: Headers) => number;

function validName(name: unknown): string {
  const s = `${name as string}`;
  // A token is ASCII, so a valid name is a ByteString too: one test in the common case.
  if (!isToken(s)) {
    toByteString(s); // the ByteString TypeError comes first, as WebIDL converts before Fetch checks
    throw new TypeErrorCtor(`Header name ${JSON.stringify(s)} is not a valid HTTP token`);
  }
  return s.toLowerCase();
}

const NOT_VALUE_CHAR = /[^\x01-\x09\x0b\x0c\x0e-\xff]/; // not a ByteString, or NUL, CR, LF

function validValue(value: unknown): string {
  const raw = `${value as string}`;
  if (!NOT_VALUE_CHAR.test(raw)) return trimHttpWhitespace(raw);
  const s = trimHttpWhitespace(toByteString(raw)); // a ByteString TypeError first
  if (NOT_VALUE_CHAR.test(s)) throw new TypeErrorCtor(`Header value ${JSON.stringify(s)} contains NUL, CR or LF`);
  return s;
}

export class Headers {
  // [name, value, name, value, ...] in insertion order; names lower-cased.
  #list: string[] = [];
  #guard = 0;
  #sorted: [string, string][] | null = null;

  constructor(init?: HeadersInit) {
    if (init !== undefined) fillHeaders(this, init);
  }

  append(name: string, value: string): void {
    const n = validName(name);
    const v = validValue(value);
    this.#checkMutable();
    this.#list.push(n, v);
    this.#sorted = null;
  }

  delete(name: string): void {
    const n = validName(name);
    this.#checkMutable();
    const list = this.#list;
    for (let i = list.length - 2; i >= 0; i -= 2) if (list[i] === n) list.splice(i, 2);
    this.#sorted = null;
  }

  get(name: string): string | null {
    const n = validName(name);
    const list = this.#list;
    let out: string | null = null;
    for (let i = 0; i < list.length; i += 2) if (list[i] === n) out = out === null ? list[i + 1] : `${out}, ${list[i + 1]}`;
    return out;
  }

  getSetCookie(): string[] {
    const list = this.#list;
    const out: string[] = [];
    for (let i = 0; i < list.length; i += 2) if (list[i] === "set-cookie") out.push(list[i + 1]);
    return out;
  }

  has(name: string): boolean {
    const n = validName(name);
    const list = this.#list;
    for (let i = 0; i < list.length; i += 2) if (list[i] === n) return true;
    return false;
  }

  set(name: string, value: string): void {
    const n = validName(name);
    const v = validValue(value);
    this.#checkMutable();
    const list = this.#list;
    let found = false;
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] !== n) continue;
      if (found) {
        list.splice(i, 2);
        i -= 2;
      } else {
        list[i + 1] = v;
        found = true;
      }
    }
    if (!found) list.push(n, v);
    this.#sorted = null;
  }

  #checkMutable(): void {
    if (this.#guard === IMMUTABLE) throw new TypeErrorCtor("Headers are immutable");
  }

  static {
    headersList = (headers) => headers.#list;
    isHeaders = (value): value is Headers => #list in value;
    setGuard = (headers, guard) => void (headers.#guard = guard);
    guardOf = (headers) => headers.#guard;
    sortedPairs = (headers) => {
      if (headers.#sorted) return headers.#sorted;
      // Fetch "sort and combine": names ascending, values combined except Set-Cookie.
      const list = headers.#list;
      const names: string[] = [];
      for (let i = 0; i < list.length; i += 2) if (!names.includes(list[i])) names.push(list[i]);
      names.sort();
      const out: [string, string][] = [];
      for (const name of names) {
        if (name === "set-cookie") {
          for (let i = 0; i < list.length; i += 2) if (list[i] === name) out.push([name, list[i + 1]]);
        } else out.push([name, headers.get(name)!]);
      }
      return (headers.#sorted = out);
    };
  }
}

// The pair-iterable members definePairIterable installs.
export interface Headers {
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  forEach(callbackfn: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}

webidlInterface(Headers, 0);
definePairIterable(Headers, (headers) => sortedPairs(headers));
const entriesIterator = Headers.prototype.entries;

/** Fetch "fill" a Headers object from HeadersInit (WebIDL sequence or record conversion). */
export function fillHeaders(headers: Headers, init: unknown): void {
  if ((typeof init !== "object" && typeof init !== "function") || init === null) {
    throw new TypeErrorCtor("Headers init must be an object (pairs, a record or a Headers)");
  }
  const object = init as Record<PropertyKey, unknown>;
  const method = object[iteratorSymbol];
  if (method === entriesIterator && isHeaders(object)) {
    // A Headers whose iteration is untouched: copy its list as is.
    headersList(headers).push(...headersList(object));
    return;
  }
  if (method !== undefined && method !== null) {
    if (typeof method !== "function") throw new TypeErrorCtor("Headers init: @@iterator is not callable");
    for (const pair of { [iteratorSymbol]: () => method.call(object) } as Iterable<unknown>) {
      if ((typeof pair !== "object" && typeof pair !== "function") || pair === null || typeof (pair as Iterable<unknown>)[iteratorSymbol] !== "function") {
        throw new TypeErrorCtor("Headers init: each header must be a [name, value] sequence");
      }
      const items = [...(pair as Iterable<unknown>)].map(toByteString);
      if (items.length !== 2) throw new TypeErrorCtor("Headers init: each header must be a [name, value] pair");
      headers.append(items[0], items[1]);
    }
    return;
  }
  // record<ByteString, ByteString>: own enumerable keys, in order.
  for (const key of Reflect.ownKeys(object)) {
    const descriptor = Reflect.getOwnPropertyDescriptor(object, key);
    if (descriptor === undefined || !descriptor.enumerable) continue;
    if (typeof key === "symbol") throw new TypeErrorCtor("Headers init: a record key is a symbol");
    headers.append(toByteString(key), toByteString(object[key]));
  }
}

/** The header list as [name, value] pairs in insertion order (for the transport). */
export function headerPairs(headers: Headers): [string, string][] {
  const list = headersList(headers);
  const out: [string, string][] = [];
  for (let i = 0; i < list.length; i += 2) out.push([list[i], list[i + 1]]);
  return out;
}

/** A Headers over a trusted header list (lower-case names, valid values: the transport's answer). */
export function headersFromList(list: string[], guard: number): Headers {
  const headers = new Headers();
  const own = headersList(headers);
  // Indexed: for-of is several times slower in QuickJS, and this runs per response read.
  for (let i = 0; i < list.length; i++) own.push(list[i]!);
  setGuard(headers, guard);
  return headers;
}

export { setGuard };
