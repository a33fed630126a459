// ECMA-402 Intl for scripts, computed by the host's Intl (full ICU) through one bridge call
// per operation (bridge.intl). QuickJS has no Intl of its own. Provided: DateTimeFormat,
// NumberFormat, Collator, PluralRules, RelativeTimeFormat, ListFormat, DisplayNames (their
// format/…ToParts/range/select/compare/of/resolvedOptions methods and supportedLocalesOf),
// and Intl.getCanonicalLocales / supportedValuesOf. Not provided: Intl.Segmenter,
// Intl.Locale, and the locale-sensitive methods of String, Number and Date
// (toLocaleString and friends keep QuickJS's locale-independent output).
import bridge from "scriptbox:bridge";

const jsonStringify = JSON.stringify;
const jsonParse = JSON.parse;
const DateCtor = Date;
const getTime = Date.prototype.getTime;

/** Arguments as JSON can carry them: Dates as epoch ms, BigInts as { $bigint }, undefined as { $undefined }. */
function wire(value: unknown): unknown {
  if (value === undefined) return { $undefined: 1 }; // JSON would make it null: format(null) is 1970, format(undefined) is now
  if (value instanceof DateCtor) return getTime.call(value);
  if (typeof value === "bigint") return { $bigint: `${value}` };
  if (typeof value === "symbol") throw new TypeError("Cannot convert a Symbol value to a string");
  return value;
}

/** Locales as ECMA-402 CanonicalizeLocaleList takes them: undefined, a string or a list of strings. */
function localeList(locales: unknown): string | string[] | null {
  if (locales === undefined) return null;
  if (typeof locales === "string") return locales;
  if (typeof locales !== "object" || locales === null) throw new TypeError("locales must be a string or an array of strings");
  const list: string[] = [];
  for (const locale of Array.from(locales as ArrayLike<unknown>)) {
    if (typeof locale !== "string" && (typeof locale !== "object" || locale === null)) throw new TypeError("a locale must be a string");
    list.push(String(locale));
  }
  return list;
}

/** Options as plain data: the option bag's own enumerable properties with primitive values. */
function optionBag(options: unknown): Record<string, unknown> | null {
  if (options === undefined) return null;
  if (options === null) throw new TypeError("options cannot be null");
  if (typeof options !== "object") return {};
  const out: Record<string, unknown> = {};
  for (const key in options as Record<string, unknown>) {
    const value = (options as Record<string, unknown>)[key];
    if (value === undefined || typeof value === "function" || typeof value === "symbol") continue;
    out[key] = typeof value === "object" && value !== null ? String(value) : value;
  }
  return out;
}

function call(constructor: string, locales: unknown, options: unknown, method: string, args: unknown[]): unknown {
  return jsonParse(bridge.intl(jsonStringify([constructor, locales, options, method, args])));
}

interface Formatter {
  readonly locales: string | string[] | null;
  readonly options: Record<string, unknown> | null;
}

const state = new WeakMap<object, Formatter>();

function stateOf(self: unknown, constructor: string): Formatter {
  const found = typeof self === "object" && self !== null ? state.get(self) : undefined;
  if (found === undefined) throw new TypeError(`Method Intl.${constructor}.prototype called on an incompatible receiver`);
  return found;
}

/**
 * An Intl constructor whose instances forward `methods` to the host. `bound` names the
 * methods ECMA-402 exposes as bound getters (NumberFormat's format, Collator's compare).
 */
function intlClass(constructor: string, methods: string[], bound: string[] = []): new (locales?: unknown, options?: unknown) => object {
  const Ctor = function (this: object, locales?: unknown, options?: unknown) {
    const formatter = { locales: localeList(locales), options: optionBag(options) };
    // Constructing validates the locales and options now, as ECMA-402 does (RangeError).
    call(constructor, formatter.locales, formatter.options, "resolvedOptions", []);
    const self = new.target ? this : Object.create(Ctor.prototype);
    state.set(self, formatter);
    return self;
  } as unknown as { new (locales?: unknown, options?: unknown): object; prototype: object; supportedLocalesOf(locales: unknown, options?: unknown): string[] };
  Object.defineProperty(Ctor, "name", { value: constructor });
  for (const method of methods) {
    const invoke = function (this: unknown, ...args: unknown[]) {
      const { locales, options } = stateOf(this, constructor);
      const wired: unknown[] = [];
      for (let i = 0; i < args.length; i++) wired.push(wire(args[i]));
      return call(constructor, locales, options, method, wired);
    };
    Object.defineProperty(invoke, "name", { value: method });
    if (bound.indexOf(method) !== -1) {
      Object.defineProperty(Ctor.prototype, method, {
        get(this: unknown) {
          stateOf(this, constructor);
          const self = this;
          return (...args: unknown[]) => invoke.apply(self, args);
        },
        configurable: true,
      });
    } else {
      Object.defineProperty(Ctor.prototype, method, { value: invoke, writable: true, configurable: true });
    }
  }
  Object.defineProperty(Ctor.prototype, Symbol.toStringTag, { value: `Intl.${constructor}`, configurable: true });
  Object.defineProperty(Ctor, "supportedLocalesOf", {
    value: (locales: unknown, options?: unknown) => call(constructor, localeList(locales), optionBag(options), "supportedLocalesOf", []),
    writable: true,
    configurable: true,
  });
  return Ctor;
}

const RANGE = ["formatRange", "formatRangeToParts"];

const IntlObject = {
  DateTimeFormat: intlClass("DateTimeFormat", ["format", "formatToParts", ...RANGE, "resolvedOptions"], ["format"]),
  NumberFormat: intlClass("NumberFormat", ["format", "formatToParts", ...RANGE, "resolvedOptions"], ["format"]),
  Collator: intlClass("Collator", ["compare", "resolvedOptions"], ["compare"]),
  PluralRules: intlClass("PluralRules", ["select", "selectRange", "resolvedOptions"]),
  RelativeTimeFormat: intlClass("RelativeTimeFormat", ["format", "formatToParts", "resolvedOptions"]),
  ListFormat: intlClass("ListFormat", ["format", "formatToParts", "resolvedOptions"]),
  DisplayNames: intlClass("DisplayNames", ["of", "resolvedOptions"]),
  getCanonicalLocales(locales?: unknown): string[] {
    const list = localeList(locales);
    return list === null ? [] : (call("Intl", null, null, "getCanonicalLocales", [list]) as string[]);
  },
  supportedValuesOf(key: unknown): string[] {
    return call("Intl", null, null, "supportedValuesOf", [String(key)]) as string[];
  },
};
Object.defineProperty(IntlObject, Symbol.toStringTag, { value: "Intl", configurable: true });

export { IntlObject as Intl };
