// Digests and HMAC for the guest's crypto.subtle (guest-lib/subtle), computed by
// node:crypto. The guest holds its own key bytes (a script's keys are the script's); the
// host only hashes. The bytes are read in place, never copied out of the engine, and the
// time spent here runs on the worker's clock, so it counts towards the run's cpuTimeMs.
import { createHash, createHmac } from "node:crypto";
import { canMoveBytes } from "../../engine/headroom.js";
import type { Realm } from "../realm.js";
import { BridgeArgumentError, stringArg, withBytesArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

/** Web Crypto hash names → node:crypto names. */
const HASHES: Record<string, string> = { "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512" };

/** HMAC keys longer than this are refused: a real key is at most a few hundred bytes. */
const MAX_HMAC_KEY_BYTES = 64 * 1024;

function hashArg(name: string): string {
  const hash = Object.hasOwn(HASHES, name) ? HASHES[name] : undefined;
  if (hash === undefined) throw new BridgeArgumentError(`hash must be one of ${Object.keys(HASHES).join(", ")}`);
  return hash;
}

export function webCryptoFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  const answer = (digest: Buffer) => {
    if (!canMoveBytes(realm.services.engine, digest.byteLength)) throw new RangeError("memoryBytes limit: no room for the digest");
    return ctx.newArrayBuffer(digest.buffer.slice(digest.byteOffset, digest.byteOffset + digest.byteLength));
  };
  return {
    cryptoDigest(hashHandle, dataHandle) {
      const hash = hashArg(stringArg(ctx, hashHandle, "hash"));
      const digest = withBytesArg(ctx, dataHandle, "data", (data) => createHash(hash).update(data).digest());
      return answer(digest);
    },
    cryptoHmac(hashHandle, keyHandle, dataHandle) {
      const hash = hashArg(stringArg(ctx, hashHandle, "hash"));
      const key = withBytesArg(ctx, keyHandle, "key", (bytes) => {
        if (bytes.byteLength > MAX_HMAC_KEY_BYTES) throw new BridgeArgumentError(`key must be at most ${MAX_HMAC_KEY_BYTES} bytes`);
        return Buffer.from(bytes); // a copy: the data view below may not coexist with this one
      });
      const mac = withBytesArg(ctx, dataHandle, "data", (data) => createHmac(hash, key).update(data).digest());
      return answer(mac);
    },
  };
}
