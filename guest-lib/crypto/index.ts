// The `crypto` global: getRandomValues and randomUUID, filled from the host's CSPRNG, and
// crypto.subtle (guest-lib/subtle).
import bridge from "scriptbox:bridge";
import { require as requireModule } from "scriptbox:core";
import { Uint8ArrayCtor, isArrayBufferView, getPrototypeOf } from "scriptbox:intrinsics";

const MAX_BYTES = 65536; // Web Crypto: QuotaExceededError beyond this
const INTEGER_ARRAYS = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "BigInt64Array", "BigUint64Array"];
const TypedArrayPrototype = getPrototypeOf(Uint8Array.prototype) as object;
const typedArrayTag = Object.getOwnPropertyDescriptor(TypedArrayPrototype, Symbol.toStringTag)!.get!;

function domException(message: string, name: string): Error {
  const { DOMException } = requireModule("scriptbox:web") as { DOMException: new (message: string, name: string) => Error };
  return new DOMException(message, name);
}

function getRandomValues<T extends ArrayBufferView>(array: T): T {
  const tag = isArrayBufferView(array) ? (typedArrayTag.call(array) as string | undefined) : undefined;
  if (tag === undefined || INTEGER_ARRAYS.indexOf(tag) === -1) {
    throw domException("The provided ArrayBufferView is not an integer-type TypedArray", "TypeMismatchError");
  }
  if (array.byteLength > MAX_BYTES) {
    throw domException(`The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (${MAX_BYTES})`, "QuotaExceededError");
  }
  if (array.byteLength > 0) {
    new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength).set(new Uint8ArrayCtor(bridge.randomBytes(array.byteLength)));
  }
  return array;
}

const HEX: string[] = [];
for (let i = 0; i < 256; i++) HEX.push((i + 0x100).toString(16).slice(1));

function randomUUID(): string {
  const b = new Uint8ArrayCtor(bridge.randomBytes(16));
  b[6] = (b[6]! & 0x0f) | 0x40; // version 4
  b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
  const h = (i: number) => HEX[b[i]!]!;
  return `${h(0)}${h(1)}${h(2)}${h(3)}-${h(4)}${h(5)}-${h(6)}${h(7)}-${h(8)}${h(9)}-${h(10)}${h(11)}${h(12)}${h(13)}${h(14)}${h(15)}`;
}

// crypto.subtle loads its module on first use: most scripts never touch it.
export const crypto = Object.freeze({
  getRandomValues,
  randomUUID,
  get subtle(): unknown {
    return (requireModule("scriptbox:subtle") as { subtle: unknown }).subtle;
  },
});
