// Timers: the host event loop keeps the clock; the guest keeps the callbacks (core/timers.ts).
import type { Realm } from "../realm.js";
import { BridgeArgumentError, booleanArg, integerArg, numberArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

const MAX_DELAY = 2 ** 31 - 1;

export function timerFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    timerStart(idHandle, delayHandle, repeatHandle, unrefHandle) {
      const id = integerArg(ctx, idHandle, "timer id", 1, Number.MAX_SAFE_INTEGER);
      const delay = Math.floor(numberArg(ctx, delayHandle, "timer delay", 0, MAX_DELAY));
      const repeat = booleanArg(ctx, repeatHandle, "timer repeat");
      const unref = booleanArg(ctx, unrefHandle, "timer unref");
      const activation = realm.activation;
      if (!activation) throw new BridgeArgumentError("no script is running");
      if (activation.timers.has(id)) throw new BridgeArgumentError(`timer ${id} is already scheduled`);
      if (activation.timers.size >= activation.limits.maxTimers) {
        const message = `maxTimers limit (${activation.limits.maxTimers} pending timers) exceeded`;
        realm.stopForLimit(message);
        throw new RangeError(message);
      }
      const fire = () => realm.fireTimer(id, repeat);
      const timer = repeat ? setInterval(fire, Math.max(1, delay)) : setTimeout(fire, Math.max(1, delay));
      activation.timers.set(id, { timer, ref: !unref });
      if (!unref) activation.refTimers++;
      return undefined;
    },
    timerStop(idHandle) {
      const id = integerArg(ctx, idHandle, "timer id", 1, Number.MAX_SAFE_INTEGER);
      const activation = realm.activation;
      const entry = activation?.timers.get(id);
      if (activation && entry) {
        clearTimeout(entry.timer);
        activation.timers.delete(id);
        if (entry.ref) activation.refTimers--;
      }
      return undefined;
    },
  };
}
