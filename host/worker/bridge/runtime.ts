// The `runtime` and `cloud` modules' host side: env values, secret placeholders (never
// values), and the cloud client's configuration (placeholders again).
import type { Realm } from "../realm.js";
import { stringArgUpTo } from "./args.js";
import type { BridgeFunctions } from "./index.js";

export function runtimeFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    env() {
      return realm.newGuestString(JSON.stringify(realm.services.config().env), "env");
    },
    secret(nameHandle) {
      const transport = realm.services.transport();
      // A name longer than every secret's names none: refused unread (a loop of
      // secret(hugeString) calls cost ~9 ms each, overshooting its CPU limit by that much).
      const name = stringArgUpTo(ctx, nameHandle, "secret name", transport.longestSecretName(), (length) => new TypeError(`secret(<a name of ${length} characters>): no such secret`));
      return realm.newGuestString(transport.secretPlaceholder(name));
    },
    cloudConfig() {
      const cloud = realm.services.config().cloud;
      if (cloud === null) return ctx.newString("null");
      const transport = realm.services.transport();
      return realm.newGuestString(
        JSON.stringify({
          baseUrl: cloud.baseUrl,
          token: cloud.token ? transport.secretPlaceholder(cloud.token.secret) : null,
          session: cloud.session ? transport.secretPlaceholder(cloud.session.secret) : null,
        }),
      );
    },
  };
}
