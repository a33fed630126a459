// The bridge object handed to the guest core: the only host functions guest code can call
// (see guest-lib/types/bridge.d.ts for the contract). One module per capability installs
// its functions; this file wraps each so that a failure becomes a guest exception.
import type { QuickJSHandle } from "quickjs-emscripten-core";
import { newHostFunctionObject } from "../../engine/host-function-object.js";
import { GuestMemoryError, GuestThrow, type Realm } from "../realm.js";
import { consoleFunctions } from "./console.js";
import { cryptoFunctions } from "./crypto.js";
import { fetchFunctions } from "./fetch.js";
import { hostModuleFunctions } from "./host-modules.js";
import { intlFunctions } from "./intl.js";
import { introspectionFunctions } from "./introspection.js";
import { moduleFunctions } from "./modules.js";
import { performanceFunctions } from "./performance.js";
import { runtimeFunctions } from "./runtime.js";
import { textFunctions } from "./text.js";
import { timerFunctions } from "./timers.js";
import { webCryptoFunctions } from "./webcrypto.js";

export type BridgeFunction = (...args: QuickJSHandle[]) => QuickJSHandle | undefined;
export type BridgeFunctions = Record<string, BridgeFunction>;

export type BridgeEntries = [name: string, fn: (...args: QuickJSHandle[]) => unknown][];

/** The guest object holding the bridge's functions (`entries`: bridgeFunctions(realm)). */
export function createBridge(realm: Realm, entries: BridgeEntries): QuickJSHandle {
  // Made with the engine's own entry points (host/engine/host-function-object.ts): the
  // library's newFunction + setProp cost ~1.7 µs and a few objects per function, per realm.
  return newHostFunctionObject(realm.context, realm.services.engine, entries);
}

/**
 * Each bridge function under its name, bound to `realm`. A realm made from a memory image
 * gets the guest object from the image and only these (host/worker/realm.ts).
 */
export function bridgeFunctions(realm: Realm): BridgeEntries {
  // One record per capability, read in place: spreading them into one object cost ~40 µs
  // of every realm (a realm is built per run).
  const parts: BridgeFunctions[] = [
    consoleFunctions(realm),
    timerFunctions(realm),
    moduleFunctions(realm),
    cryptoFunctions(realm),
    runtimeFunctions(realm),
    fetchFunctions(realm),
    introspectionFunctions(realm),
    textFunctions(realm),
    hostModuleFunctions(realm),
    webCryptoFunctions(realm),
    performanceFunctions(realm),
    intlFunctions(realm),
  ];
  return wrapped(realm, parts);
}

/** Each bridge function under its name, wrapped so that a failure becomes a guest exception. */
function wrapped(realm: Realm, parts: BridgeFunctions[]): BridgeEntries {
  const ctx = realm.context;
  const entries: BridgeEntries = [];
  for (const functions of parts) {
    for (const name in functions) {
      const impl = functions[name]!;
      entries.push([
        name,
        (...args) => {
          // A bridge call can cost far more than the bytecode around it (a 1 MB argument read
          // and echoed), and QuickJS polls the interrupt handler only every few thousand
          // back-edges: past a deadline, refuse the call at once (a throw the script may catch,
          // but each retry is then cheap and the engine's own check follows soon).
          if (realm.guard.inGuest && realm.guard.shouldInterrupt()) return { error: ctx.undefined };
          try {
            return impl(...args);
          } catch (error) {
            if (error instanceof WebAssembly.RuntimeError) throw error; // the engine failed: let the realm see it
            // No room for a host value: the run is already stopping with kind memory. Throw the
            // guest's null, which allocates nothing (a result would let the script go on into a
            // heap with no room until the engine's next interrupt check).
            if (error instanceof GuestMemoryError) return { error: ctx.null };
            if (error instanceof GuestThrow) return { error: error.value };
            const name = error instanceof RangeError ? "RangeError" : error instanceof TypeError ? "TypeError" : "Error";
            const message = error instanceof Error ? error.message : String(error);
            return { error: realm.guestError(name, message) };
          }
        },
      ]);
    }
  }
  return entries;
}
