// The clock behind the guest's `performance` (High Resolution Time). The time origin of a
// realm is the start of its first activation (the run, or the plugin's load), not the
// moment the realm was built: realms are built ahead of time, off the request path.
// Readings are coarsened to 5 µs, as browsers do, so that the clock is no finer a timer
// than the script needs.
import type { Realm } from "../realm.js";
import { BridgeArgumentError } from "./args.js";
import type { BridgeFunctions } from "./index.js";

const PER_MS = 200; // 5 µs steps

export function performanceFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  let origin: number | null = null; // performance.now() of this thread at the time origin
  const originFor = (): number => {
    if (origin === null) {
      const activation = realm.activation;
      if (!activation) throw new BridgeArgumentError("no script is running");
      origin = activation.startedAt;
    }
    return origin;
  };
  return {
    performanceNow() {
      const elapsed = performance.now() - originFor();
      return ctx.newNumber(Math.floor(elapsed * PER_MS) / PER_MS);
    },
    performanceTimeOrigin() {
      return ctx.newNumber(Math.floor((performance.timeOrigin + originFor()) * PER_MS) / PER_MS);
    },
  };
}
