// One HTTP request/response over undici's dispatch API: how bytes move, nothing about
// policy or redirects. The body is collected as bytes under a limit checked against
// Content-Length before reading and on every chunk, so nothing past the limit is kept: the
// request is aborted (its socket destroyed) the moment the limit is passed. Cancellation
// does the same at any point.
//
// Where the body goes: a body with a Content-Length and no content coding is written, chunk
// by chunk as undici hands them over, into one place of its final size: the caller's
// BodyTarget when it gives one (the sandbox's: a block in the guest's heap, so the socket's
// bytes are copied once on their way into the guest), else one host buffer. Other bodies
// are collected as chunks and joined at the end.
import type { Dispatcher } from "undici";
import { BodyDecoder, hasContentCoding, parseContentCodings, transferCodingProblem } from "./contentDecoding.js";
import type { Cancellation } from "./cancellation.js";
import { networkError, type TransportError } from "./transportError.js";
import { EMPTY_BYTES, concatOwned, ownedBuffer } from "./bytes.js";

export interface ExchangeRequest {
  /** An IP-literal origin: "http://127.0.0.1:8080", "https://[2001:db8::1]:443". */
  origin: string;
  path: string;
  method: string;
  /** Flat name/value list, Host first. */
  headers: string[];
  body: Buffer | null;
  /** The request carried a secret: a body in a coding the transport cannot decode fails rather than passing through unscanned. */
  strictCodings: boolean;
  /**
   * This hop sent a secret, and asked for no content coding (Accept-Encoding: identity): a
   * response in one fails. Its compressed size (Content-Length, the raw bytes the limits
   * count) would depend on how well text the script chose compresses against an echo of the
   * value: a compression oracle (BREACH). See docs/network.md, "Threat model".
   */
  identityOnly?: boolean;
  /** Decides from the status and headers whether the body is wanted; an unwanted body is drained a little, then dropped. */
  wantsBody(status: number, headers: readonly [string, string][]): boolean;
  /**
   * Where a wanted body of a declared length (> 0, no content coding) is written instead of
   * a host buffer; asked once, after the limit accepted that length. null: a host buffer.
   */
  bodyTarget?: ((length: number) => BodyTarget | null) | null;
}

/**
 * A place of a fixed length that a body is written into as it arrives. The exchange writes
 * each byte once, in order, never past `length`; it releases the target when the exchange
 * fails or is cancelled, and otherwise hands it over (Exchange.placed) whole.
 */
export interface BodyTarget {
  readonly length: number;
  write(chunk: Uint8Array, offset: number): void;
  /** Frees what the target holds; calling it again does nothing. */
  release(): void;
}

/** Checks a body size (declared by Content-Length, or read so far); returns the refusal, if any. */
export type BodyLimit = (bytes: number, declared: boolean) => TransportError | null;

export interface Exchange {
  status: number;
  statusText: string;
  headers: [string, string][];
  /** Empty for null-body statuses, HEAD, and bodies that were not wanted; empty too when `placed` holds the body. */
  body: Uint8Array;
  /** The body, written whole into the request's bodyTarget (null: the body is `body`). */
  placed: BodyTarget | null;
}

/** How much of an unwanted body (a redirect's) is read to keep the connection; past this it is closed. */
const DRAIN_LIMIT = 64 * 1024;
/** Bodies up to this size are read straight into one buffer sized by Content-Length; larger ones are collected as they come. */
const MAX_PREALLOCATION = 64 * 1024 * 1024;

export function exchange(dispatcher: Dispatcher, request: ExchangeRequest, cancellation: Cancellation, limit: BodyLimit): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const handler = new ExchangeHandler(request, cancellation, limit, resolve, reject);
    if (cancellation.reason) return;
    try {
      dispatcher.dispatch(
        {
          origin: request.origin,
          path: request.path,
          method: request.method as Dispatcher.HttpMethod,
          headers: request.headers,
          body: request.body,
        },
        handler,
      );
    } catch (error) {
      handler.fail(error as Error);
    }
  });
}

type Controller = Dispatcher.DispatchController;

class ExchangeHandler implements Dispatcher.DispatchHandler {
  readonly #request: ExchangeRequest;
  readonly #limit: BodyLimit;
  readonly #resolve: (exchange: Exchange) => void;
  readonly #reject: (error: Error) => void;
  readonly #unsubscribe: () => void;
  #controller: Controller | null = null;
  #settled = false;

  #status = 0;
  #statusText = "";
  #headers: [string, string][] = [];
  #wanted = true;
  #drained = 0;
  #received = 0; // body bytes as they came off the wire
  #total = 0; // body bytes kept (decoded)
  #chunks: Buffer[] = [];
  #preallocated: Buffer | null = null;
  #target: BodyTarget | null = null;
  #decoder: BodyDecoder | null = null;

  constructor(
    request: ExchangeRequest,
    cancellation: Cancellation,
    limit: BodyLimit,
    resolve: (exchange: Exchange) => void,
    reject: (error: Error) => void,
  ) {
    this.#request = request;
    this.#limit = limit;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#unsubscribe = cancellation.onCancel((reason) => this.fail(reason));
  }

