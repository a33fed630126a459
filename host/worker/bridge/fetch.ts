// fetch's host side: the guest's request record goes to the sandbox's transport (undici,
// network policy, limits, secrets: host/fetch/); the answer comes back through the
// guest's callbacks: onResponse(responseJson, bodyArrayBuffer), or onError with a
// TransportErrorRecord as JSON.
import { largestMovableBytes, canMoveBytes } from "../../engine/headroom.js";
import type { TransportRequest } from "../../fetch/transport.js";
import { TransportError } from "../../fetch/transport.js";
import { CancelToken } from "../../fetch/cancel-token.js";
import type { Realm } from "../realm.js";
import type { QuickJSHandle } from "quickjs-emscripten-core";
import { BridgeArgumentError, functionArg, integerArg, optionalBytesArg, stringArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

const MAX_REQUEST_RECORD_CHARS = 1024 * 1024;

function errorRecord(error: unknown): string {
  if (error instanceof TransportError) return JSON.stringify(error.toRecord());
  return JSON.stringify({ type: "network", message: `fetch failed: ${error instanceof Error ? error.message : String(error)}` });
}

export function fetchFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    fetch(recordHandle, bodyHandle, idHandle, onResponseHandle, onErrorHandle) {
      const json = stringArg(ctx, recordHandle, "request record");
      if (json.length > MAX_REQUEST_RECORD_CHARS) throw new BridgeArgumentError("request record is too large");
      let record: unknown;
      try {
        record = JSON.parse(json);
      } catch {
        throw new BridgeArgumentError("request record is not valid JSON");
      }
      if (typeof record !== "object" || record === null || Array.isArray(record)) throw new BridgeArgumentError("request record must be an object");
      const body = optionalBytesArg(ctx, bodyHandle, "request body");
      const id = integerArg(ctx, idHandle, "fetch id", 1, Number.MAX_SAFE_INTEGER);
      const activation = realm.activation;
      if (!activation) throw new BridgeArgumentError("no script is running");
      if (activation.fetches.has(id)) throw new BridgeArgumentError(`fetch ${id} is already in flight`);
      if (ctx.typeof(onResponseHandle!) !== "function" || ctx.typeof(onErrorHandle!) !== "function") {
        throw new BridgeArgumentError("fetch needs an onResponse and an onError function");
      }
      const onResponse = realm.own(functionArg(ctx, onResponseHandle, "onResponse"));
      const onError = realm.own(functionArg(ctx, onErrorHandle, "onError"));

      const engine = realm.services.engine;
      const controller = new CancelToken();
      activation.fetches.set(id, { abort: () => controller.abort() });
      activation.fetchCount++;
      /** Calls one of the guest's callbacks (once), then lets go of both. */
      const settle = (callback: QuickJSHandle, args: () => QuickJSHandle[]) => {
        realm.guestTask(() => {
          if (realm.activation !== activation || !activation.fetches.delete(id)) return;
          const values = args();
          const done = realm.enterGuest(() => ctx.callFunction(callback, ctx.undefined, values));
          for (const value of values) value.dispose();
          done?.dispose();
        });
        for (const handle of [onResponse, onError]) {
          if (realm.alive && handle.alive) {
            realm.disown(handle);
            handle.dispose();
          }
        }
      };
      const request = { ...(record as object), body } as TransportRequest;
      realm.services
        .transport()
        .fetch(request, {
          signal: controller,
          responseBodyBudget: () => largestMovableBytes(engine, activation.limits.maxResponseBytes),
        })
        .then(
          ({ response, body: bytes }) => {
            if (!canMoveBytes(engine, bytes.byteLength)) {
              const message = `limit: memoryBytes headroom too small for a ${bytes.byteLength}-byte response body`;
              return settle(onError, () => [ctx.newString(JSON.stringify({ type: "limit", message }))]);
            }
            settle(onResponse, () => {
              const exact = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
              return [
                ctx.newString(JSON.stringify(response)),
                ctx.newArrayBuffer(exact ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
              ];
            });
          },
          (error: unknown) => settle(onError, () => [ctx.newString(errorRecord(error))]),
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
