// Fetch §5.6 fetch(): the guest half. It builds and validates the request (Request
// constructor rules) and hands it to the host, which checks the URL's scheme and port,
// performs HTTP(S) requests over the sandbox transport and answers data: URLs back to us
// to be decoded here. Error records from the host become the exceptions the standard and
// our users expect.
import bridge from "scriptbox:bridge";
import { DOMException } from "scriptbox:web";
import { processDataURL } from "./data-url";

import { Request, type RequestOpts, requestForTransport } from "./request";
import { responseFromHead, type Response } from "./response";
import { PromiseCtor, TypeErrorCtor, Uint8ArrayCtor, jsonParse, jsonStringify } from "./util";

const addAbortAlgorithm = Symbol.for("scriptbox.addAbortAlgorithm");
const ErrorCtor = Error;

let nextFetchId = 1;

interface TransportError {
  type: "network-policy" | "limit" | "abort" | "network" | "timeout";
  message: string;
}

type Signal = { aborted: boolean; reason: unknown; [addAbortAlgorithm](algorithm: () => void): () => void };

const NETWORK_PREFIX = "fetch failed: ";

/**
 * A network failure: the message says what happened ("fetch failed: connect ECONNREFUSED
 * 127.0.0.1:4999"), and `cause` holds the bare reason, as undici's fetch has it.
 */
function networkFailure(message: string): TypeError {
  const detail = message.slice(0, NETWORK_PREFIX.length) === NETWORK_PREFIX ? message.slice(NETWORK_PREFIX.length) : message;
  return new TypeErrorCtor(detail ? NETWORK_PREFIX + detail : "fetch failed", { cause: new ErrorCtor(detail || "unknown network error") });
}

function fromRecord(error: unknown, signal: Signal | null): unknown {
  let record: TransportError | null = null;
  if (typeof error === "string") {
    try {
      record = jsonParse(error) as TransportError;
    } catch {
      return networkFailure(error);
    }
  }
  if (!record || typeof record !== "object") return error;
  const message = `${record.message}`;
  switch (record.type) {
    case "network-policy":
    case "limit":
      return new TypeErrorCtor(message);
    case "abort":
      return signal && signal.aborted ? signal.reason : new DOMException("The operation was aborted.", "AbortError");
    case "timeout":
      return new DOMException(message || "The operation timed out.", "TimeoutError");
    default:
      return networkFailure(message);
  }
}

/**
 * The error a failed fetch rejects with. It is made when the host answers, from a job with
 * no script frames on the stack; its stack is replaced by the frames of the fetch() call,
 * so that an uncaught failure points at the script's line.
 */
function transportError(error: unknown, signal: Signal | null, callSite: Error): unknown {
  const failure = fromRecord(error, signal);
  if (failure instanceof ErrorCtor && failure !== (signal && signal.reason)) {
    // The first frame is fetch() itself (scriptbox:http): the script's frames follow.
    const frames = `${callSite.stack ?? ""}`.split("\n");
    let stack = `${failure.name}: ${failure.message}`;
    for (let i = 0; i < frames.length; i++) if (frames[i]!.indexOf("(scriptbox:") === -1 && frames[i]!.trim() !== "") stack += `\n${frames[i]}`;
    failure.stack = stack;
  }
  return failure;
}

/** Fetch §4.2 scheme fetch for data: URLs: the host hands the URL back, we decode it. */
function dataResponse(href: string, method: string): Response {
  const [contentType, bytes] = processDataURL(href);
  // Fetch §4.1 main fetch step 22: a HEAD response has a null body.
  return responseFromHead(`200\nOK\n0\n${href}\ncontent-type\n${contentType}`, method === "HEAD" ? null : bytes);
}

export function fetch(input: Request | string, init?: RequestOpts): Promise<Response> {
  const callSite = new ErrorCtor(); // ~1 µs: the script's frames for a failure's stack
  return new PromiseCtor<Response>((resolve, reject) => {
    let url: string;
    let method = "GET";
    let requestInit: string | null = null;
    let buffer: ArrayBuffer | null = null;
    let abortable: Signal | null = null;
    if (typeof input === "string" && init === undefined) {
      // The common `fetch(url)`: no Request object to build. The host parses the URL
      // against the sandbox's location with the same URL standard and applies the Request
      // constructor's URL rules (a TypeError for an invalid URL or one with credentials).
      url = input;
    } else {
      const request = requestForTransport(new Request(input, init));
      abortable = request.signal as unknown as Signal | null;
      if (abortable && abortable.aborted) return reject(abortable.reason);
      url = request.url;
      method = request.method;
      if (request.method !== "GET" || request.headers.length > 0 || request.redirect !== "follow") {
        requestInit = jsonStringify({ method: request.method, headers: request.headers, redirect: request.redirect });
      }
      const body = request.body;
      if (body) {
        buffer = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? (body.buffer as ArrayBuffer) : body.slice().buffer;
      }
    }

    const id = nextFetchId++;
    let settled = false;
    let removeAbort: (() => void) | null = null;
    const dataURL = bridge.fetch(url, requestInit, buffer, id, (headOrError: string, body?: ArrayBuffer) => {
      if (settled) return;
      settled = true;
      if (removeAbort) removeAbort();
      if (body === undefined) reject(transportError(headOrError, abortable, callSite));
      else resolve(responseFromHead(headOrError, new Uint8ArrayCtor(body)));
    });
    if (dataURL !== undefined) return resolve(dataResponse(dataURL, method));
    if (abortable) {
      const signal = abortable;
      removeAbort = signal[addAbortAlgorithm](() => {
        if (settled) return;
        settled = true;
        bridge.fetchAbort(id);
        reject(signal.reason);
      });
    }
  });
}
