// Issue 13 §3: the web globals scripts reach for, in a real sandbox. structuredClone (HTML
// §2.10 and the structured clone algorithm, §2.7.3 StructuredSerializeInternal), performance
// (High Resolution Time §4-5), Intl (ECMA-402, computed by the host's ICU), and the list of
// globals docs/globals.md promises: each present one exists, each documented absence is absent.
import { describe, expect, it } from "vitest";
import { runScript } from "scriptbox";
import { THREW, guest } from "./run.js";

describe("structuredClone (HTML structured clone algorithm)", () => {
  it("copies primitives, wrappers, Date, RegExp, Map, Set, arrays and objects deeply", async () => {
    const out = await guest(`
      const source = {
        n: -0, big: 10n, s: "x", u: undefined, nul: null,
        when: new Date(86400000), re: /a+b/giu, wrapped: [Object(1), Object("s"), Object(false), Object(2n)],
        map: new Map([[{ k: 1 }, new Set([1, "two"])]]), list: [1, , 3], nested: { deep: { deeper: [1] } },
      };
      const copy = structuredClone(source);
      const [[key, set]] = copy.map;
      return {
        distinct: copy !== source && copy.nested.deep !== source.nested.deep && copy.when !== source.when && copy.map !== source.map,
        negativeZero: Object.is(copy.n, -0), big: copy.big === 10n, hasUndefined: "u" in copy && copy.u === undefined, nul: copy.nul,
        when: copy.when instanceof Date && copy.when.getTime(), re: [copy.re instanceof RegExp, copy.re.source, copy.re.flags],
        wrapped: copy.wrapped.map((w) => [typeof w, w.valueOf()]).map(([t, v]) => t + ":" + String(v)),
        map: [copy.map instanceof Map, key.k, set instanceof Set, [...set]],
        holes: [copy.list.length, 1 in copy.list], deeper: copy.nested.deep.deeper,
      };`);
    expect(out).toEqual({
      distinct: true,
      negativeZero: true,
      big: true,
      hasUndefined: true,
      nul: null,
      when: 86400000,
      re: [true, "a+b", "giu"],
      wrapped: ["object:1", "object:s", "object:false", "object:2"],
      map: [true, 1, true, [1, "two"]],
      holes: [3, false],
      deeper: [1],
    });
  });

  it("keeps cycles and shared references (the memory map), also for buffers shared by views", async () => {
    const out = await guest(`
      const shared = { tag: "shared" };
      const buffer = new ArrayBuffer(8);
      const a = new Uint8Array(buffer, 0, 4), b = new DataView(buffer, 4);
      const source = { shared, again: shared, a, b, buffer };
      source.self = source;
      const copy = structuredClone(source);
      copy.a[0] = 7;
      return {
        cycle: copy.self === copy, sharedOnce: copy.shared === copy.again && copy.shared !== shared,
        viewsShareTheCopy: copy.a.buffer === copy.b.buffer && copy.a.buffer === copy.buffer && copy.buffer !== buffer,
        written: new Uint8Array(copy.buffer)[0], original: a[0], offsets: [copy.b.byteOffset, copy.b.byteLength, copy.a.length],
        types: [Object.prototype.toString.call(copy.a), Object.prototype.toString.call(copy.b)],
      };`);
    expect(out).toEqual({
      cycle: true,
      sharedOnce: true,
      viewsShareTheCopy: true,
      written: 7,
      original: 0,
      offsets: [4, 4, 4],
      types: ["[object Uint8Array]", "[object DataView]"],
    });
  });

  it("errors keep their standard name, message and cause; class instances become plain objects", async () => {
    const out = await guest(`
      class Point { constructor() { this.x = 1; } get y() { return 2; } }
      class MyError extends TypeError { constructor() { super("mine"); this.name = "MyError"; } }
      const e = structuredClone(new RangeError("out", { cause: { why: "because" } }));
      const custom = structuredClone(new MyError());
      const p = structuredClone(new Point());
      return {
        error: [e instanceof RangeError, e.name, e.message, e.cause.why],
        custom: [custom.constructor.name, custom.message],
        point: [Object.getPrototypeOf(p) === Object.prototype, p.x, "y" in p],
      };`);
    expect(out).toEqual({ error: [true, "RangeError", "out", "because"], custom: ["Error", "mine"], point: [true, 1, false] });
  });

  it("throws DataCloneError for functions, symbols, promises, weak collections and web objects", async () => {
    const out = await guest(`${THREW}
      return [
        threw(() => structuredClone(() => 1)), threw(() => structuredClone({ f() {} })), threw(() => structuredClone(Symbol("s"))),
        threw(() => structuredClone(Promise.resolve())), threw(() => structuredClone(new WeakMap())), threw(() => structuredClone(new WeakSet())),
        threw(() => structuredClone(new Headers())), threw(() => structuredClone(new URL("https://a.example/"))),
        threw(() => structuredClone()), threw(() => structuredClone(new ArrayBuffer(1), { transfer: [new ArrayBuffer(1)] })),
        threw(() => structuredClone(1, { transfer: [] })),
      ];`);
    expect(out).toEqual([
      "DataCloneError",
      "DataCloneError",
      "DataCloneError",
      "DataCloneError",
      "DataCloneError",
      "DataCloneError",
      "DataCloneError",
      "DataCloneError",
      "TypeError",
      "DataCloneError",
      "no error",
    ]);
  });
});

