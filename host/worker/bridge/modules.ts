// Guest modules enter a context on first use (see guest-lib/core/modules.ts).
import type { Realm } from "../realm.js";
import { stringArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

export function moduleFunctions(realm: Realm): BridgeFunctions {
  return {
    loadModule(nameHandle) {
      return realm.loadGuestModule(stringArg(realm.context, nameHandle, "module name"));
    },
  };
}
