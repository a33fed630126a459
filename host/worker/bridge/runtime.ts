// The `runtime` module's host side: env values, and secret placeholders (never values).
import type { Realm } from "../realm.js";
import { stringArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

export function runtimeFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    env() {
      return ctx.newString(JSON.stringify(realm.services.config().env));
    },
    secret(nameHandle) {
      const name = stringArg(ctx, nameHandle, "secret name");
      return ctx.newString(realm.services.transport().secretPlaceholder(name));
    },
  };
}