describe("performance (High Resolution Time)", () => {
  it("now() is monotonic, in ms since the run started, and advances across awaits; timeOrigin is that start", async () => {
    const before = Date.now();
    const out = await guest<{ first: number; waited: number; origin: number; json: { timeOrigin: number }; tag: string; threw: string }>(`${THREW}
      const first = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 30));
      const waited = performance.now() - first;
      return { first, waited, origin: performance.timeOrigin, json: performance.toJSON(), tag: Object.prototype.toString.call(performance), threw: threw(() => new Performance()) };`);
    const after = Date.now();
    expect(out.first).toBeGreaterThanOrEqual(0);
    expect(out.first).toBeLessThan(after - before + 1);
    expect(out.waited).toBeGreaterThanOrEqual(29); // timers fire no earlier than asked (1 ms of clock granularity)
    expect(out.origin).toBeGreaterThanOrEqual(before - 1);
    expect(out.origin).toBeLessThanOrEqual(after);
    expect(out.json).toEqual({ timeOrigin: out.origin });
    expect(out.tag).toBe("[object Performance]");
    expect(out.threw).toBe("TypeError");
  });

  it("readings are coarsened to 5 µs", async () => {
    const readings = await guest<number[]>(`return Array.from({ length: 50 }, () => performance.now());`);
    for (const reading of readings) expect(Math.abs(reading * 200 - Math.round(reading * 200))).toBeLessThan(1e-6);
    for (let i = 1; i < readings.length; i++) expect(readings[i]).toBeGreaterThanOrEqual(readings[i - 1]!);
  });
});

