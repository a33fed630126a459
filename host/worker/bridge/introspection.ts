// What only the host can see about guest values (QuickJS has no way to read a promise's
// state from JavaScript); used by console formatting: `Promise { <pending> }`.
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
  };
}
