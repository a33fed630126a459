// console output: the guest formats, the host keeps (capped by maxLogBytes) and streams.
import type { LogLevel } from "../../types.js";
import type { Realm } from "../realm.js";
import { BridgeArgumentError, stringArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

const LEVELS = new Set<LogLevel>(["log", "info", "warn", "error", "debug", "trace"]);

export function consoleFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  return {
    log(levelHandle, messageHandle) {
      const level = stringArg(ctx, levelHandle, "log level") as LogLevel;
      if (!LEVELS.has(level)) throw new BridgeArgumentError(`log level must be one of ${[...LEVELS].join(", ")}`);
      const message = stringArg(ctx, messageHandle, "log message");
      realm.activation?.log(level, message);
      return undefined;
    },
  };
}
