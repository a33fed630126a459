// fetch's host side: the guest's request record goes to the sandbox's transport (undici,
// network policy, limits, secrets: host/fetch/); the answer comes back as
// [responseJson, bodyArrayBuffer], or a rejection with a TransportErrorRecord as JSON.
import { largestMovableBytes, canMoveBytes } from "../../engine/headroom.js";
import type { TransportRequest } from "../../fetch/transport.js";
import { TransportError } from "../../fetch/transport.js";
import { CancelToken } from "../../fetch/cancel-token.js";
import type { Realm } from "../realm.js";
import { BridgeArgumentError, integerArg, optionalBytesArg, stringArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

const MAX_REQUEST_RECORD_CHARS = 1024 * 1024;

function errorRecord(error: unknown): string {
  if (error instanceof TransportError) return JSON.stringify(error.toRecord());
  return JSON.stringify({ type: "network", message: `fetch failed: ${error instanceof Error ? error.message : String(error)}` });
}

export function fetchFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    fetch(recordHandle, bodyHandle, idHandle) {
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

      const engine = realm.services.engine;
      const controller = new CancelToken();
      const deferred = realm.own(realm.newDeferred());
      activation.fetches.set(id, { abort: () => controller.abort() });
      activation.fetchCount++;
      const settle = (work: () => void) => {
        realm.guestTask(() => {
          if (realm.activation === activation && activation.fetches.delete(id)) work();
        });
        if (realm.alive && deferred.alive) {
          realm.disown(deferred);
          deferred.dispose();
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
          ({ response, body: bytes }) =>
            settle(() => {
              if (!canMoveBytes(engine, bytes.byteLength)) {
                const message = `limit: memoryBytes headroom too small for a ${bytes.byteLength}-byte response body`;
                const rejection = ctx.newString(JSON.stringify({ type: "limit", message }));
                deferred.reject(rejection);
                rejection.dispose();
                return;
              }
              const meta = ctx.newString(JSON.stringify(response));
              const exact = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
              const buffer = ctx.newArrayBuffer(exact ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
              const pair = ctx.newArray();
              ctx.setProp(pair, 0, meta);
              ctx.setProp(pair, 1, buffer);
              deferred.resolve(pair);
              for (const handle of [pair, buffer, meta]) handle.dispose();
            }),
          (error: unknown) =>
            settle(() => {
              const rejection = ctx.newString(errorRecord(error));
              deferred.reject(rejection);
              rejection.dispose();
            }),
        );
      return deferred.handle.dup();
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
