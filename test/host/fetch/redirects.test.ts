import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { failure, fetchText, header, request, startServer, transportFor, type TestServer } from "./helpers.js";

// /redirect/<status>?to=<url>[&n=<hops>] answers <status> with Location; /echo answers the request it got.
let server: TestServer;
let other: TestServer;

beforeAll(async () => {
  const handler = (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse, body: Buffer) => {
    const url = new URL(req.url!, "http://x");
    const redirect = /^\/redirect\/(\d{3})$/.exec(url.pathname);
    if (redirect) {
      res.writeHead(Number(redirect[1]), { location: url.searchParams.get("to") ?? "/echo" });
      res.end("redirect body");
      return;
    }
    if (url.pathname === "/chain") {
      const n = Number(url.searchParams.get("n"));
      res.writeHead(302, { location: n > 0 ? `/chain?n=${n - 1}` : "/echo" });
      res.end();
      return;
    }
    if (url.pathname === "/no-location") {
      res.writeHead(302, { "content-type": "text/plain" });
      res.end("no location here");
      return;
    }
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString() }));
  };
  server = await startServer(handler);
  other = await startServer(handler);
});
afterAll(async () => {
  await server.close();
  await other.close();
});

async function echoAfter(status: number, method: string, opts: { to?: string; headers?: [string, string][] } = {}) {
  const transport = transportFor(server, { allow: [`127.0.0.1:${other.port}`] });
  const to = encodeURIComponent(opts.to ?? "/echo");
  const body = method === "GET" || method === "HEAD" ? null : new TextEncoder().encode("payload");
  const result = await fetchText(transport, `${server.origin}/redirect/${status}?to=${to}`, {
    method,
    body,
    headers: opts.headers ?? [["content-type", "text/plain"], ["content-language", "en"], ["x-keep", "1"]],
  });
  return { ...result, echo: method === "HEAD" ? null : (JSON.parse(result.text) as { method: string; url: string; headers: Record<string, string>; body: string }) };
}

