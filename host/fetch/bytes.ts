// Byte helpers. Bodies handed back own their ArrayBuffer exactly (byteOffset 0, no pooled
// slab around them), so the bridge can move `body.buffer` into the guest without a copy
// and without exposing unrelated bytes.

export const EMPTY_BYTES = new Uint8Array(0);

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A buffer of `length` bytes over its own ArrayBuffer; contents uninitialised. */
export function ownedBuffer(length: number): Buffer {
  return Buffer.allocUnsafeSlow(length);
}

/** The parts joined into one buffer over its own ArrayBuffer. */
export function concatOwned(parts: readonly Uint8Array[], total: number): Uint8Array {
  if (total === 0) return EMPTY_BYTES;
  const out = ownedBuffer(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return at === total ? out : out.subarray(0, at);
}
