// fetch's host side. The guest sends a URL (as the script wrote it, or as its Request class
// serialized it), the rest of the request as JSON (or null for a plain GET), the body
// bytes, and one callback. URL rules come first (fetchUrl.ts): a bad URL throws a
// TypeError into the guest at once, a data: URL is handed back to be decoded in the guest.
// An http(s) request goes to the sandbox's transport (undici, network policy, limits,
// secrets: host/fetch/), and the answer comes back through the callback exactly once:
// onSettle(head, bodyArrayBuffer), or onSettle(errorJson) with a TransportErrorRecord.
//
// A body with a Content-Length (and no content coding, and no secret carried by the
// request) is written by the transport straight into a block of the guest's heap as the
// socket delivers it, and that block becomes the guest's ArrayBuffer (engine-bytes.ts):
// one copy between the socket and the guest. Other bodies arrive as host bytes and are
// moved in with newGuestBytes.
import type { QuickJSHandle } from "quickjs-emscripten-core";
import type { TransportResponseRecord } from "../../../guest-lib/types/bridge.js";
import { EngineBytes } from "../../engine/engine-bytes.js";
import { largestMovableBytes, canMoveBytes } from "../../engine/headroom.js";
import { CancelToken } from "../../fetch/cancel-token.js";
import { fetchTarget } from "../../fetch/fetchUrl.js";
import { TransportError, type TransportRequest } from "../../fetch/transport.js";
import type { Realm } from "../realm.js";
import { BridgeArgumentError, functionArg, integerArg, optionalBytesArg, optionalStringArg, stringArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

const MAX_REQUEST_RECORD_CHARS = 1024 * 1024;
const LINE_BREAK = /[\r\n]/;

function errorRecord(error: unknown): string {
  if (error instanceof TransportError) return JSON.stringify(error.toRecord());
  return JSON.stringify({ type: "network", message: `fetch failed: ${error instanceof Error ? error.message : String(error)}` });
}

/**
 * The response as the guest's responseFromHead reads it: lines of status, statusText,
 * redirected ("1"/"0"), URL, then name (lower-cased) and value lines per header. Cheaper
 * on both sides than JSON. A header that would break the line format (CR or LF in it, which
 * no valid field has) is left out, as the Headers class would refuse it.
 */
export function responseHead(response: TransportResponseRecord): string {
  const statusText = LINE_BREAK.test(response.statusText) ? "" : response.statusText;
  let head = `${response.status}\n${statusText}\n${response.redirected ? "1" : "0"}\n${response.url}`;
  for (const [name, value] of response.headers) {
    if (LINE_BREAK.test(name) || LINE_BREAK.test(value)) continue;
    head += `\n${name.toLowerCase()}\n${value}`;
  }
  return head;
}

/** The optional request JSON: method, headers and redirect mode (null: a plain GET). */
function requestInit(json: string | null): Pick<TransportRequest, "method" | "headers" | "redirect"> {
  if (json === null) return { method: "GET", headers: [], redirect: "follow" };
  if (json.length > MAX_REQUEST_RECORD_CHARS) throw new BridgeArgumentError("request record is too large");
  let record: unknown;
  try {
    record = JSON.parse(json);
  } catch {
    throw new BridgeArgumentError("request record is not valid JSON");
  }
  if (typeof record !== "object" || record === null || Array.isArray(record)) throw new BridgeArgumentError("request record must be an object");
  // Member types are checked by the transport (validateRequest), which trusts nothing.
  const { method, headers, redirect } = record as Record<string, unknown>;
  return { method, headers, redirect } as Pick<TransportRequest, "method" | "headers" | "redirect">;
}

export function fetchFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    fetch(urlHandle, initHandle, bodyHandle, idHandle, onSettleHandle): QuickJSHandle | undefined {
      const input = stringArg(ctx, urlHandle, "url");
      if (input.length > MAX_REQUEST_RECORD_CHARS) throw new BridgeArgumentError("url is too long");
      const init = requestInit(optionalStringArg(ctx, initHandle, "request record"));
      const body = optionalBytesArg(ctx, bodyHandle, "request body");
      const id = integerArg(ctx, idHandle, "fetch id", 1, Number.MAX_SAFE_INTEGER);
      const activation = realm.activation;
      if (!activation) throw new BridgeArgumentError("no script is running");
      if (activation.fetches.has(id)) throw new BridgeArgumentError(`fetch ${id} is already in flight`);
      const target = fetchTarget(input, realm.services.config().location);
      if (target.scheme === "data") return realm.newGuestString(target.href, "a data: URL");
      // Before anything is held or recorded: it throws (and the request never leaves) once
      // the embedder has stopped the activation or withdrawn it to run it elsewhere.
      activation.noteEffect();
      const onSettle = realm.own(functionArg(ctx, onSettleHandle, "onSettle"));

      const engine = realm.services.engine;
      const controller = new CancelToken();
      activation.fetches.set(id, { abort: () => controller.abort() });
      /** Calls the guest's callback (once), then lets go of it. */
      const settle = (args: () => QuickJSHandle[]) => {
        realm.guestTask(() => {
          if (realm.activation !== activation || !activation.fetches.delete(id)) return;
          const values = args();
          const done = realm.enterGuest(() => ctx.callFunction(onSettle, ctx.undefined, values));
          for (const value of values) value.dispose();
          done?.dispose();
        });
        if (realm.alive && onSettle.alive) {
          realm.disown(onSettle);
          onSettle.dispose();
        }
      };
      realm.services
        .transport()
        .fetch(
          { url: target.url, ...init, body },
          {
            signal: controller,
            counter: activation.fetchCounter,
            responseBodyBudget: () => largestMovableBytes(engine, activation.limits.maxResponseBytes),
            responseBodyFits: (bytes) => canMoveBytes(engine, bytes), // no probe at all below 64 KiB
            // Asked after responseBodyFits accepted the length: the headroom was probed first.
            bodyTarget: (length) => {
              if (!realm.alive) return null;
              const block = EngineBytes.allocate(engine, length, (gone) => realm.disown(gone));
              // Freed with the realm if nothing else frees it first.
              return block && realm.own(block);
            },
          },
        )
        .then(
          ({ response, body: bytes, placed }) => {
            if (placed) {
              const block = placed as EngineBytes;
              settle(() => {
                const head = realm.newGuestString(responseHead(response), "a response head");
                const body = block.adopt(ctx);
                if (body === null) {
                  head.dispose();
                  realm.stopForMemory(`no room for a response body (${block.length} bytes)`);
                }
                return [head, body];
              });
              // Not adopted (the activation ended, or the head did not fit): free the block now.
              block.release();
              return;
            }
            if (!canMoveBytes(engine, bytes.byteLength)) {
              const message = `limit: memoryBytes headroom too small for a ${bytes.byteLength}-byte response body`;
              return settle(() => [realm.newGuestString(JSON.stringify({ type: "limit", message }), "a fetch error")]);
            }
            settle(() => {
              const exact = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
              const body = (exact ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) as ArrayBuffer;
              const head = realm.newGuestString(responseHead(response), "a response head");
              try {
                return [head, realm.newGuestBytes(body, "a response body")];
              } catch (error) {
                head.dispose();
                throw error;
              }
            });
          },
          (error) => settle(() => [realm.newGuestString(errorRecord(error), "a fetch error")]),
        );
      return undefined;
    },
    fetchAbort(idHandle) {
      const id = integerArg(ctx, idHandle, "fetch id", 1, Number.MAX_SAFE_INTEGER);
      realm.activation?.fetches.get(id)?.abort();
      return undefined;
    },
    location() {
      const location = realm.services.config().location;
      return location === null ? ctx.null : ctx.newString(location);
    },
  };
}
