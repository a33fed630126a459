// Fetch §5.6 fetch(): the guest half. It builds and validates the request, answers data:
// URLs itself, refuses other non-HTTP(S) schemes, and hands HTTP(S) requests to the host
// transport as one record (plus body bytes), mapping the host's error records to the
// exceptions the standard and our users expect.
import bridge from "scriptbox:bridge";
import { DOMException } from "scriptbox:web";
import { processDataURL } from "./data-url";

import { Request, type RequestOpts, plainGetForTransport, requestForTransport } from "./request";
import { responseFromTransport, type Response } from "./response";
import { PromiseCtor, TypeErrorCtor, Uint8ArrayCtor, jsonParse, jsonStringify } from "./util";

const addAbortAlgorithm = Symbol.for("scriptbox.addAbortAlgorithm");
const ErrorCtor = Error;

// Fetch §2.9 port blocking.
const BAD_PORTS = new Set(
  "0,1,7,9,11,13,15,17,19,20,21,22,23,25,37,42,43,53,69,77,79,87,95,101,102,103,104,109,110,111,113,115,117,119,123,135,137,139,143,161,179,389,427,465,512,513,514,515,526,530,531,532,540,548,554,556,563,587,601,636,989,990,993,995,1719,1720,1723,2049,3659,4045,4190,5060,5061,6000,6566,6665,6666,6667,6668,6669,6679,6697,10080".split(","),
);

let nextFetchId = 1;

interface TransportError {
  type: "network-policy" | "limit" | "abort" | "network" | "timeout";
  message: string;
}

type Signal = { aborted: boolean; reason: unknown; [addAbortAlgorithm](algorithm: () => void): () => void };

function transportError(error: unknown, signal: Signal | null): unknown {
  let record: TransportError | null = null;
  if (typeof error === "string") {
    try {
      record = jsonParse(error) as TransportError;
    } catch {
      return new TypeErrorCtor("fetch failed", { cause: new ErrorCtor(error) });
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
      return new TypeErrorCtor("fetch failed", { cause: new ErrorCtor(message) });
  }
}

export function fetch(input: Request | string, init?: RequestOpts): Promise<Response> {
  return new PromiseCtor<Response>((resolve, reject) => {
    // The common `fetch(url)`: no Request object to build (see plainGetForTransport).
    const { url, method, headers, redirect, body, signal } =
      typeof input === "string" && init === undefined ? plainGetForTransport(input) : requestForTransport(new Request(input, init));
    const abortable = signal as unknown as Signal | null;
    if (abortable && abortable.aborted) return reject(abortable.reason);
    const hash = url.indexOf("#");
    const target = hash < 0 ? url : url.slice(0, hash);
    const scheme = target.slice(0, target.indexOf(":") + 1);
    if (scheme === "data:") {
      const [contentType, bytes] = processDataURL(target);
      const record = { status: 200, statusText: "OK", headers: [["content-type", contentType]] as [string, string][], url: target, redirected: false };
      return resolve(responseFromTransport(record, bytes));
    }
    if (scheme !== "http:" && scheme !== "https:") {
      throw new TypeErrorCtor(`fetch: the ${scheme} scheme is not supported (only http:, https: and data:)`);
    }
    const port = /^https?:\/\/(?:\[[^\]]*\]|[^/:]*)(?::(\d+))?/.exec(target)![1];
    if (port !== undefined && BAD_PORTS.has(port)) throw new TypeErrorCtor(`fetch: port ${port} is blocked (Fetch §2.9 bad ports)`);

    const id = nextFetchId++;
    let settled = false;
    let removeAbort: (() => void) | null = null;
    if (abortable) {
      removeAbort = abortable[addAbortAlgorithm](() => {
        if (settled) return;
        settled = true;
        bridge.fetchAbort(id);
        reject(abortable.reason);
      });
    }
    let buffer: ArrayBuffer | null = null;
    if (body) {
      buffer = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? (body.buffer as ArrayBuffer) : body.slice().buffer;
    }
    // (A plain GET's record is written directly: this runs on every fetch.)
    const record =
      method === "GET" && headers.length === 0 && redirect === "follow"
        ? `{"url":${jsonStringify(target)},"method":"GET","headers":[],"redirect":"follow"}`
        : jsonStringify({ url: target, method, headers, redirect });
    bridge.fetch(
      record,
      buffer,
      id,
      (responseJson, responseBody) => {
        if (settled) return;
        settled = true;
        if (removeAbort) removeAbort();
        resolve(responseFromTransport(jsonParse(responseJson), new Uint8ArrayCtor(responseBody)));
      },
      (error) => {
        if (settled) return;
        settled = true;
        if (removeAbort) removeAbort();
        reject(transportError(error, abortable));
      },
    );
  });
}