describe("Intl (through the host's ICU)", () => {
  it("formats numbers, dates, plurals, relative times and lists as Node's Intl does", async () => {
    const out = await guest<unknown[]>(`
      const d = new Date(Date.UTC(2024, 1, 29, 13, 5));
      return [
        new Intl.NumberFormat("de-DE", { style: "currency", currency: "EUR" }).format(1234567.891),
        new Intl.NumberFormat("en-IN").format(12345678),
        new Intl.NumberFormat("en", { notation: "compact" }).format(1500),
        new Intl.NumberFormat("en").format(12345678901234567890n),
        new Intl.DateTimeFormat("en-GB", { timeZone: "UTC", dateStyle: "full", timeStyle: "short" }).format(d),
        new Intl.DateTimeFormat("ja-JP", { timeZone: "Asia/Tokyo", year: "numeric", month: "long", day: "numeric" }).format(d),
        new Intl.DateTimeFormat("en", { timeZone: "UTC", hour: "numeric" }).formatToParts(d).map((p) => p.type),
        new Intl.PluralRules("en", { type: "ordinal" }).select(22),
        new Intl.RelativeTimeFormat("fr", { numeric: "auto" }).format(-1, "day"),
        new Intl.ListFormat("en", { type: "conjunction" }).format(["a", "b", "c"]),
        new Intl.DisplayNames(["en"], { type: "region" }).of("DE"),
        ["z", "a", "ä", "Z"].sort(new Intl.Collator("de", { caseFirst: "upper" }).compare),
        new Intl.NumberFormat("en", { maximumFractionDigits: 1 }).resolvedOptions().locale,
        Intl.getCanonicalLocales(["EN-us", "de-de"]),
        Intl.NumberFormat.supportedLocalesOf(["fr-FR", "zz-ZZ"]).includes("fr-FR"),
      ];`);
    const d = new Date(Date.UTC(2024, 1, 29, 13, 5));
    expect(out).toEqual([
      new Intl.NumberFormat("de-DE", { style: "currency", currency: "EUR" }).format(1234567.891),
      new Intl.NumberFormat("en-IN").format(12345678),
      new Intl.NumberFormat("en", { notation: "compact" }).format(1500),
      new Intl.NumberFormat("en").format(12345678901234567890n),
      new Intl.DateTimeFormat("en-GB", { timeZone: "UTC", dateStyle: "full", timeStyle: "short" }).format(d),
      new Intl.DateTimeFormat("ja-JP", { timeZone: "Asia/Tokyo", year: "numeric", month: "long", day: "numeric" }).format(d),
      new Intl.DateTimeFormat("en", { timeZone: "UTC", hour: "numeric" }).formatToParts(d).map((p) => p.type),
      "two",
      "hier",
      "a, b, and c",
      "Germany",
      ["a", "ä", "Z", "z"],
      "en",
      ["en-US", "de-DE"],
      true,
    ]);
  });

  it("invalid locales and options throw RangeError at construction, as ECMA-402 says; format is a bound getter", async () => {
    const out = await guest(`${THREW}
      const format = new Intl.NumberFormat("en").format;
      return [
        threw(() => new Intl.NumberFormat("not a locale!")),
        threw(() => new Intl.NumberFormat("en", { style: "currency" })),
        threw(() => new Intl.DateTimeFormat("en", { timeZone: "Mars/Olympus" })),
        ["1,000", "2,000"].map(() => 0).length && [1000, 2000].map(format),
        Object.prototype.toString.call(new Intl.Collator()),
        threw(() => Intl.NumberFormat.prototype.format),
        // format(undefined) is "now" and NaN, as with no argument; not 1970 and 0.
        new Intl.DateTimeFormat("en", { year: "numeric", timeZone: "UTC" }).format(undefined) === String(new Date().getUTCFullYear()),
        new Intl.NumberFormat("en").format(undefined),
      ];`);
    expect(out).toEqual(["RangeError", "TypeError", "RangeError", ["1,000", "2,000"], "[object Intl.Collator]", "TypeError", true, "NaN"]);
  });
});

describe("the globals docs/globals.md lists", () => {
  const PRESENT = [
    "AbortController", "AbortSignal", "Blob", "CryptoKey", "CustomEvent", "DOMException", "Event", "EventTarget", "File", "FormData",
    "Headers", "Intl", "Performance", "Request", "Response", "SubtleCrypto", "TextDecoder", "TextEncoder", "URL", "URLSearchParams",
    "atob", "btoa", "clearInterval", "clearTimeout", "console", "crypto", "fetch", "performance", "queueMicrotask", "self",
    "setInterval", "setTimeout", "structuredClone",
  ];
  const ABSENT = [
    "ReadableStream", "WritableStream", "TransformStream", "navigator", "location", "document", "window", "WebSocket", "XMLHttpRequest",
    "Worker", "BroadcastChannel", "MessageChannel", "setImmediate", "process", "require", "Buffer", "global", "localStorage",
    "sessionStorage", "indexedDB", "caches", "CompressionStream", "DecompressionStream", "EventSource", "alert", "WebAssembly", "__dirname",
  ];

  it("every listed global exists, and every listed absence is absent", async () => {
    const result = await runScript(`export default () => ({
      present: ${JSON.stringify(PRESENT)}.filter((name) => globalThis[name] === undefined),
      absent: ${JSON.stringify(ABSENT)}.filter((name) => name in globalThis),
    })`);
    expect(result).toMatchObject({ ok: true, value: { present: [], absent: [] } });
  });
});
