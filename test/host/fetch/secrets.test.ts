import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SecretStore } from "../../../host/fetch/secrets.js";
import { failure, fetchText, header, request, startServer, transportFor, type TestServer } from "./helpers.js";

const TOKEN = "tok_9f8e7d6c5b4a3210";
const FANCY = 'p@ss "word"/ü+1'; // changes under JSON and URL encoding

// `api` is the secrets' origin; `other` is allowed by net.allow but not by the secrets.
let api: TestServer;
let other: TestServer;

function echoHandler(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse, body: Buffer) {
  const url = new URL(req.url!, "http://x");
  if (url.pathname === "/redirect") {
    res.writeHead(Number(url.searchParams.get("status") ?? 307), { location: url.searchParams.get("to")! });
    res.end();
    return;
  }
  if (url.pathname === "/redirect-with-value") {
    // A server that puts the credential it received into the next URL.
    const token = String(req.headers["authorization"] ?? "").replace("Bearer ", "");
    res.writeHead(302, { location: `${url.searchParams.get("to")}?leak=${token}` });
    res.end();
    return;
  }
  if (url.pathname === "/bad-location") {
    res.writeHead(302, { location: `http://[${req.headers["x-api-key"]}` });
    res.end();
    return;
  }
  const echoed = JSON.stringify({ url: req.url, headers: req.headers, body: body.toString("latin1") });
  res.setHeader("x-echo-auth", String(req.headers["authorization"] ?? ""));
  res.setHeader("set-cookie", [`session=${req.headers["x-api-key"] ?? ""}`, "plain=1"]);
  if (url.pathname === "/gzip" && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""))) {
    res.setHeader("content-encoding", "gzip");
    res.end(zlib.gzipSync(echoed));
    return;
  }
  res.statusMessage = url.pathname === "/status-echo" ? `OK ${req.headers["x-api-key"]}` : "OK";
  res.end(echoed);
}

beforeAll(async () => {
  api = await startServer(echoHandler);
  other = await startServer(echoHandler);
});
afterAll(async () => {
  await api.close();
  await other.close();
});

function transport() {
  return transportFor(api, {
    allow: [`127.0.0.1:${other.port}`],
    secrets: {
      API_TOKEN: { value: TOKEN, origins: [api.origin] },
      FANCY_SECRET: { value: FANCY, origins: [`${api.origin}/`] },
    },
  });
}

describe("placeholders", () => {
  test("a placeholder is URL-safe, carries a per-transport nonce, and unknown names are a TypeError", () => {
    const t = transport();
    const placeholder = t.secretPlaceholder("API_TOKEN");
    expect(placeholder).toMatch(/^scriptbox-secret\.API_TOKEN\.[A-Za-z0-9_-]{22}$/);
    expect(encodeURIComponent(placeholder)).toBe(placeholder);
    expect(new URLSearchParams({ q: placeholder }).toString()).toBe(`q=${placeholder}`);
    expect(transport().secretPlaceholder("API_TOKEN")).not.toBe(placeholder);
    expect(() => t.secretPlaceholder("NOPE")).toThrow(TypeError);
    expect(() => t.secretPlaceholder("NOPE")).toThrow('secret("NOPE"): no such secret');
    // A long unknown name is quoted in part: the message (and its scan for echoes) stays small.
    expect(() => t.secretPlaceholder("N".repeat(5000))).toThrow(`secret("${"N".repeat(64)}"…): no such secret`);
  });

  test("the guest's secret() refuses a name longer than every secret's name without reading it", async () => {
    const { runScript } = await import("scriptbox");
    const result = await runScript(
      `import { secret } from "runtime"; export default () => { try { secret("x".repeat(1 << 20)); return "no error" } catch (e) { return e.name + ": " + e.message } }`,
      { secrets: { API_TOKEN: { value: "k7Hq2Lm9Xw4Rt8Pz3Nv6", origins: ["https://a.example"] } } },
    );
    expect(result).toMatchObject({ ok: true, value: "TypeError: secret(<a name of 1048576 characters>): no such secret" });
  });

  test.each([
    [{ "1ABC": { value: "v", origins: ["https://a.example"] } }, /invalid name "1ABC"/],
    [{ "A-B": { value: "v", origins: ["https://a.example"] } }, /invalid name "A-B"/],
    [{ A: { value: "", origins: ["https://a.example"] } }, /secrets\.A\.value must be a non-empty string/],
    [{ A: { value: "line\r\nbreak", origins: ["https://a.example"] } }, /cannot be sent in a header/],
    [{ A: { value: "v", origins: [] } }, /must list at least one origin/],
    [{ A: { value: "v", origins: ["ftp://a.example"] } }, /is not an http\(s\) origin/],
    [{ A: { value: "v", origins: ["https://a.example/path"] } }, /is not an http\(s\) origin/],
  ])("invalid secret configuration %j is a TypeError that never shows the value", (secrets, why) => {
    expect(() => new SecretStore(secrets)).toThrow(why);
    try {
      new SecretStore(secrets);
    } catch (error) {
      expect((error as Error).message).not.toContain("line\r\nbreak");
    }
  });
});