  onRequestStart(controller: Controller): void {
    this.#controller = controller;
    // Cancelled while queued for a connection: abort as soon as undici hands it over.
    if (this.#settled) controller.abort(new Error("cancelled"));
  }

  onResponseStart(controller: Controller, statusCode: number, _headers: unknown, statusMessage?: string): void {
    if (statusCode < 200 || this.#settled) return; // 1xx informational responses are skipped
    this.#status = statusCode;
    this.#statusText = statusMessage ?? "";
    const raw = (controller.rawHeaders ?? []) as (Buffer | string)[];
    const headers: [string, string][] = new Array(raw.length >> 1);
    let contentLength: string | null = null;
    let contentEncoding: string | null = null;
    let transferEncoding: string | null = null;
    for (let i = 0, j = 0; i + 1 < raw.length; i += 2, j++) {
      const name = raw[i]!.toString("latin1");
      const value = raw[i + 1]!.toString("latin1");
      headers[j] = [name, value];
      if (name.length === 14 && name.toLowerCase() === "content-length") contentLength = value;
      else if (name.length === 16 && name.toLowerCase() === "content-encoding") contentEncoding = contentEncoding === null ? value : `${contentEncoding}, ${value}`;
      else if (name.length === 17 && name.toLowerCase() === "transfer-encoding") transferEncoding = transferEncoding === null ? value : `${transferEncoding}, ${value}`;
    }
    this.#headers = headers;
    if (this.#request.identityOnly && hasContentCoding(contentEncoding)) {
      // Its headers would reach the script even without a body (HEAD, a redirect).
      return this.fail(networkError("the response came in a content coding, though the request, which carried a secret, asked for none (Accept-Encoding: identity); its compressed size could tell the script about the secret"));
    }

    const nullBody = this.#request.method === "HEAD" || statusCode === 204 || statusCode === 205 || statusCode === 304;
    this.#wanted = !nullBody && this.#request.wantsBody(statusCode, headers);
    if (!this.#wanted) return;

    const { decode: codings, problem } = parseContentCodings(contentEncoding, this.#request.strictCodings);
    const transferProblem = transferCodingProblem(transferEncoding, this.#request.strictCodings);
    if (problem || transferProblem) return this.fail(networkError(`cannot decode the response body: ${problem ?? transferProblem}`));
    const declared = contentLength !== null && /^[0-9]{1,15}$/.test(contentLength) ? Number(contentLength) : null;
    if (declared !== null) {
      const refusal = this.#limit(declared, true);
      if (refusal) return this.fail(refusal);
    }
    if (codings) {
      this.#decoder = new BodyDecoder(
        codings,
        (chunk) => this.#keep(chunk),
        (error) => this.fail(Object.assign(new Error(`cannot decode the response body: ${error.message}`), { cause: error })),
      );
    } else if (declared !== null && declared > 0) {
      this.#target = this.#request.bodyTarget?.(declared) ?? null;
      // Only the written part of a host buffer is ever returned.
      if (!this.#target && declared <= MAX_PREALLOCATION) this.#preallocated = ownedBuffer(declared);
    }
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.#settled) return;
    if (!this.#wanted) {
      this.#drained += chunk.length;
      if (this.#drained > DRAIN_LIMIT) {
        this.#finish(EMPTY_BYTES);
        controller.abort(new Error("unwanted body dropped"));
      }
      return;
    }
    this.#received += chunk.length;
    if (this.#decoder) {
      // Raw bytes count too, so a body that decodes to little still cannot stream forever.
      const refusal = this.#limit(this.#received, false);
      if (refusal) return this.fail(refusal);
      this.#decoder.write(chunk);
    } else {
      this.#keep(chunk);
    }
  }

  onResponseEnd(): void {
    if (this.#settled) return;
    if (!this.#wanted) return this.#finish(EMPTY_BYTES);
    if (this.#decoder) {
      this.#decoder.end().then(() => this.#finish(this.#collect()));
    } else if (this.#target) {
      // undici ends a response only after Content-Length bytes; anything else is no body we hand over.
      if (this.#total !== this.#target.length) return this.fail(networkError("the response body is shorter than its Content-Length"));
      this.#finish(EMPTY_BYTES, this.#target);
    } else {
      this.#finish(this.#collect());
    }
  }

  onResponseError(_controller: Controller, error: Error): void {
    this.fail(error);
  }

  fail(error: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#unsubscribe();
    this.#decoder?.destroy();
    this.#chunks = [];
    this.#preallocated = null;
    this.#target?.release();
    this.#target = null;
    const controller = this.#controller;
    if (controller && !controller.aborted) controller.abort(error); // destroys the socket
    this.#reject(error);
  }

  #keep(chunk: Buffer): void {
    if (this.#settled) return;
    const total = this.#total + chunk.length;
    const refusal = this.#limit(total, false);
    if (refusal) return this.fail(refusal);
    if (this.#target) {
      // undici stops at Content-Length; a target is never written past its length.
      if (total > this.#target.length) return this.fail(networkError("the response body is longer than its Content-Length"));
      try {
        this.#target.write(chunk, this.#total);
      } catch (error) {
        // The target went away (its sandbox ended) or refused the bytes: the fetch fails.
        return this.fail(networkError(`cannot keep the response body: ${(error as Error).message}`, error));
      }
      this.#total = total;
      return;
    }
    const target = this.#preallocated;
    if (target && total <= target.length) {
      chunk.copy(target, this.#total);
    } else {
      if (target) {
        // More than Content-Length said (undici normally stops this): fall back to chunks.
        this.#chunks.push(target.subarray(0, this.#total));
        this.#preallocated = null;
      }
      this.#chunks.push(chunk);
    }
    this.#total = total;
  }

  #collect(): Uint8Array {
    const target = this.#preallocated;
    if (target) return this.#total === target.length ? target : concatOwned([target.subarray(0, this.#total)], this.#total);
    return concatOwned(this.#chunks, this.#total);
  }

  #finish(body: Uint8Array, placed: BodyTarget | null = null): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#unsubscribe();
    this.#target = null; // handed over (or never made)
    this.#resolve({ status: this.#status, statusText: this.#statusText, headers: this.#headers, body, placed });
  }
}
