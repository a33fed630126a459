// Encoding §8 TextEncoder and TextDecoder, UTF-8 only (the only encoding TextEncoder has;
// TextDecoder accepts the UTF-8 labels and throws a RangeError for every other label).
import { incompleteTail, toWellFormed, utf8Decode, utf8Encode } from "./utf8";
import { RangeErrorCtor, TypeErrorCtor, toDOMString, toDictionary, webidlInterface } from "./webidl";

const Uint8ArrayCtor = Uint8Array;
const ArrayBufferCtor = ArrayBuffer;
const isView = ArrayBuffer.isView;
const UTF8_LABELS = ["unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8"];

export class TextEncoder {
  get encoding(): string {
    return "utf-8";
  }

  encode(input: string = ""): Uint8Array {
    return utf8Encode(toDOMString(input));
  }

  encodeInto(source: string, destination: Uint8Array): { read: number; written: number } {
    source = toDOMString(source);
    if (!(destination instanceof Uint8ArrayCtor)) throw new TypeErrorCtor("encodeInto: destination must be a Uint8Array");
    const capacity = destination.length;
    let read = 0;
    let written = 0;
    while (read < source.length) {
      let c = source.charCodeAt(read);
      let units = 1;
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = source.charCodeAt(read + 1);
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          units = 2;
        } else c = 0xfffd;
      }
      const size = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
      if (written + size > capacity) break;
      if (size === 1) destination[written] = c;
      else {
        destination[written] = size === 2 ? 0xc0 | (c >> 6) : size === 3 ? 0xe0 | (c >> 12) : 0xf0 | (c >> 18);
        for (let k = size - 1; k > 0; k--) destination[written + k] = 0x80 | ((c >> (6 * (size - 1 - k))) & 0x3f);
      }
      written += size;
      read += units;
    }
    return { read, written };
  }
}

webidlInterface(TextEncoder, 0);

/** WebIDL BufferSource (or AllowSharedBufferSource) as a Uint8Array view, no copy. */
function toBytes(input: unknown): Uint8Array {
  if (input instanceof ArrayBufferCtor) return new Uint8ArrayCtor(input);
  if (isView(input)) return new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
  throw new TypeErrorCtor("TextDecoder.decode: input must be an ArrayBuffer or an ArrayBufferView");
}

export class TextDecoder {
  #fatal: boolean;
  #ignoreBOM: boolean;
  #pending: Uint8Array | null = null;
  #started = false;

  constructor(label: string = "utf-8", options?: { fatal?: boolean; ignoreBOM?: boolean }) {
    const name = toDOMString(label).replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "").toLowerCase();
    if (!UTF8_LABELS.includes(name)) throw new RangeErrorCtor(`TextDecoder: the encoding "${label}" is not supported (UTF-8 only)`);
    const init = toDictionary(options, "TextDecoder options");
    this.#fatal = !!init.fatal;
    this.#ignoreBOM = !!init.ignoreBOM;
  }

  get encoding(): string {
    return "utf-8";
  }
  get fatal(): boolean {
    return this.#fatal;
  }
  get ignoreBOM(): boolean {
    return this.#ignoreBOM;
  }

  decode(input?: ArrayBuffer | ArrayBufferView, options?: { stream?: boolean }): string {
    let bytes = input === undefined ? new Uint8ArrayCtor(0) : toBytes(input);
    const stream = !!toDictionary(options, "TextDecoder.decode options").stream;
    const pending = this.#pending;
    if (pending) {
      const joined = new Uint8ArrayCtor(pending.length + bytes.length);
      joined.set(pending);
      joined.set(bytes, pending.length);
      bytes = joined;
      this.#pending = null;
    }
    if (stream) {
      const tail = incompleteTail(bytes);
      if (tail) {
        this.#pending = bytes.slice(bytes.length - tail);
        bytes = bytes.subarray(0, bytes.length - tail);
      }
    }
    // The BOM is only looked for at the start of a stream.
    const text = utf8Decode(bytes, this.#fatal, this.#ignoreBOM || this.#started);
    this.#started = stream && (this.#started || bytes.length > 0);
    if (!stream) this.#pending = null;
    return text;
  }
}

webidlInterface(TextDecoder, 0);

export { toWellFormed };