describe("substitution (only in header values, only to the secret's origins)", () => {
  test("a placeholder in a header to a listed origin is replaced by the value on the wire", async () => {
    const t = transport();
    const token = t.secretPlaceholder("API_TOKEN");
    const fancy = t.secretPlaceholder("FANCY_SECRET");
    await t.fetch(
      request(`${api.origin}/echo`, {
        headers: [
          ["Authorization", `Bearer ${token}`],
          ["X-Both", `a=${token}; b=${fancy}; a2=${token}`],
          ["Cookie", `session=${fancy}`],
        ],
      }),
    );
    const seen = api.requests.at(-1)!;
    expect(seen.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen.rawHeaders[seen.rawHeaders.indexOf("X-Both") + 1]).toBe(Buffer.from(`a=${TOKEN}; b=${FANCY}; a2=${TOKEN}`, "latin1").toString("latin1"));
    expect(Buffer.from(seen.headers.cookie!, "latin1").toString("latin1")).toBe(`session=${FANCY}`);
  });

  test("the substitution is redone per hop: a same-origin redirect keeps working", async () => {
    const t = transport();
    const r = await fetchText(t, `${api.origin}/redirect?to=/echo`, { headers: [["x-api-key", t.secretPlaceholder("API_TOKEN")]] });
    expect(r.redirected).toBe(true);
    expect(api.requests.at(-1)!.headers["x-api-key"]).toBe(TOKEN);
  });
});

