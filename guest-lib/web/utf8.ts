import bridge from "scriptbox:bridge";

// UTF-8 encode and decode (Encoding §9.1). QuickJS runs a per-byte JS loop at roughly
// 0.3 us a byte, so the common paths lean on native builtins: encodeURIComponent/unescape
// to encode, String.fromCharCode over chunks plus escape/decodeURIComponent to decode. The
// byte-by-byte decoder only runs for input that is not valid UTF-8.
const fromCharCode = String.fromCharCode;
const mathMax = Math.max;
const Uint8ArrayCtor = Uint8Array;
const nativeEscape = escape;
const nativeUnescape = unescape;
const nativeEncodeURIComponent = encodeURIComponent;
const nativeDecodeURIComponent = decodeURIComponent;
const CHUNK = 8192;
/** Above this many UTF-16 units, encoding is handed to the host (see bridge utf8Encode). */
const HOST_ENCODE_THRESHOLD = 16384;
const jsonStringify = JSON.stringify;

/** USVString conversion: lone surrogates become U+FFFD. */
export const toWellFormed = (s: string): string => (s as string & { toWellFormed(): string }).toWellFormed();

/** "UTF-8 encode": a string to bytes, lone surrogates as U+FFFD. */
export function utf8Encode(input: string): Uint8Array {
  if (input.length > HOST_ENCODE_THRESHOLD) {
    // A bridge call first, before the native JSON.stringify (~1 ms per 256 KiB, which the
    // engine's interrupt never breaks into): past the CPU limit every bridge call is refused
    // at once, so a catch-all loop of large encodes turns cheap and the engine's own
    // interrupt check stops it. Without it, such a loop ran ~1,000 costly iterations between
    // two checks and only the watchdog's hard stop ended it.
    bridge.performanceNow();
    return new Uint8ArrayCtor(bridge.utf8Encode(jsonStringify(input)));
  }
  const binary = nativeUnescape(nativeEncodeURIComponent(toWellFormed(input)));
  const length = binary.length;
  const bytes = new Uint8ArrayCtor(length);
  for (let i = 0; i < length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Bytes as a string of U+0000-U+00FF (one char per byte); native work only. */
export function latin1(bytes: Uint8Array): string {
  if (bytes.length <= CHUNK) return fromCharCode.apply(null, bytes as unknown as number[]);
  const parts: string[] = [];
  for (let i = 0; i < bytes.length; i += CHUNK) parts.push(fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]));
  return parts.join("");
}

function isAscii(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i += CHUNK) {
    if (mathMax.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]) > 0x7f) return false;
  }
  return true;
}

/**
 * "UTF-8 decode" (BOM stripped unless ignoreBOM) or, with fatal, "UTF-8 decode without
 * BOM or fail": invalid sequences become U+FFFD, or throw a TypeError when fatal.
 */
export function utf8Decode(bytes: Uint8Array, fatal = false, ignoreBOM = false): string {
  if (!ignoreBOM && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  const binary = latin1(bytes);
  if (isAscii(bytes)) return binary;
  try {
    return nativeDecodeURIComponent(nativeEscape(binary));
  } catch {
    return decodeSlowly(bytes, fatal);
  }
}

// The Encoding standard's UTF-8 decoder, byte by byte, for input with errors.
function decodeSlowly(bytes: Uint8Array, fatal: boolean): string {
  const units: number[] = [];
  let needed = 0;
  let seen = 0;
  let codePoint = 0;
  let lower = 0x80;
  let upper = 0xbf;
  const error = () => {
    if (fatal) throw new TypeError("The encoded data is not valid UTF-8");
    units.push(0xfffd);
  };
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (needed === 0) {
      if (byte <= 0x7f) units.push(byte);
      else if (byte >= 0xc2 && byte <= 0xdf) (needed = 1), (codePoint = byte & 0x1f);
      else if (byte >= 0xe0 && byte <= 0xef) {
        if (byte === 0xe0) lower = 0xa0;
        if (byte === 0xed) upper = 0x9f;
        needed = 2;
        codePoint = byte & 0xf;
      } else if (byte >= 0xf0 && byte <= 0xf4) {
        if (byte === 0xf0) lower = 0x90;
        if (byte === 0xf4) upper = 0x8f;
        needed = 3;
        codePoint = byte & 0x7;
      } else error();
      continue;
    }
    if (byte < lower || byte > upper) {
      needed = seen = codePoint = 0;
      lower = 0x80;
      upper = 0xbf;
      error();
      i--; // the byte starts over as a new sequence
      continue;
    }
    lower = 0x80;
    upper = 0xbf;
    codePoint = (codePoint << 6) | (byte & 0x3f);
    if (++seen !== needed) continue;
    if (codePoint > 0xffff) {
      codePoint -= 0x10000;
      units.push(0xd800 + (codePoint >> 10), 0xdc00 + (codePoint & 0x3ff));
    } else units.push(codePoint);
    needed = seen = codePoint = 0;
  }
  if (needed) error();
  const parts: string[] = [];
  for (let i = 0; i < units.length; i += CHUNK) parts.push(fromCharCode.apply(null, units.slice(i, i + CHUNK)));
  return parts.join("");
}

/** Length of an incomplete but so far valid UTF-8 sequence at the end of bytes (0-3). */
export function incompleteTail(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let k = 1; k <= 3 && k <= n; k++) {
    const lead = bytes[n - k];
    if (lead < 0x80) return 0;
    if (lead < 0xc0) continue; // a continuation byte: look further back
    const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
    if (k >= length || lead < 0xc2 || lead > 0xf4) return 0;
    if (k >= 2) {
      const second = bytes[n - k + 1];
      const lo = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
      const hi = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
      if (second < lo || second > hi) return 0;
    }
    return k;
  }
  return 0;
}
