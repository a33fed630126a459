// Response content codings (WHATWG Fetch "handle content codings"): gzip, x-gzip, deflate
// (zlib or raw, told apart by the first byte, as browsers do) and br are decoded, up to 5
// stacked. Decoded bytes are what the limits count. A body the transport cannot decode is
// never handed over as it came when that would hide something from redaction: more than
// 5 codings always fail the fetch, and an unknown coding fails it when the request carried
// a secret (otherwise it is passed through as it came, as browsers do).
import zlib from "node:zlib";
import { Transform, type TransformCallback } from "node:stream";

const SUPPORTED = new Set(["gzip", "x-gzip", "deflate", "br"]);
export const MAX_CODINGS = 5;

// Lenient about a missing end-of-stream marker, as browsers are.
const ZLIB_OPTIONS = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
const BROTLI_OPTIONS = {
  flush: zlib.constants.BROTLI_OPERATION_FLUSH,
  finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
};

export interface ContentCodings {
  /** The codings to undo, in the order the server applied them; null: nothing to decode (or passed through). */
  decode: string[] | null;
  /** Why the body cannot be decoded: always fatal for too many codings, fatal for an unknown one when `strict`. */
  problem: string | null;
}

/** What to do with a body sent with this Content-Encoding (all its header lines joined). */
export function parseContentCodings(headerValue: string | null, strict: boolean): ContentCodings {
  if (headerValue === null) return { decode: null, problem: null };
  const codings = headerValue
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  if (codings.length === 0) return { decode: null, problem: null };
  if (codings.length > MAX_CODINGS) {
    return { decode: null, problem: `it has ${codings.length} content codings, more than the ${MAX_CODINGS} the transport decodes` };
  }
  if (!codings.every((c) => SUPPORTED.has(c))) {
    // The coding is not named: it is text from a server that may have been sent a secret.
    return { decode: null, problem: strict ? "the request carried a secret and the body has a content coding the transport cannot decode, so it cannot be checked for the secret" : null };
  }
  return { decode: codings, problem: null };
}

/** Whether a Content-Encoding header (its lines joined; null: none) names a coding other than identity. */
export function hasContentCoding(headerValue: string | null): boolean {
  return headerValue !== null && headerValue.split(",").some((c) => c.trim() !== "" && c.trim().toLowerCase() !== "identity");
}

/**
 * Why a body sent with this Transfer-Encoding (all its header lines joined) cannot be
 * handed over when the request carried a secret, or null. undici undoes only `chunked`;
 * another transfer coding (gzip, deflate, br, or one with no name we know) would reach
 * the script as the server coded it, unread by redaction: the script could decode it
 * itself. Without a secret it is passed through as it came, as before.
 */
export function transferCodingProblem(headerValue: string | null, strict: boolean): string | null {
  if (!strict || headerValue === null) return null;
  const codings = headerValue
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  // Exactly one chunked: undici undoes one (`chunked, chunked` left the body still framed,
  // the value cut by the framing and out of redaction's sight; found by review).
  if (codings.length === 0 || (codings.length === 1 && codings[0] === "chunked")) return null;
  return "the request carried a secret and the body has a transfer coding other than chunked, which the transport does not decode, so it cannot be checked for the secret";
}

/** Streams a coded body through the decoders; `onData` receives decoded chunks. */
export class BodyDecoder {
  readonly #first: Transform;
  readonly #last: Transform;
  readonly #stages: Transform[];
  #failed: ((error: Error) => void) | null;

  constructor(codings: string[], onData: (chunk: Buffer) => void, onError: (error: Error) => void) {
    this.#stages = [...codings].reverse().map(createStage);
    this.#first = this.#stages[0]!;
    this.#last = this.#stages[this.#stages.length - 1]!;
    this.#failed = onError;
    for (let i = 0; i < this.#stages.length; i++) {
      const stage = this.#stages[i]!;
      stage.on("error", (error) => this.#fail(error));
      if (i + 1 < this.#stages.length) stage.pipe(this.#stages[i + 1]!);
    }
    this.#last.on("data", onData);
  }

  write(chunk: Buffer): void {
    this.#first.write(chunk);
  }

  /** Resolves once every decoded byte has been passed to onData. */
  end(): Promise<void> {
    return new Promise((resolve) => {
      this.#last.once("end", resolve);
      this.#first.end();
    });
  }

  destroy(): void {
    this.#failed = null;
    for (const stage of this.#stages) stage.destroy();
  }

  #fail(error: Error): void {
    const onError = this.#failed;
    this.destroy();
    onError?.(error);
  }
}

function createStage(coding: string): Transform {
  if (coding === "br") return zlib.createBrotliDecompress(BROTLI_OPTIONS);
  if (coding === "deflate") return new InflateEither();
  return zlib.createGunzip(ZLIB_OPTIONS);
}

/** "deflate" is meant to be zlib-wrapped (RFC 9110 8.4.1.2) but servers also send raw deflate. */
class InflateEither extends Transform {
  #inner: zlib.Inflate | zlib.InflateRaw | null = null;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (!this.#inner) {
      const inner = (chunk[0]! & 0x0f) === 0x08 ? zlib.createInflate(ZLIB_OPTIONS) : zlib.createInflateRaw(ZLIB_OPTIONS);
      inner.on("data", (data: Buffer) => this.push(data));
      inner.on("error", (error) => this.destroy(error));
      this.#inner = inner;
    }
    this.#inner.write(chunk, () => callback());
  }

  override _flush(callback: TransformCallback): void {
    if (!this.#inner) return callback();
    this.#inner.once("end", () => callback());
    this.#inner.end();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#inner?.destroy();
    callback(error);
  }
}
