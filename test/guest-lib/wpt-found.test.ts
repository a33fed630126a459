// Regression tests for bugs that web-platform-tests not vendored here found (Blob-slice,
// Event-isTrusted, response-consume). Each runs in a real sandbox and checks the standard's
// rule directly, so it does not depend on the WPT files.
import { describe, expect, test } from "vitest";
import { THREW, guest } from "./run.js";

describe("standards rules found by further web-platform-tests", () => {
  test("File API §3.3.1 Blob.slice: start and end are WebIDL [Clamp] long long, rounded to the nearest integer, ties to even", async () => {
    const v = await guest<Record<string, unknown>>(`
      const b = new Blob(["abcd"]);
      const text = (blob) => blob.text();
      return {
        starts: await Promise.all([0.5, 1.5, 2.5, 3.5, 0.4, 0.6, -0.5, -1.5, -2.5].map((s) => text(b.slice(s)))),
        ends: await Promise.all([0.5, 1.5, 2.5, 3.5, -0.5, -1.5].map((e) => text(b.slice(0, e)))),
        both: [await text(b.slice(1.5, 2.5)), await text(b.slice(1.5, 3.5))],
        huge: [b.slice(-1e300).size, b.slice(0, 1e300).size, b.slice(NaN, Infinity).size, b.slice(-Infinity, -Infinity).size],
      };`);
    // WPT FileAPI/blob/Blob-slice.any.js "double start/end values" expects these.
    expect(v.starts).toEqual(["abcd", "cd", "cd", "", "abcd", "bcd", "abcd", "cd", "cd"]);
    expect(v.ends).toEqual(["", "ab", "ab", "abcd", "", "ab"]);
    expect(v.both).toEqual(["", "cd"]);
    expect(v.huge).toEqual([4, 4, 4, 0]);
  });

  test("DOM §2.2 Event: isTrusted is [LegacyUnforgeable], an own non-configurable accessor with one getter for all events", async () => {
    const v = await guest<Record<string, unknown>>(`${THREW}
      const a = new Event("x"), b = new Event("y");
      const da = Object.getOwnPropertyDescriptor(a, "isTrusted"), db = Object.getOwnPropertyDescriptor(b, "isTrusted");
      const c = new AbortController();
      let trusted;
      c.signal.addEventListener("abort", (e) => (trusted = [e.isTrusted, Object.getOwnPropertyDescriptor(e, "isTrusted").get === da.get]));
      c.abort();
      const t = new EventTarget();
      let dispatched;
      t.addEventListener("x", (e) => (dispatched = e.isTrusted));
      t.dispatchEvent(a);
      return {
        shape: [typeof da.get, da.get === db.get, da.set, da.enumerable, da.configurable, da.get.name, "isTrusted" in Event.prototype],
        values: [a.isTrusted, dispatched, trusted],
        redefine: threw(() => Object.defineProperty(a, "isTrusted", { value: true })),
        brand: threw(() => da.get.call({})),
      };`);
    expect(v.shape).toEqual(["function", true, undefined, true, false, "get isTrusted", false]);
    expect(v.values).toEqual([false, false, [true, true]]);
    expect(v.redefine).toBe("TypeError");
    expect(v.brand).toBe("TypeError");
  });

  test("Fetch §5.1 formData(): a multipart/form-data file part without Content-Type is a text/plain File", async () => {
    const v = await guest<unknown[]>(`
      const body = "--b\\r\\nContent-Disposition: form-data; name=\\"f\\"; filename=\\"f.txt\\"\\r\\n\\r\\nhi\\r\\n" +
        "--b\\r\\nContent-Disposition: form-data; name=g; filename=g.bin\\r\\nContent-Type: application/octet-stream; x=y\\r\\n\\r\\nyo\\r\\n--b--\\r\\n";
      const fd = await new Response(body, { headers: { "content-type": 'multipart/form-data; boundary="b"' } }).formData();
      const f = fd.get("f"), g = fd.get("g");
      return [f instanceof File, f.name, f.type, await f.text(), g.type];`);
    // WPT fetch/api/response/response-consume.html "from multipart form data blob to formData".
    expect(v).toEqual([true, "f.txt", "text/plain", "hi", "application/octet-stream; x=y"]);
  });

  test("Fetch §5.1 formData() and URL §5.1 urlencoded parser: UTF-8 decode without BOM keeps a leading U+FEFF; a leading '?' is part of the first name", async () => {
    const v = await guest<Record<string, unknown>>(`
      const esc = (fd) => [...fd].map(([k, val]) => [escape(k), escape(val)]);
      const bom = "\\uFEFFquick\\uFEFFfox\\uFEFF";
      const multipart = "--b\\r\\nContent-Disposition: form-data; name=\\"n\\"\\r\\n\\r\\n" + bom + "\\r\\n--b--\\r\\n";
      const m = await new Response(multipart, { headers: { "content-type": "multipart/form-data; boundary=b" } }).formData();
      const u = await new Response(new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0x3d, 0x31]), { headers: { "content-type": "application/x-www-form-urlencoded" } }).formData();
      const q = await new Response("?a=1&%EF%BB%BFb=2&&c", { headers: { "content-type": "application/x-www-form-urlencoded" } }).formData();
      return { multipart: esc(m), urlencodedBom: esc(u), question: esc(q) };`);
    // WPT response-consume.html "from text with correct multipart type to formData with BOM".
    expect(v.multipart).toEqual([["n", "%uFEFFquick%uFEFFfox%uFEFF"]]);
    expect(v.urlencodedBom).toEqual([["%uFEFFa", "1"]]);
    expect(v.question).toEqual([["%3Fa", "1"], ["%uFEFFb", "2"], ["c", ""]]);
  });

  test("Fetch §4.1 main fetch: a HEAD of a data: URL has a null body (GET has the decoded one)", async () => {
    const v = await guest<unknown[]>(`
      const head = await fetch("data:text/plain,hello", { method: "HEAD" });
      const get = await fetch(new Request("data:text/plain,hello"));
      return [head.status, head.headers.get("content-type"), await head.text(), await get.text()];`);
    // WPT fetch/api/basic/scheme-data.any.js "Fetching [HEAD] data:,response%27s%20body is OK".
    expect(v).toEqual([200, "text/plain", "", "hello"]);
  });

  test("Fetch §5.4 Request referrer: a URL of another origin than the location option's becomes about:client", async () => {
    const v = await guest<string[]>(`
      return [new Request("/x", { referrer: "https://other.example.test/page" }).referrer,
        new Request("/x", { referrer: "/from/here" }).referrer,
        new Request("/x", { referrer: "about:client" }).referrer,
        new Request("/x", { referrer: "" }).referrer];`);
    // WPT fetch/api/request/request-init-001.sub.html "Check referrer init values ... cross-origin".
    expect(v).toEqual(["about:client", "https://app.example.test/from/here", "about:client", ""]);
  });

  test("Fetch §5.4: a Request passed as init (new Request(url, request)) is copied, though every request here reports mode navigate", async () => {
    const v = await guest<unknown[]>(`${THREW}
      const original = new Request("https://a.test/one", { method: "POST", body: "payload", headers: { "x-a": "1" } });
      const copy = new Request("https://a.test/two", original);
      const withBody = new Request(original.url, { method: "PUT", body: "new" });
      return [copy.method, copy.url, copy.headers.get("x-a"), await copy.text(), withBody.method,
        threw(() => new Request("https://a.test/", { mode: "navigate" }))];`);
    // WPT fetch/api/request/request-error: a dictionary asking for mode "navigate" is still a TypeError.
    expect(v).toEqual(["POST", "https://a.test/two", "1", "payload", "PUT", "TypeError"]);
  });

  test("Fetch §5.4: an input Request with a body is disturbed by the new Request, also when init replaces the body, and only once construction succeeds", async () => {
    const v = await guest<unknown[]>(`${THREW}
      const taken = new Request("https://a.test/", { method: "POST", body: "a" });
      const fromTaken = new Request(taken);
      const replaced = new Request("https://a.test/", { method: "POST", body: "a" });
      const fromReplaced = new Request(replaced, { body: "init body" });
      const failed = new Request("https://a.test/", { method: "POST", body: "a" });
      const failure = threw(() => new Request(failed, { method: "GET" }));
      const used = new Request("https://a.test/", { method: "POST", body: "a" });
      await used.text();
      const overridden = new Request(used, { body: "req2" });
      return [taken.bodyUsed, await fromTaken.text(), replaced.bodyUsed, await fromReplaced.text(),
        failure, failed.bodyUsed, await overridden.text(), threw(() => new Request(used))];`);
    // WPT request-disturbed "Input request used for creating new request became disturbed (even if body
    // is not used)", "Request construction failure should not set bodyUsed", and
    // request-constructor-init-body-override.
    expect(v).toEqual([true, "a", true, "init body", "TypeError", false, "req2", "TypeError"]);
  });

  test("Fetch §5.4 Request.keepalive: kept as given, and carried by clone() and new Request(request)", async () => {
    const v = await guest<unknown[]>(`
      const r = new Request("https://a.test/", { keepalive: true });
      return [new Request("https://a.test/").keepalive, r.keepalive, r.clone().keepalive, new Request(r).keepalive,
        new Request(r, { keepalive: false }).keepalive];`);
    expect(v).toEqual([false, true, true, true, false]);
  });

  test("File API §4.1: a File's (and Blob's) type is lower-cased in full, parameters included", async () => {
    const v = await guest<unknown[]>(`
      return [new File([], "f", { type: "text/plain;charset=UTF-8" }).type, new Blob([], { type: "TEXT/PLAIN;Charset=UTF-8" }).type,
        new File([], "f", { type: "nonascii\u00EE" }).type];`);
    expect(v).toEqual(["text/plain;charset=utf-8", "text/plain;charset=utf-8", ""]);
  });

  test("MessageChannel is not provided (a documented decision: one realm, nothing to message)", async () => {
    const v = await guest<unknown[]>(`return [typeof MessageChannel, typeof MessagePort];`);
    expect(v).toEqual(["undefined", "undefined"]);
  });
});