describe("refusal: a placeholder going anywhere else fails the whole request (network policy)", () => {
  async function refused(t: ReturnType<typeof transport>, url: string, init: Parameters<typeof request>[1]) {
    const before = [api.requests.length, other.requests.length];
    const e = await failure(t.fetch(request(url, init)));
    expect(e.type).toBe("network-policy");
    expect(e.message).toMatch(/^network policy: secret "(API_TOKEN|FANCY_SECRET)" refused: /);
    expect(e.message).not.toContain(TOKEN);
    return { message: e.message, sent: [api.requests.length - before[0]!, other.requests.length - before[1]!] };
  }

  test("in a header to an origin not listed for the secret", async () => {
    const t = transport();
    const r = await refused(t, `${other.origin}/echo`, { headers: [["authorization", `Bearer ${t.secretPlaceholder("API_TOKEN")}`]] });
    expect(r.message).toBe(`network policy: secret "API_TOKEN" refused: it may only be sent to ${api.origin}, not to ${other.origin} (header "authorization")`);
    expect(r.sent).toEqual([0, 0]);
  });

  test("the same host on another scheme or port is another origin", async () => {
    const t = transport();
    const r = await refused(t, `${api.origin.replace("http:", "https:")}/echo`, { headers: [["x-api-key", t.secretPlaceholder("API_TOKEN")]] });
    expect(r.message).toContain(`not to https://127.0.0.1:${api.port}`);
  });

  test("in a header name", async () => {
    const t = transport();
    const r = await refused(t, `${api.origin}/echo`, { headers: [[`x-${t.secretPlaceholder("API_TOKEN")}`, "1"]] });
    expect(r.message).toMatch(/its placeholder is in a header name/);
  });

  test.each([
    ["the query", (p: string) => `/echo?key=${p}`],
    ["the path", (p: string) => `/echo/${p}`],
    ["the query, percent-encoded", (p: string) => `/echo?key=${[...p].map((c) => "%" + c.charCodeAt(0).toString(16)).join("")}`],
    ["the query, percent-encoded twice", (p: string) => `/echo?key=${p.replace("s", "%2573")}`],
  ])("in the URL: %s", async (_, place) => {
    const t = transport();
    const r = await refused(t, `${api.origin}${place(t.secretPlaceholder("API_TOKEN"))}`, {});
    expect(r.message).toMatch(/its placeholder is in the URL; secrets are only substituted in request header values/);
    expect(r.sent).toEqual([0, 0]);
  });

  test("in the URL's host, where the URL parser lower-cases it", async () => {
    const t = transportFor(api, { allow: ["*"], secrets: { API_TOKEN: { value: TOKEN, origins: [api.origin] } } });
    const r = await refused(t, `http://${t.secretPlaceholder("API_TOKEN")}.example.test/`, {});
    expect(r.message).toMatch(/its placeholder is in the URL/);
  });

  test("as the request method", async () => {
    const t = transport();
    const r = await refused(t, `${api.origin}/echo`, { method: t.secretPlaceholder("API_TOKEN") });
    expect(r.message).toMatch(/its placeholder is the request method/);
  });

  test("in the body, even to the secret's own origin", async () => {
    const t = transport();
    const body = new TextEncoder().encode(JSON.stringify({ token: t.secretPlaceholder("API_TOKEN") }));
    const r = await refused(t, `${api.origin}/echo`, { method: "POST", body });
    expect(r.message).toMatch(/its placeholder is in the request body/);
    expect(r.sent).toEqual([0, 0]);
  });

  test("on a redirect hop to an origin not listed for it", async () => {
    const t = transport();
    const to = encodeURIComponent(`${other.origin}/echo`);
    const r = await refused(t, `${api.origin}/redirect?to=${to}`, { headers: [["x-api-key", t.secretPlaceholder("API_TOKEN")]] });
    expect(r.message).toContain(`not to ${other.origin} (header "x-api-key")`);
    expect(r.sent).toEqual([1, 0]); // the first hop went to api; nothing reached other
  });

  test("a redirect URL carrying the secret's value to another origin is refused", async () => {
    const t = transport();
    const to = encodeURIComponent(`${other.origin}/collect`);
    const r = await refused(t, `${api.origin}/redirect-with-value?to=${to}`, { headers: [["authorization", `Bearer ${t.secretPlaceholder("API_TOKEN")}`]] });
    expect(r.message).toBe(`network policy: secret "API_TOKEN" refused: a redirect's Location carries its value; it may only be sent to ${api.origin}`);
    expect(r.sent).toEqual([1, 0]);
  });

  test("Authorization is dropped on a cross-origin redirect (Fetch 4.4 step 13), so that hop is not refused", async () => {
    const t = transport();
    const to = encodeURIComponent(`${other.origin}/echo`);
    const r = await fetchText(t, `${api.origin}/redirect?to=${to}`, { headers: [["authorization", `Bearer ${t.secretPlaceholder("API_TOKEN")}`]] });
    expect(r.url).toBe(`${other.origin}/echo`);
    expect(other.requests.at(-1)!.headers.authorization).toBeUndefined();
  });
});

