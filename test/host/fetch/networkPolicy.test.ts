import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { HostResolver } from "../../../host/net/resolver.js";
import { failure, fetchText, request, startServer, transportFor, type TestServer } from "./helpers.js";

let server: TestServer;
beforeAll(async () => {
  server = await startServer((req, res) => res.end(`host=${req.headers.host}`));
});
afterAll(() => server.close());

/** A fake DNS that records each lookup and can change its answers between calls. */
function fakeDns(answers: Record<string, string[][]>) {
  const calls: string[] = [];
  const resolver = new HostResolver({
    ttlMs: 0,
    lookup: async (hostname) => {
      calls.push(hostname);
      const list = answers[hostname];
      if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
      return list[Math.min(calls.filter((c) => c === hostname).length, list.length) - 1]!;
    },
  });
  return { resolver, calls };
}

async function refused(transport: ReturnType<typeof transportFor>, url: string): Promise<string> {
  const before = server.requests.length;
  const e = await failure(transport.fetch(request(url)));
  expect(e.type).toBe("network-policy");
  expect(server.requests.length).toBe(before);
  return e.message;
}

describe("the transport enforces the network policy before connecting", () => {
  test("no net.allow: nothing is reachable, not even loopback", async () => {
    expect(await refused(transportFor(null), `${server.origin}/`)).toBe(
      `network policy: 127.0.0.1:${server.port} is a loopback address; add "127.0.0.1:${server.port}" to net.allow`,
    );
  });

  test("loopback, private, link-local, unspecified and IPv4-mapped loopback are refused with net.allow [\"*\"]", async () => {
    const transport = transportFor(null, { allow: ["*"] });
    expect(await refused(transport, `${server.origin}/`)).toMatch(/is a loopback address/);
    expect(await refused(transport, `http://[::ffff:127.0.0.1]:${server.port}/`)).toMatch(/\(127\.0\.0\.1\) is a loopback address/);
    expect(await refused(transport, "http://10.0.0.1/")).toMatch(/is a private address \(RFC 1918\)/);
    expect(await refused(transport, "http://169.254.169.254/latest/meta-data/")).toMatch(/is a link-local address/);
    expect(await refused(transport, `http://0.0.0.0:${server.port}/`)).toMatch(/is an unspecified address/);
  });

  test("a port not in the host:port entry is refused", async () => {
    const transport = transportFor(null, { allow: [`127.0.0.1:${server.port + 1 > 65535 ? 1 : server.port + 1}`] });
    expect(await refused(transport, `${server.origin}/`)).toMatch(/is a loopback address/);
  });

  test("non-http(s) schemes are refused", async () => {
    expect(await refused(transportFor(server), `ftp://127.0.0.1:${server.port}/`)).toMatch(/the "ftp:" scheme is not allowed/);
  });

  test("a hostname that resolves to 127.0.0.1 (localhost) is refused unless allowed", async () => {
    const url = `http://localhost:${server.port}/`;
    expect(await refused(transportFor(null, { allow: ["*"] }), url)).toBe(
      `network policy: localhost:${server.port} resolves to 127.0.0.1, a loopback address; add "localhost:${server.port}" to net.allow`,
    );
    expect(await refused(transportFor(null, { allow: [`127.0.0.1:${server.port}`] }), url)).toMatch(/localhost:\d+ is not in net\.allow/);
    const allowed = await fetchText(transportFor(null, { allow: [`localhost:${server.port}`] }), url);
    expect(allowed.text).toBe(`host=localhost:${server.port}`);
  });

  test("the name is resolved once and the connection goes to the checked address, with the name in Host (no DNS rebinding window)", async () => {
    // Second and later answers point elsewhere: a rebinding DNS. Only the first is ever used.
    const dns = fakeDns({ "app.test": [["127.0.0.1"], ["10.9.9.9"]] });
    const transport = transportFor(null, { allow: ["app.test", `127.0.0.1:${server.port}`], resolver: dns.resolver });
    const r = await fetchText(transport, `http://app.test:${server.port}/`);
    expect(r.text).toBe(`host=app.test:${server.port}`);
    expect(r.url).toBe(`http://app.test:${server.port}/`);
    expect(dns.calls).toEqual(["app.test"]);
    // The next fetch resolves again and is judged on the new answer.
    expect(await refused(transport, `http://app.test:${server.port}/`)).toMatch(/app\.test:\d+ resolves to 10\.9\.9\.9, a private address/);
  });

  test("a *.domain entry never reaches a special address, whatever DNS says", async () => {
    const dns = fakeDns({ "evil.example.test": [["127.0.0.1"]] });
    const transport = transportFor(null, { allow: ["*.example.test"], resolver: dns.resolver });
    expect(await refused(transport, `http://evil.example.test:${server.port}/`)).toMatch(/resolves to 127\.0\.0\.1, a loopback address; add "127\.0\.0\.1:\d+"/);
  });

  test("when the first checked address refuses the connection, the next checked one is tried", async () => {
    const dns = fakeDns({ "multi.test": [["127.0.0.2", "127.0.0.1"]] }); // nothing listens on 127.0.0.2
    const transport = transportFor(null, { allow: ["multi.test", "127.0.0.2", "127.0.0.1"], resolver: dns.resolver });
    expect((await fetchText(transport, `http://multi.test:${server.port}/`)).text).toBe(`host=multi.test:${server.port}`);
  });

  test("an allowed IPv6 literal is reached at that address; localhost falls back from 127.0.0.1 to ::1", async () => {
    const http = await import("node:http");
    const v6 = http.createServer((req, res) => res.end(`v6 host=${req.headers.host}`));
    await new Promise<void>((resolve) => v6.listen(0, "::1", resolve));
    const port = (v6.address() as import("node:net").AddressInfo).port;
    try {
      expect((await fetchText(transportFor(null, { allow: [`[::1]:${port}`] }), `http://[::1]:${port}/`)).text).toBe(`v6 host=[::1]:${port}`);
      // localhost is 127.0.0.1 then ::1; nothing listens on 127.0.0.1 at this port.
      expect((await fetchText(transportFor(null, { allow: [`localhost:${port}`] }), `http://localhost:${port}/`)).text).toBe(`v6 host=localhost:${port}`);
    } finally {
      v6.closeAllConnections();
      await new Promise((resolve) => v6.close(resolve));
    }
  });

  test("a refused connection is a network error", async () => {
    const closed = await startServer((_q, s) => s.end());
    const port = closed.port;
    await closed.close();
    const e = await failure(transportFor(null, { allow: [`127.0.0.1:${port}`] }).fetch(request(`http://127.0.0.1:${port}/`)));
    expect(e.type).toBe("network");
    expect(e.message).toMatch(/^fetch failed: .*ECONNREFUSED/);
  });

  test("a name that does not resolve is a network error", async () => {
    const dns = fakeDns({});
    const e = await failure(transportFor(null, { allow: ["nowhere.test"], resolver: dns.resolver }).fetch(request("http://nowhere.test/")));
    expect(e).toEqual({ type: "network", message: "fetch failed: cannot resolve nowhere.test (ENOTFOUND)" });
  });
});
