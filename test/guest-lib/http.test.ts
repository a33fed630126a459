// The http module (guest-lib/http) inside real sandboxes, checked against the spec
// (shared/spec/http-module.md) and, where it is silent, the Fetch and File API standards.
import { describe, expect, test } from "vitest";
import { THREW, guest } from "./run.js";

describe("http module classes", () => {
  test("File API §3 Blob: parts copied, endings, slice with negative and out-of-range indexes, type, readers", async () => {
    const v = await guest<Record<string, unknown>>(`
      const source = new Uint8Array([1, 2, 3]);
      const blob = new Blob(["é", source, source.buffer, new Blob(["z"])], { type: "Text/Plain" });
      source[0] = 9;
      const native = new Blob(["a\\r\\nb\\rc\\n"], { endings: "native" });
      const transparent = new Blob(["a\\r\\nb"]);
      const s = new Blob(["0123456789"]);
      const bytes = await blob.bytes();
      bytes[0] = 0;
      return {
        size: blob.size, type: blob.type, bytes: [...(await blob.bytes())], copy: (await blob.bytes())[0],
        native: await native.text(), transparentSize: transparent.size,
        slices: [await s.slice(-3).text(), await s.slice(2, -2).text(), await s.slice(8, 2).text(), await s.slice(-100, 100).text(), s.slice(1, 2, "A/B").type,
          s.slice(0, 1, "Text/Plain;Charset=UTF-8").type, s.slice(0, 1, "text/plain;charset=\u00e9").type],
        badType: new Blob([], { type: "a\\u00e9" }).type, replacement: await new Blob([new Uint8Array([0x61, 0xff])]).text(),
        buffer: (await s.arrayBuffer()).byteLength, tag: String(blob), isView: (await blob.bytes()) instanceof Uint8Array,
      };`);
    expect(v.size).toBe(2 + 3 + 3 + 1);
    expect(v.type).toBe("text/plain");
    expect(v.bytes).toEqual([0xc3, 0xa9, 1, 2, 3, 1, 2, 3, 0x7a]);
    expect(v.copy).toBe(0xc3);
    expect(v.native).toBe("a\nb\nc\n");
    expect(v.transparentSize).toBe(4);
    expect(v.slices).toEqual(["789", "234567", "", "0123456789", "a/b", "text/plain;charset=utf-8", ""]);
    expect(v.badType).toBe("");
    expect(v.replacement).toBe("a\ufffd");
    expect(v.buffer).toBe(10);
    expect(v.tag).toBe("[object Blob]");
    expect(v.isView).toBe(true);
  });

  test("File API §4 File: name, lastModified given or now, a Blob", async () => {
    const v = await guest(`${THREW}
      const before = Date.now();
      const f = new File(["abc"], "a.txt", { type: "text/plain" });
      const g = new File([], "b", { lastModified: 42 });
      return [f.name, f.size, f.type, f.lastModified >= before && f.lastModified <= Date.now(), g.lastModified, f instanceof Blob, String(f), threw(() => new File([]))];`);
    expect(v).toEqual(["a.txt", 3, "text/plain", true, 42, true, "[object File]", "TypeError"]);
  });

  test("Fetch §5.2 Headers: validation, case-insensitive names, sorted lower-case iteration, combining, getSetCookie, every HeadersOpts form", async () => {
    const v = await guest<Record<string, unknown>>(`${THREW}
      const h = new Headers([["B", "1"], ["a", " 2 "], ["b", "3"], ["Set-Cookie", "x=1"], ["set-cookie", "y=2"]]);
      const fromRecord = new Headers({ "X-One": "1" });
      const fromHeaders = new Headers(fromRecord);
      const seen = [];
      h.forEach((value, key) => seen.push(key + "=" + value));
      h.set("b", "4"); h.delete("A");
      return {
        entries: [...new Headers([["B", "1"], ["a", " 2 "], ["b", "3"], ["Set-Cookie", "x=1"], ["set-cookie", "y=2"]])],
        get: [h.get("SET-COOKIE"), h.get("missing"), h.has("B"), h.get("b"), h.has("a")], cookies: h.getSetCookie(), seen,
        keys: [...h.keys()], values: [...h.values()], record: fromHeaders.get("x-one"),
        invalid: [threw(() => h.append("a b", "v")), threw(() => h.append("a", "x\\r\\nInjected: 1")), threw(() => h.set("a", "x\\ny")),
          threw(() => h.append("a", "nul\\0")), threw(() => h.get("bad name")), threw(() => h.append("é", "v")), threw(() => h.append("a", "\\u0100")),
          threw(() => new Headers([["a"]])), threw(() => new Headers("a=b"))],
        tag: String(h),
      };`);
    expect(v.entries).toEqual([["a", "2"], ["b", "1, 3"], ["set-cookie", "x=1"], ["set-cookie", "y=2"]]);
    expect(v.get).toEqual(["x=1, y=2", null, true, "4", false]);
    expect(v.cookies).toEqual(["x=1", "y=2"]);
    expect(v.seen).toEqual(["a=2", "b=1, 3", "set-cookie=x=1", "set-cookie=y=2"]);
    expect(v.keys).toEqual(["b", "set-cookie", "set-cookie"]);
    expect(v.values).toEqual(["4", "x=1", "y=2"]);
    expect(v.record).toBe("1");
    expect(v.invalid).toEqual(Array(9).fill("TypeError"));
    expect(v.tag).toBe("[object Headers]");
  });

  test("Fetch §5.2 Headers: WebIDL ByteString errors come before header-name and header-value errors; values are normalized first", async () => {
    const v = await guest<unknown[]>(`
      const message = (fn) => { try { fn(); return "no error"; } catch (e) { return e.name + ": " + e.message; } };
      const h = new Headers();
      h.append("a", " \\t v \\r\\n"); h.append("b", "x\\u0001y\\u00ff");
      return [h.get("a"), escape(h.get("b")), message(() => h.append("\\u20ac", "v")), message(() => h.append("a b", "v")),
        message(() => h.append("a", "\\u20ac")), message(() => h.append("a", "x\\ny")), message(() => h.append("a", "\\u0000"))];`);
    expect(v).toEqual([
      "v",
      "x%01y%FF",
      'TypeError: "€" is not a valid ByteString',
      'TypeError: Header name "a b" is not a valid HTTP token',
      'TypeError: "€" is not a valid ByteString',
      'TypeError: Header value "x\\ny" contains NUL, CR or LF',
      'TypeError: Header value "\\u0000" contains NUL, CR or LF',
    ]);
  });

  test("Fetch §5.4 Request: URLs, methods, forbidden methods, bodies, fixed cache/mode/keepalive, signal, clone, single read", async () => {
    const v = await guest<Record<string, unknown>>(`${THREW}
      const r = new Request("../x?q#frag", { method: "post", body: "hi", headers: { "X-A": "1" } });
      const c = new AbortController();
      const withSignal = new Request("https://a.test/", { signal: c.signal });
      const copy = new Request(r);
      const clone = copy.clone();
      const firstRead = await copy.text();
      const again = await rejected(copy.text());
      const patch = new Request("https://a.test/", { method: "patch" });
      c.abort("stop");
      const used = new Request("https://a.test/", { method: "PUT", body: "b" }); await used.arrayBuffer();
      const overridden = new Request("https://a.test/", { url: "https://b.test/other" });
      return {
        url: r.url, method: r.method, contentType: r.headers.get("content-type"), fixed: [r.cache, r.mode, r.keepalive, r.redirect, r.credentials, r.destination],
        inputUsed: r.bodyUsed, body: [r.body instanceof Blob, new Request("https://a.test/").body], cloneText: await clone.text(), firstRead, again,
        normalized: [new Request("https://a.test/", { method: "delete" }).method, patch.method],
        errors: [threw(() => new Request("https://a.test/", { method: "CONNECT" })), threw(() => new Request("https://a.test/", { method: "trace" })),
          threw(() => new Request("https://a.test/", { method: "track" })), threw(() => new Request("https://a.test/", { body: "x" })),
          threw(() => new Request("https://a.test/", { method: "HEAD", body: "x" })), threw(() => new Request("https://a.test/", { method: "a b" })),
          threw(() => new Request("https://u:p@a.test/")), threw(() => new Request("http://[bad")), threw(() => used.clone()), threw(() => new Request(used))],
        signal: [withSignal.signal instanceof AbortSignal, withSignal.signal.aborted, withSignal.signal.reason, r.signal.aborted],
        override: overridden.url, getNull: new Request("https://a.test/", { method: "GET", body: null }).method, tag: String(r),
      };`);
    expect(v.url).toBe("https://app.example.test/x?q#frag");
    expect(v.method).toBe("POST");
    expect(v.contentType).toBe("text/plain;charset=UTF-8");
    expect(v.fixed).toEqual(["no-cache", "navigate", false, "follow", "same-origin", ""]);
    expect(v.inputUsed).toBe(true); // new Request(r) took r's body over (Fetch: disturbed)
    expect(v.body).toEqual([true, null]);
    expect(v.cloneText).toBe("hi");
    expect(v.firstRead).toBe("hi");
    expect(v.again).toBe("TypeError");
    expect(v.normalized).toEqual(["DELETE", "patch"]);
    expect(v.errors).toEqual(Array(10).fill("TypeError"));
    expect(v.signal).toEqual([true, true, "stop", false]);
    expect(v.override).toBe("https://b.test/other");
    expect(v.getNull).toBe("GET");
    expect(v.tag).toBe("[object Request]");
  });

  test("URL Standard: Request.url equals the URL parser's href for every input (the canonical-URL fast path never differs)", async () => {
    const v = await guest(`
      const inputs = ["http://a.com", "http://a.com?x=1", "http://a.com#f", "https://a.com:443/x", "http://a.com:80", "http://a.com:8080", "http://a.com:08080/", "http://a.com:65536/",
    "http://127.0.0.1:1234/x?i=1", "http://1.2.3/", "http://a.0x1f/", "http://a.b.c/./x", "http://a/b/../c", "http://a/%2e/", "http://a/.hidden", "http://a/x/..",
    "http://xn--bcher-kva.de/", "http://a--b.com/", "http://-a.com/", "https://x.y.z/p/q?r=s&t=u#v", "http://a.com/?a=b?c", "http://a.com/p;q=1", "http://a.com/%41",
    "http://a.com/%zz", "http://a.com/a@b", "http://a.com/x~y", "http://ab.c-/", "http://a1.b2/", "http://a.1b/", "http://a.com:0/", "http://a.com:1/", "https://a.com:80/",
    "http://a.com/?x#y?z", "http://a.com?#", "http://a.com/#", "http://a.com/?", "http://a.com/#/..", "http://a.com/?/../", "http://127.0.0.1/", "http://127.0.0.01/", "http://256.1.1.1/", "http://1.2.3.4:80/", "http://10.0.0.255:99/p", "http://0.0.0.0/", "HTTP://A.COM/", "http://a.com/ä", "http://a b/", "  http://a.com/"];
      const out = [];
      for (const input of inputs) {
        let viaRequest, viaURL;
        try { viaRequest = new Request(input).url; } catch (e) { viaRequest = e.name; }
        try { viaURL = new URL(input, "${"https://app.example.test/base/page.html"}").href; } catch (e) { viaURL = "TypeError"; }
        if (viaRequest !== viaURL) out.push([input, viaRequest, viaURL]);
      }
      return [out, inputs.length];`);
    expect(v).toEqual([[], 48]);
  });

  test("Fetch §5.4 Request: a relative URL without the location option is a TypeError", async () => {
    const v = await guest(`${THREW} return [threw(() => new Request("/x")), new Request("https://a.test/x").url, await rejected(fetch("/x"))];`, { location: null });
    expect(v).toEqual(["TypeError", "https://a.test/x", "TypeError"]);
  });

  test("Fetch §5.5 Response: defaults, ok, type, error(), json(), redirect(), status and statusText checks, clone, body, spec options", async () => {
    const v = await guest<Record<string, unknown>>(`${THREW}
      const r = new Response("body");
      const clone = r.clone();
      const c = new AbortController();
      const withOpts = new Response("x", { url: "https://a.test/p#frag", signal: c.signal, status: 201, statusText: "Made" });
      c.abort(new Error("late"));
      const json = Response.json({ a: 1 }, { status: 202, headers: { "x-h": "v" } });
      const redirect = Response.redirect("/next", 307);
      const error = Response.error();
      return {
        defaults: [r.status, r.statusText, r.ok, r.redirected, r.type, r.url, r.body, r.bodyUsed, r.headers.get("content-type")],
        texts: [await r.text(), await clone.text(), await rejected(r.text())], noBytes: "bytes" in r,
        opts: [withOpts.url, withOpts.status, withOpts.statusText, withOpts.ok, await rejected(withOpts.text())],
        json: [json.status, json.headers.get("content-type"), json.headers.get("x-h"), await json.json()],
        redirect: [redirect.status, redirect.headers.get("location"), threw(() => redirect.headers.set("a", "b"))],
        defaultRedirect: Response.redirect("https://a.test/").status,
        error: [error.type, error.status, error.ok, threw(() => error.headers.append("a", "b"))],
        errors: [threw(() => new Response("", { status: 99 })), threw(() => new Response("", { status: 600 })), threw(() => Response.redirect("https://a.test/", 200)),
          threw(() => new Response("x", { status: 204 })), threw(() => new Response("", { statusText: "bad\\n" })), threw(() => Response.json(Symbol()))],
        nullBody: new Response(null, { status: 204 }).status, tag: String(r),
      };`);
    expect(v.defaults).toEqual([200, "", true, false, "basic", "", null, false, "text/plain;charset=UTF-8"]);
    expect(v.texts).toEqual(["body", "body", "TypeError"]);
    expect(v.noBytes).toBe(false);
    expect(v.opts).toEqual(["https://a.test/p", 201, "Made", true, "Error"]);
    expect(v.json).toEqual([202, "application/json", "v", { a: 1 }]);
    expect(v.redirect).toEqual([307, "https://app.example.test/next", "TypeError"]);
    expect(v.defaultRedirect).toBe(302);
    expect(v.error).toEqual(["error", 0, false, "TypeError"]);
    expect(v.errors).toEqual(["RangeError", "RangeError", "RangeError", "TypeError", "TypeError", "TypeError"]);
    expect(v.nullBody).toBe(204);
    expect(v.tag).toBe("[object Response]");
  });

  test("Fetch §5.1 extract a body: content types, bytes of every body type, formData() reads both form encodings", async () => {
    const v = await guest<Record<string, unknown>>(`${THREW}
      const type = (body) => new Response(body).headers.get("content-type");
      const fd = new FormData();
      fd.append("name", "va\\nlue"); fd.append("file", new Blob(["file body"], { type: "text/x" }), "f\\".txt"); fd.append("blob", new Blob(["b"]));
      const multipart = new Response(fd);
      const raw = await multipart.clone().text();
      const parsed = await multipart.formData();
      const urlencoded = await new Response(new URLSearchParams("a=1&b=%C3%A9")).formData();
      const view = new Uint8Array([9, 1, 2, 3, 9]).subarray(1, 4);
      return {
        types: [type("s"), type(new Blob([], { type: "image/png" })), type(new Blob([])), type(new ArrayBuffer(1)), type(view), type(new URLSearchParams("a=b")), type(null)],
        multipartType: /^multipart\\/form-data; boundary=.+$/.test(multipart.headers.get("content-type")), crlf: raw.includes("va\\r\\nlue"),
        parsed: [parsed.get("name"), parsed.get("file").name, parsed.get("file").type, await parsed.get("file").text(), parsed.get("blob").name],
        urlencoded: [...urlencoded], bytes: [...new Uint8Array(await new Response(view).arrayBuffer())],
        textType: await rejected(new Response("a=b").formData()),
      };`);
    expect(v.types).toEqual(["text/plain;charset=UTF-8", "image/png", null, null, null, "application/x-www-form-urlencoded;charset=UTF-8", null]);
    expect(v.multipartType).toBe(true);
    expect(v.crlf).toBe(true);
    expect(v.parsed).toEqual(["va\r\nlue", 'f".txt', "text/x", "file body", "blob"]);
    expect(v.urlencoded).toEqual([["a", "1"], ["b", "é"]]);
    expect(v.bytes).toEqual([1, 2, 3]);
    expect(v.textType).toBe("TypeError");
  });

  test("XHR §4 FormData: append, set, get, getAll, has, delete, iteration, File entries", async () => {
    const v = await guest(`${THREW}
      const fd = new FormData();
      fd.append("a", "1"); fd.append("a", "2"); fd.append("b", new Blob(["x"]), "x.bin"); fd.set("c", "3"); fd.set("a", "0");
      const entries = [...fd].map(([k, v]) => [k, typeof v === "string" ? v : v.name]);
      fd.delete("c");
      return [entries, fd.getAll("a"), fd.has("c"), fd.get("b") instanceof File, threw(() => fd.append("a", "x", "name")), String(fd)];`);
    expect(v).toEqual([[["a", "0"], ["b", "x.bin"], ["c", "3"]], ["0"], false, true, "TypeError", "[object FormData]"]);
  });
});