describe("redaction: secret values never come back", () => {
  test("a server echoing the value in headers, Set-Cookie and the body gets the placeholder in their place", async () => {
    const t = transport();
    const token = t.secretPlaceholder("API_TOKEN");
    const fancy = t.secretPlaceholder("FANCY_SECRET");
    const r = await fetchText(t, `${api.origin}/echo`, { headers: [["authorization", `Bearer ${token}`], ["x-api-key", fancy]] });
    expect(header(r.headers, "x-echo-auth")).toBe(`Bearer ${token}`);
    expect(r.headers.filter(([n]) => n === "set-cookie").map(([, v]) => v)).toEqual([`session=${fancy}`, "plain=1"]);
    expect(r.text).not.toContain(TOKEN);
    expect(r.text).not.toContain(JSON.stringify(FANCY).slice(1, -1)); // the JSON-escaped form is caught too
    const echoed = JSON.parse(r.text) as { headers: Record<string, string> };
    expect(echoed.headers.authorization).toBe(`Bearer ${token}`);
  });

  test("the body of a response to a request that carried a secret never goes to a bodyTarget: it is redacted on the host", async () => {
    const t = transport();
    const token = t.secretPlaceholder("API_TOKEN");
    const asked: number[] = [];
    // A target that would keep the bytes as they came off the wire (the sandbox's guest-heap blocks).
    const bodyTarget = (length: number) => {
      asked.push(length);
      return { length, write() {}, release() {} };
    };
    const r = await fetchText(t, `${api.origin}/echo`, { headers: [["authorization", `Bearer ${token}`]] }, { bodyTarget });
    expect(asked).toEqual([]);
    expect(r.text).not.toContain(TOKEN);
    expect((JSON.parse(r.text) as { headers: Record<string, string> }).headers.authorization).toBe(`Bearer ${token}`);
    // After a same-origin redirect the secret is still carried: the final body stays on the host too.
    const redirected = await fetchText(t, `${api.origin}/redirect?to=/echo`, { headers: [["x-api-key", token]] }, { bodyTarget });
    expect(asked).toEqual([]);
    expect(redirected.text).not.toContain(TOKEN);
    // The same request without a secret does use the target.
    const plain = await t.fetch(request(`${api.origin}/echo`), { bodyTarget });
    expect(asked).toHaveLength(1);
    expect(plain.placed?.length).toBe(asked[0]);
  });

  test("a hop that sends a secret asks for an uncompressed body (a compressed size would be an oracle); the echo is redacted", async () => {
    const t = transport();
    const token = t.secretPlaceholder("API_TOKEN");
    const r = await fetchText(t, `${api.origin}/gzip`, { headers: [["authorization", `Bearer ${token}`], ["accept-encoding", "gzip"]] });
    expect(r.headers.find(([name]) => name === "content-encoding")).toBeUndefined();
    expect(JSON.parse(r.text).headers["accept-encoding"]).toBe("identity");
    expect(r.text).not.toContain(TOKEN);
    expect(r.text).toContain(`Bearer ${token}`);
    // Without a secret, the same server compresses, and the transport decodes.
    const plain = await fetchText(t, `${api.origin}/gzip`, { headers: [["authorization", "Bearer nothing"]] });
    expect(plain.headers.find(([name]) => name === "content-encoding")).toEqual(["content-encoding", "gzip"]);
    expect(JSON.parse(plain.text).headers["accept-encoding"]).toBe("gzip, deflate, br");
  });

  test("a redirect that puts the value into a URL of another origin the secret is bound to: that hop asks for an uncompressed body too", async () => {
    // Its request line carries the value, with no header secret: the hop rule alone missed it (review).
    const t = transportFor(api, {
      allow: [`127.0.0.1:${other.port}`],
      secrets: { API_TOKEN: { value: TOKEN, origins: [api.origin, other.origin] } },
    });
    const token = t.secretPlaceholder("API_TOKEN");
    const r = await fetchText(t, `${api.origin}/redirect-with-value?to=${encodeURIComponent(`${other.origin}/gzip`)}`, {
      headers: [["authorization", `Bearer ${token}`], ["accept-encoding", "gzip"]],
    });
    expect(r.url).toBe(`${other.origin}/gzip?leak=${token}`);
    expect(r.headers.find(([name]) => name === "content-encoding")).toBeUndefined();
    const echoed = JSON.parse(r.text) as { url: string; headers: Record<string, string> };
    expect(echoed.headers["accept-encoding"]).toBe("identity");
    expect(echoed.headers["authorization"]).toBeUndefined(); // dropped on the cross-origin hop
    expect(r.text).not.toContain(TOKEN);
  });

  test("the status text and the final URL are redacted", async () => {
    const t = transport();
    const token = t.secretPlaceholder("API_TOKEN");
    const status = await fetchText(t, `${api.origin}/status-echo`, { headers: [["x-api-key", token]] });
    expect(status.statusText).toBe(`OK ${token}`);
    const redirected = await fetchText(t, `${api.origin}/redirect-with-value?to=${encodeURIComponent(`${api.origin}/echo`)}`, {
      headers: [["authorization", `Bearer ${token}`]],
    });
    expect(redirected.url).toBe(`${api.origin}/echo?leak=${token}`);
    expect(redirected.text).not.toContain(TOKEN);
  });

  test("error messages are redacted", async () => {
    const t = transport();
    const e = await failure(t.fetch(request(`${api.origin}/bad-location`, { headers: [["x-api-key", t.secretPlaceholder("API_TOKEN")]] })));
    expect(e.type).toBe("network");
    expect(e.message).toContain(t.secretPlaceholder("API_TOKEN"));
    expect(e.message).not.toContain(TOKEN);
  });
});

