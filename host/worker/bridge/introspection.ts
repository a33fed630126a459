// What only the host can see about guest values (QuickJS has no way to read a promise's
// state from JavaScript; used by console formatting: `Promise { <pending> }`), and the
// run's limits, for guest library loops whose time goes into native calls.
import type { Realm } from "../realm.js";
import type { BridgeFunctions } from "./index.js";
import { BridgeArgumentError } from "./args.js";

export function introspectionFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    promiseState(promiseHandle) {
      if (promiseHandle === undefined) throw new BridgeArgumentError("promiseState needs a promise");
      const state = ctx.getPromiseState(promiseHandle);
      const out = ctx.newArray();
      const label = ctx.newString(state.type === "fulfilled" && state.notAPromise ? "fulfilled" : state.type);
      ctx.setProp(out, 0, label);
      label.dispose();
      if (state.type === "fulfilled") {
        ctx.setProp(out, 1, state.value);
        if (!state.notAPromise) state.value.dispose();
      } else if (state.type === "rejected") {
        ctx.setProp(out, 1, state.error);
        state.error.dispose();
      }
      return out;
    },
    /**
     * Nothing but the check every bridge call makes first (bridgeEntries): past a deadline it
     * throws. QuickJS polls the interrupt handler once per 10,000 calls and back-edges, so a
     * loop of a few long native calls (the marshal module writing 180 MB of JSON in parts of
     * ~10 ms each) would reach it only after minutes, and the watchdog would terminate the
     * worker first.
     */
    checkLimits() {
      return undefined;
    },
  };
}
