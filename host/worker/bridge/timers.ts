// Timers: the host event loop keeps the clock; the guest keeps the callbacks (core/timers.ts).
import { performance } from "node:perf_hooks";
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
      const period = Math.max(1, delay);
      const entry = { timer: undefined as unknown as NodeJS.Timeout, ref: !unref };
      // Node's timers run on the event loop's cached millisecond clock and can fire a
      // fraction of a millisecond early; web timers never fire before their delay. So each
      // timer keeps its due time and re-arms until it is reached. Intervals are re-armed
      // timeouts, each due one period after the previous firing.
      let due = performance.now() + period;
      const arm = () => {
        entry.timer = setTimeout(check, Math.max(1, Math.ceil(due - performance.now())));
      };
      const check = () => {
        const now = performance.now();
        if (now < due) return arm();
        if (repeat) {
          due = now + period;
          arm();
        }
        realm.fireTimer(id, repeat);
      };
      arm();
      activation.timers.set(id, entry);
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