describe("SecretStore redaction", () => {
  const store = new SecretStore(
    {
      SHORT: { value: "abc123", origins: ["https://a.example"] },
      LONG: { value: "abc123def", origins: ["https://a.example"] },
      WORD: { value: "secret", origins: ["https://a.example"] }, // also a part of every placeholder
    },
    "NONCE",
  );
  /** What a hop carrying these secrets' placeholders would carry. */
  const carrying = (...names: string[]) =>
    new Set(store.substitution(names.map((name) => ["x", store.placeholder(name)] as [string, string]), "https://a.example").carried);
  const all = carrying("SHORT", "LONG", "WORD");

  test("overlapping echoes are replaced as one span, by the placeholder of the leftmost (longest) match", () => {
    expect(store.redactText("x abc123def y abc123 z", all)).toBe("x scriptbox-secret.LONG.NONCE y scriptbox-secret.SHORT.NONCE z");
  });

  test("only the secrets a request carried are looked for", () => {
    expect(store.redactText("x abc123def y abc123 z", carrying("SHORT"))).toBe("x scriptbox-secret.SHORT.NONCEdef y scriptbox-secret.SHORT.NONCE z");
    expect(store.redactText("x abc123def y", new Set())).toBe("x abc123def y");
  });

  test("a value that occurs inside a placeholder does not make redaction loop or nest", () => {
    expect(store.redactText("my secret", all)).toBe("my scriptbox-secret.WORD.NONCE");
    const bytes = store.redactBytes(new TextEncoder().encode("a secret, another secret"), all);
    expect(Buffer.from(bytes).toString()).toBe("a scriptbox-secret.WORD.NONCE, another scriptbox-secret.WORD.NONCE");
  });

  test("bytes without a secret come back as the same array", () => {
    const body = new TextEncoder().encode("nothing to see");
    expect(store.redactBytes(body, all)).toBe(body);
  });

  test("the substitution is planned and measured before anything is expanded", () => {
    const plan = store.substitution([["authorization", `Bearer ${store.placeholder("LONG")}`], ["x-n", "1"]], "https://a.example");
    expect(plan.bytes).toBe("authorization".length + 4 + "Bearer abc123def".length + "x-n".length + 4 + 1);
    expect(plan.apply()).toEqual([["authorization", "Bearer abc123def"], ["x-n", "1"]]);
  });
});