describe("fetch (guest side)", () => {
  test("Fetch §4.2 data: URLs are answered in the sandbox (base64, percent-encoding, MIME type)", async () => {
    const v = await guest(`
      const a = await fetch("data:text/plain;base64,SGVsbG8gd29ybGQ=");
      const b = await fetch("data:,a%20b%C3%A9");
      const c = await fetch("data:application/json;charset=utf-8,%7B%22k%22%3A1%7D#frag");
      return [a.status, a.statusText, a.headers.get("content-type"), await a.text(), b.headers.get("content-type"), await b.text(), await c.json(), c.url, a.type];`);
    expect(v).toEqual([200, "OK", "text/plain", "Hello world", "text/plain;charset=US-ASCII", "a bé", { k: 1 }, "data:application/json;charset=utf-8,%7B%22k%22%3A1%7D", "basic"]);
  });

  test("Fetch §5.1 text(): UTF-8 decode of byte bodies (BOM removed, U+FFFD for bad sequences), ASCII and not, small and large", async () => {
    const v = await guest<unknown[]>(`
      const text = (bytes) => new Response(new Uint8Array(bytes)).text();
      const big = new Uint8Array(10000).fill(0x61);
      const bigUtf8 = new TextEncoder().encode("é".repeat(3000));
      return [
        await text([0x68, 0x69]),
        await text([0x68, 0xc3, 0xa9]),
        await text([0xef, 0xbb, 0xbf, 0x6f, 0x6b]),
        escape(await text([0x61, 0xff, 0x62, 0xc3])),
        await text([0x00, 0x7f]) === "\\u0000\\u007f",
        (await text(big)).length,
        (await text(bigUtf8)) === "é".repeat(3000),
        await text([]),
      ];`);
    expect(v).toEqual(["hi", "hé", "ok", "a%uFFFDb%uFFFD", true, 10000, true, ""]);
  });

  test("Fetch §5.6 fetch: other schemes, bad ports and refused hosts are TypeErrors; an aborted signal rejects with its reason", async () => {
    const v = await guest<string[]>(`
      const reason = async (p) => { try { await p; return "resolved"; } catch (e) { return e.name + ": " + e.message; } };
      const c = new AbortController(); c.abort(new RangeError("mine"));
      return [await reason(fetch("file:///etc/passwd")), await reason(fetch("about:blank")), await reason(fetch("blob:https://a.test/x")),
        await reason(fetch("http://a.test:22/")), await reason(fetch("https://example.com/")), await reason(fetch("https://example.com/", { signal: c.signal })),
        await reason(fetch("data:;base64,%%%"))];`);
    expect(v[0]).toMatch(/^TypeError: .*file: scheme/);
    expect(v[1]).toMatch(/^TypeError: .*about: scheme/);
    expect(v[2]).toMatch(/^TypeError: .*blob: scheme/);
    expect(v[3]).toMatch(/^TypeError: .*port 22/);
    expect(v[4]).toMatch(/^TypeError: network policy: /);
    expect(v[5]).toBe("RangeError: mine");
    expect(v[6]).toMatch(/^TypeError: /);
  });
});
