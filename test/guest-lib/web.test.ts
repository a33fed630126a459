// The web module (guest-lib/web) inside real sandboxes, checked against the standards.
import { describe, expect, test } from "vitest";
import { THREW, guest } from "./run.js";

describe("web module", () => {
  test("DOM §3.1-3.2 AbortController and AbortSignal: abort(), reason, throwIfAborted, onabort, any(), abort(), timeout()", async () => {
    const v = await guest<Record<string, unknown>>(`${THREW}
      const c = new AbortController();
      const log = [];
      c.signal.onabort = (e) => log.push("onabort:" + e.type + ":" + e.isTrusted + ":" + (e.target === c.signal));
      c.signal.addEventListener("abort", () => log.push("listener"));
      const before = [c.signal.aborted, c.signal.reason];
      c.abort("why");
      c.abort("again");
      const dflt = new AbortController(); dflt.abort();
      const a = new AbortController(), b = new AbortController();
      const any = AbortSignal.any([a.signal, b.signal]);
      b.abort("b first");
      const t = AbortSignal.timeout(5);
      const timedOut = await new Promise((resolve) => t.addEventListener("abort", () => resolve(t.reason.name)));
      return {
        before, log, reason: c.signal.reason, aborted: c.signal.aborted,
        throwIf: (() => { try { c.signal.throwIfAborted(); } catch (e) { return e; } })(),
        dfltReason: [dflt.signal.reason instanceof DOMException, dflt.signal.reason.name, dflt.signal.reason.code],
        any: [any.aborted, any.reason], timedOut,
        staticAbort: [AbortSignal.abort().aborted, AbortSignal.abort("r").reason],
        illegal: threw(() => new AbortSignal()),
        badTimeout: threw(() => AbortSignal.timeout(-1)),
        brand: threw(() => Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted").get.call({})),
        tags: [String(c), String(c.signal)],
      };`);
    expect(v.before).toEqual([false, undefined]);
    expect(v.log).toEqual(["onabort:abort:true:true", "listener"]);
    expect(v.reason).toBe("why");
    expect(v.aborted).toBe(true);
    expect(v.throwIf).toBe("why");
    expect(v.dfltReason).toEqual([true, "AbortError", 20]);
    expect(v.any).toEqual([true, "b first"]);
    expect(v.timedOut).toBe("TimeoutError");
    expect(v.staticAbort).toEqual([true, "r"]);
    expect(v.illegal).toBe("TypeError");
    expect(v.badTimeout).toBe("TypeError");
    expect(v.brand).toBe("TypeError");
    expect(v.tags).toEqual(["[object AbortController]", "[object AbortSignal]"]);
  });

  test("DOM §2.7 EventTarget: once, signal, capture first, handleEvent, dispatchEvent is untrusted, bubbles, removal", async () => {
    const v = await guest<Record<string, unknown>>(`${THREW}
      const target = new EventTarget();
      const log = [];
      const c = new AbortController();
      target.addEventListener("x", () => log.push("once"), { once: true });
      target.addEventListener("x", () => log.push("signal"), { signal: c.signal });
      target.addEventListener("x", { handleEvent: (e) => log.push("object:" + e.isTrusted) });
      target.addEventListener("x", () => log.push("capture"), true);
      const removed = () => log.push("removed");
      target.addEventListener("x", removed);
      target.removeEventListener("x", removed);
      const event = new Event("x", { bubbles: true, cancelable: true });
      const notCanceled = target.dispatchEvent(event);
      c.abort();
      target.dispatchEvent(new Event("x"));
      const stopper = new EventTarget();
      stopper.addEventListener("y", (e) => { e.stopImmediatePropagation(); e.preventDefault(); log.push("first"); });
      stopper.addEventListener("y", () => log.push("second"));
      const y = new Event("y", { cancelable: true });
      const result = stopper.dispatchEvent(y);
      return { log, notCanceled, bubbles: event.bubbles, phase: event.eventPhase, target: event.target === target,
        canceled: [result, y.defaultPrevented], noType: threw(() => new Event()), notEvent: threw(() => target.dispatchEvent({})) };`);
    expect(v.log).toEqual(["capture", "once", "signal", "object:false", "capture", "object:false", "first"]);
    expect(v.notCanceled).toBe(true);
    expect(v.bubbles).toBe(true);
    expect(v.phase).toBe(0);
    expect(v.target).toBe(true);
    expect(v.canceled).toEqual([false, true]);
    expect(v.noType).toBe("TypeError");
    expect(v.notEvent).toBe("TypeError");
  });

  test("DOM §2.4 CustomEvent: detail (null by default), an Event dispatched like any other, initCustomEvent, type required", async () => {
    const v = await guest<unknown[]>(`${THREW}
      const t = new EventTarget();
      const seen = [];
      t.addEventListener("ping", (e) => seen.push([e instanceof CustomEvent, e instanceof Event, e.detail, e.type, e.target === t]));
      const payload = { n: 1 };
      t.dispatchEvent(new CustomEvent("ping", { detail: payload }));
      const plain = new CustomEvent("x");
      const re = new CustomEvent("old", { detail: 1 });
      re.initCustomEvent("new", true, true, "d");
      return [seen[0][2] === payload, seen[0].slice(0, 2), seen[0].slice(3), plain.detail, plain.bubbles, [re.type, re.bubbles, re.cancelable, re.detail],
        threw(() => new CustomEvent()), Object.prototype.toString.call(plain), CustomEvent.length];`);
    expect(v).toEqual([true, [true, true], ["ping", true], null, false, ["new", true, true, "d"], "TypeError", "[object CustomEvent]", 1]);
  });

  test("WebIDL §2.8.1 DOMException: names, legacy codes and constants, an Error", async () => {
    const v = await guest(`
      const e = new DOMException("gone", "NotFoundError");
      const d = new DOMException();
      const withCause = new DOMException("m", { name: "AbortError", cause: 1 });
      return [e.name, e.message, e.code, e instanceof Error, DOMException.ABORT_ERR, e.TIMEOUT_ERR, d.name, d.message, d.code,
        new DOMException("x", "TimeoutError").code, new DOMException("x", "Custom").code, String(e), withCause.cause, withCause.name,
        Object.prototype.toString.call(e)];`);
    expect(v).toEqual(["NotFoundError", "gone", 8, true, 20, 23, "Error", "", 0, 23, 0, "NotFoundError: gone", 1, "AbortError", "[object DOMException]"]);
  });

  test("Encoding §8.2 TextEncoder: UTF-8, lone surrogates become U+FFFD, encodeInto stops at a whole character", async () => {
    const v = await guest(`
      const enc = new TextEncoder();
      const into = new Uint8Array(5);
      const r = enc.encodeInto("a€😀", into);
      return [enc.encoding, [...enc.encode("a€😀")], [...enc.encode("\\ud800x")], [...enc.encode()], r, [...into]];`);
    expect(v).toEqual(["utf-8", [97, 226, 130, 172, 240, 159, 152, 128], [239, 191, 189, 120], [], { read: 2, written: 4 }, [97, 226, 130, 172, 0]]);
  });

  test("Encoding §8.1 TextDecoder: U+FFFD replacement, fatal, BOM handling, streaming, UTF-8 labels only", async () => {
    const v = await guest(`${THREW}
      const d = new TextDecoder();
      const bytes = (a) => new Uint8Array(a);
      const s = new TextDecoder("UTF8 ");
      const parts = [s.decode(bytes([0xe2, 0x82]), { stream: true }), s.decode(bytes([0xac, 0xf0, 0x9f]), { stream: true }), s.decode(bytes([0x98, 0x80]))];
      return [
        d.decode(bytes([0xef, 0xbb, 0xbf, 0x61])), new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes([0xef, 0xbb, 0xbf, 0x61])).length,
        d.decode(bytes([0x61, 0xff, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0xe2, 0x82])),
        threw(() => new TextDecoder("utf-8", { fatal: true }).decode(bytes([0xc3]))),
        parts, s.decode(bytes([0xe2]), { stream: true }) + s.decode(),
        threw(() => new TextDecoder("latin1")), d.decode(new DataView(bytes([0, 0x62, 0]).buffer, 1, 1)), d.encoding, d.fatal, d.ignoreBOM,
        d.decode(new TextEncoder().encode("x".repeat(20000) + "é")).length,
      ];`);
    expect(v).toEqual(["a", 2, "a\ufffd\ufffd(\ufffd\ufffd\ufffd\ufffd", "TypeError", ["", "€", "😀"], "\ufffd", "RangeError", "b", "utf-8", false, false, 20001]);
  });

  test("URL Standard: parsing, resolving, setters, URLSearchParams, canParse", async () => {
    const v = await guest(`
      const u = new URL("HTTPS://Example.COM:443/a/../b?x=1#f");
      u.searchParams.append("y", "2 3");
      const p = new URLSearchParams({ b: "2", a: "1" }); p.sort();
      return [u.href, u.origin, u.host, new URL("../c", "http://h/a/b").href, URL.canParse("nope"), new URL("http://bücher.de/").hostname,
        p.toString(), new URLSearchParams("?a=b+c&a=%20d").getAll("a"), p.size, Object.prototype.toString.call(u)];`);
    expect(v).toEqual(["https://example.com/b?x=1&y=2+3#f", "https://example.com", "example.com", "http://h/c", false, "xn--bcher-kva.de",
      "a=1&b=2", ["b c", " d"], 2, "[object URL]"]);
  });

  test("HTML §8.3 atob and btoa (forgiving base64)", async () => {
    const v = await guest(`${THREW}
      return [btoa("hello"), atob("aGVs bG8="), atob("aGVsbG8"), threw(() => atob("a")), threw(() => btoa("€")), btoa(""), atob("")];`);
    expect(v).toEqual(["aGVsbG8=", "hello", "hello", "InvalidCharacterError", "InvalidCharacterError", "", ""]);
  });

  test("the classes keep working after a script deletes the globals they use", async () => {
    const v = await guest(`
      const { Headers, Request } = await import("http");
      const E = TextEncoder, D = TextDecoder, AS = AbortSignal;
      for (const name of ["URL", "TextEncoder", "TextDecoder", "setTimeout", "JSON", "Promise", "DOMException", "escape", "unescape", "encodeURIComponent", "decodeURIComponent"]) delete globalThis[name];
      const r = new Request("https://x.test/p", { method: "POST", body: "é" });
      const text = await r.text();
      const t = AS.timeout(1);
      await new (Object.getPrototypeOf(async () => {}).constructor)("return 1")();
      return [text, new D().decode(new E().encode("ok")), new Headers([["a", "b"]]).get("a"), t.aborted];`);
    expect(v).toEqual(["é", "ok", "b", false]);
  });
});