describe("redirect statuses (WHATWG Fetch 4.4 HTTP-redirect fetch)", () => {
  for (const status of [301, 302, 303, 307, 308]) {
    test(`${status} is followed: final URL, redirected flag, the redirect's own body dropped`, async () => {
      const r = await echoAfter(status, "GET");
      expect(r.status).toBe(200);
      expect(r.redirected).toBe(true);
      expect(r.url).toBe(`${server.origin}/echo`);
      expect(r.echo!.method).toBe("GET");
    });
  }

  for (const status of [301, 302]) {
    test(`${status} turns POST into GET and drops the body and its content headers (step 12)`, async () => {
      const r = await echoAfter(status, "POST");
      expect(r.echo!.method).toBe("GET");
      expect(r.echo!.body).toBe("");
      expect(r.echo!.headers["content-type"]).toBeUndefined();
      expect(r.echo!.headers["content-language"]).toBeUndefined();
      expect(r.echo!.headers["x-keep"]).toBe("1");
    });

    test(`${status} keeps PUT as PUT with its body (step 12 only rewrites POST)`, async () => {
      const r = await echoAfter(status, "PUT");
      expect(r.echo!.method).toBe("PUT");
      expect(r.echo!.body).toBe("payload");
      expect(r.echo!.headers["content-type"]).toBe("text/plain");
    });
  }

  test("303 turns PUT (any method but GET/HEAD) into GET without a body (step 12)", async () => {
    const r = await echoAfter(303, "PUT");
    expect(r.echo!.method).toBe("GET");
    expect(r.echo!.body).toBe("");
    expect(r.echo!.headers["content-type"]).toBeUndefined();
  });

  test("303 keeps HEAD as HEAD (step 12)", async () => {
    const r = await echoAfter(303, "HEAD");
    expect(r.status).toBe(200);
    expect(server.requests.at(-1)!.method).toBe("HEAD");
  });

  for (const status of [307, 308]) {
    test(`${status} keeps the method and resends the body byte for byte`, async () => {
      const r = await echoAfter(status, "POST");
      expect(r.echo!.method).toBe("POST");
      expect(r.echo!.body).toBe("payload");
      expect(r.echo!.headers["content-type"]).toBe("text/plain");
    });
  }

  test("a relative Location resolves against the current URL and the fragment is not sent", async () => {
    const r = await echoAfter(302, "GET", { to: "../echo?x=1#frag" });
    expect(r.url).toBe(`${server.origin}/echo?x=1`);
    expect(r.echo!.url).toBe("/echo?x=1");
  });

  test("a cross-origin redirect removes Authorization but keeps other headers (step 13)", async () => {
    const r = await echoAfter(307, "GET", { to: `${other.origin}/echo`, headers: [["authorization", "Bearer abc"], ["x-keep", "1"]] });
    expect(r.url).toBe(`${other.origin}/echo`);
    expect(r.echo!.headers.authorization).toBeUndefined();
    expect(r.echo!.headers["x-keep"]).toBe("1");
  });

  test("a same-origin redirect keeps Authorization", async () => {
    const r = await echoAfter(307, "GET", { headers: [["authorization", "Bearer abc"]] });
    expect(r.echo!.headers.authorization).toBe("Bearer abc");
  });

  test("a redirect status without Location is returned as the response (3.1.4 location URL is null)", async () => {
    const r = await fetchText(transportFor(server), `${server.origin}/no-location`);
    expect(r.status).toBe(302);
    expect(r.redirected).toBe(false);
    expect(r.text).toBe("no location here");
  });

  test("20 redirects are followed; the 21st is a network error (4.4 step 8)", async () => {
    const transport = transportFor(server);
    const ok = await fetchText(transport, `${server.origin}/chain?n=19`); // 20 redirects to /echo
    expect(ok.status).toBe(200);
    const e = await failure(transport.fetch(request(`${server.origin}/chain?n=20`)));
    expect(e.type).toBe("network");
    expect(e.message).toMatch(/too many redirects \(more than 20\)/);
  });

  test('redirect: "manual" returns the 3xx response as it is', async () => {
    const r = await fetchText(transportFor(server), `${server.origin}/redirect/301?to=/echo`, { redirect: "manual" });
    expect(r.status).toBe(301);
    expect(r.redirected).toBe(false);
    expect(header(r.headers, "location")).toBe("/echo");
    expect(r.text).toBe("redirect body");
  });

  test('redirect: "error" fails on a redirect (4.3 HTTP fetch, redirect mode error)', async () => {
    const e = await failure(transportFor(server).fetch(request(`${server.origin}/redirect/302`, { redirect: "error" })));
    expect(e.type).toBe("network");
    expect(e.message).toMatch(/redirect mode is "error"/);
  });

  test("the network policy is checked again on every hop: a redirect to a host not in net.allow is refused", async () => {
    const transport = transportFor(server); // `other` is not allowed
    const before = other.requests.length;
    const e = await failure(transport.fetch(request(`${server.origin}/redirect/302?to=${encodeURIComponent(`${other.origin}/echo`)}`)));
    expect(e.type).toBe("network-policy");
    expect(e.message).toBe(`network policy: 127.0.0.1:${other.port} is a loopback address; add "127.0.0.1:${other.port}" to net.allow`);
    expect(other.requests.length).toBe(before);
  });

  test("a redirect to the cloud metadata address is refused", async () => {
    const e = await failure(transportFor(server).fetch(request(`${server.origin}/redirect/302?to=${encodeURIComponent("http://169.254.169.254/latest/meta-data/")}`)));
    expect(e.type).toBe("network-policy");
    expect(e.message).toMatch(/^network policy: 169\.254\.169\.254:80 is a link-local address/);
  });

  test("a redirect to a non-http(s) scheme is refused", async () => {
    const e = await failure(transportFor(server).fetch(request(`${server.origin}/redirect/302?to=${encodeURIComponent("file:///etc/passwd")}`)));
    expect(e.type).toBe("network-policy");
    expect(e.message).toMatch(/^network policy: the "file:" scheme is not allowed/);
  });
});
