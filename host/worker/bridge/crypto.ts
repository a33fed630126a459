// Randomness for crypto.getRandomValues / randomUUID, from the host's CSPRNG.
import { randomBytes } from "node:crypto";
import type { Realm } from "../realm.js";
import { integerArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

export function cryptoFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    randomBytes(lengthHandle) {
      const length = integerArg(ctx, lengthHandle, "byte length", 0, 65536);
      const bytes = randomBytes(length);
      return realm.newGuestBytes(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + length), "random bytes");
    },
  };
}
