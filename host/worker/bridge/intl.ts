// Intl for the guest, computed by the host's Intl (Node's full ICU): QuickJS has none. The
// guest's Intl classes (guest-lib/intl) send one JSON request per operation:
//   [constructor, locales, options, method, args]
// and get the result as JSON. Only the constructors and methods below are reachable; the
// formatter objects are cached per realm (a few dozen at most), so a loop that formats
// with one NumberFormat builds it once.
import type { Realm } from "../realm.js";
import { BridgeArgumentError, stringArg } from "./args.js";
import type { BridgeFunctions } from "./index.js";

/** Constructor → the methods a guest may call on an instance. */
const METHODS: Record<string, readonly string[]> = {
  DateTimeFormat: ["format", "formatToParts", "formatRange", "formatRangeToParts", "resolvedOptions"],
  NumberFormat: ["format", "formatToParts", "formatRange", "formatRangeToParts", "resolvedOptions"],
  Collator: ["compare", "resolvedOptions"],
  PluralRules: ["select", "selectRange", "resolvedOptions"],
  RelativeTimeFormat: ["format", "formatToParts", "resolvedOptions"],
  ListFormat: ["format", "formatToParts", "resolvedOptions"],
  DisplayNames: ["of", "resolvedOptions"],
  Intl: [],
};
const MAX_REQUEST_CHARS = 256 * 1024;
const MAX_CACHED = 64;

type IntlInstance = Record<string, (...args: unknown[]) => unknown>;

/**
 * Guest values that JSON cannot carry: { $bigint: "123" } (NumberFormat) → 123n, and
 * { $undefined: 1 } → undefined (a hole in the argument list, which apply passes as undefined).
 */
function revive(_key: string, value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    if (record.$undefined === 1 && Object.keys(record).length === 1) return undefined;
    if (typeof record.$bigint === "string" && Object.keys(record).length === 1 && /^-?\d{1,400}$/.test(record.$bigint)) return BigInt(record.$bigint);
  }
  return value;
}

export function intlFunctions(realm: Realm): BridgeFunctions {
  const ctx = realm.context;
  const cache = new Map<string, IntlInstance>();

  const instance = (constructor: string, locales: unknown, options: unknown): IntlInstance => {
    const key = JSON.stringify([constructor, locales, options]);
    let found = cache.get(key);
    if (found === undefined) {
      const Ctor = (Intl as unknown as Record<string, new (locales: unknown, options: unknown) => IntlInstance>)[constructor]!;
      found = new Ctor(locales ?? undefined, options ?? undefined);
      if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
      cache.set(key, found);
    }
    return found;
  };

  return {
    intl(requestHandle) {
      const text = stringArg(ctx, requestHandle, "request");
      if (text.length > MAX_REQUEST_CHARS) throw new BridgeArgumentError(`request must be at most ${MAX_REQUEST_CHARS} characters`);
      let request: unknown;
      try {
        request = JSON.parse(text, revive);
      } catch {
        throw new BridgeArgumentError("request must be JSON text");
      }
      if (!Array.isArray(request) || request.length !== 5) throw new BridgeArgumentError("request must be [constructor, locales, options, method, args]");
      const [constructor, locales, options, method, args] = request as [unknown, unknown, unknown, unknown, unknown];
      if (typeof constructor !== "string" || !Object.hasOwn(METHODS, constructor)) throw new BridgeArgumentError(`unknown Intl constructor ${String(constructor)}`);
      if (locales !== null && typeof locales !== "string" && !(Array.isArray(locales) && locales.every((l) => typeof l === "string"))) {
        throw new BridgeArgumentError("locales must be a string, an array of strings or null");
      }
      if (options !== null && (typeof options !== "object" || Array.isArray(options))) throw new BridgeArgumentError("options must be an object or null");
      if (!Array.isArray(args)) throw new BridgeArgumentError("args must be an array");
      let result: unknown;
      if (constructor === "Intl") {
        // The namespace's own functions: [ "Intl", null, null, name, [argument] ].
        if (method !== "getCanonicalLocales" && method !== "supportedValuesOf") throw new BridgeArgumentError(`Intl has no function ${String(method)}`);
        result = (Intl as unknown as Record<string, (argument: unknown) => unknown>)[method]!(args[0]);
      } else if (method === "supportedLocalesOf") {
        const Ctor = (Intl as unknown as Record<string, { supportedLocalesOf(locales: unknown, options: unknown): string[] }>)[constructor]!;
        result = Ctor.supportedLocalesOf(locales ?? undefined, options ?? undefined);
      } else {
        if (typeof method !== "string" || !METHODS[constructor]!.includes(method)) throw new BridgeArgumentError(`Intl.${constructor} has no method ${String(method)}`);
        // Intl's own RangeErrors and TypeErrors (an invalid locale, option or value) reach
        // the guest as the same kinds of error.
        const target = instance(constructor, locales, options);
        result = target[method]!.apply(target, args);
      }
      return ctx.newString(JSON.stringify(result ?? null));
    },
  };
}
