import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { failure, request, startServer, transportFor, type TestServer } from "./helpers.js";
import type { TransportRequest } from "../../../host/fetch/requestRecord.js";

let server: TestServer;
beforeAll(async () => {
  server = await startServer((_req, res) => res.end("ok"));
});
afterAll(() => server.close());

async function refusedBeforeTheWire(init: Partial<TransportRequest> | TransportRequest, url = `${server.origin}/x`) {
  const before = server.requests.length;
  const e = await failure(transportFor(server).fetch({ ...request(url), ...init } as TransportRequest));
  expect(e.type).toBe("network");
  expect(e.message).toMatch(/^fetch failed: invalid request: /);
  expect(server.requests.length).toBe(before);
  return e.message;
}

describe("header injection is refused before the wire (RFC 9110 5.5, Fetch 2.2 header value)", () => {
  test.each([
    ["CR LF in a value", ["x-a", "1\r\nX-Injected: 1"]],
    ["LF in a value", ["x-a", "1\nX-Injected: 1"]],
    ["CR in a value", ["x-a", "1\rX"]],
    ["NUL in a value", ["x-a", "1\0"]],
    ["another control character in a value", ["x-a", "1\x01"]],
    ["DEL in a value", ["x-a", "1\x7f"]],
    ["a character above U+00FF in a value", ["x-a", "caf\u0113"]],
  ] as [string, [string, string]][])("%s", async (_, pair) => {
    expect(await refusedBeforeTheWire({ headers: [pair] })).toMatch(/the value of header "x-a" has a control character/);
  });

  test.each([
    ["CR LF in a name", "x-a\r\nx-injected"],
    ["NUL in a name", "x-a\0"],
    ["a space in a name", "x a"],
    ["a colon in a name", "x-a:"],
    ["an empty name", ""],
  ])("%s", async (_, name) => {
    expect(await refusedBeforeTheWire({ headers: [[name, "1"]] })).toMatch(/header name .* is not a valid HTTP token/);
  });

  test("a request line injection through the method is refused", async () => {
    expect(await refusedBeforeTheWire({ method: "GET /admin HTTP/1.1\r\nHost: x\r\n\r\nGET" })).toMatch(/method is not a valid HTTP token/);
  });
});

describe("the request record is validated on the host", () => {
  test.each(["CONNECT", "TRACE", "track"])("method %s is forbidden (Fetch 2.2.1 forbidden method)", async (method) => {
    expect(await refusedBeforeTheWire({ method })).toMatch(/is forbidden/);
  });

  test("GET and HEAD cannot have a body", async () => {
    expect(await refusedBeforeTheWire({ method: "GET", body: new Uint8Array(1) })).toMatch(/a GET request cannot have a body/);
    expect(await refusedBeforeTheWire({ method: "HEAD", body: new Uint8Array(0) })).toMatch(/a HEAD request cannot have a body/);
  });

  test("a URL with credentials is refused (Fetch: Request constructor)", async () => {
    expect(await refusedBeforeTheWire({}, `http://user:pass@127.0.0.1:${server.port}/`)).toMatch(/credentials/);
  });

  test.each([
    [{ url: "not a url" }, /url is not an absolute URL/],
    [{ url: 42 }, /url must be a string/],
    [{ headers: "x" }, /headers must be a list/],
    [{ headers: [["a"]] }, /string pairs/],
    [{ headers: [["a", 1]] }, /string pairs/],
    [{ redirect: "sideways" }, /redirect must be/],
    [{ body: "text" }, /body must be bytes or null/],
    [{ method: "" }, /method is not a valid HTTP token/],
  ])("malformed record %j is refused", async (init, why) => {
    expect(await refusedBeforeTheWire(init as unknown as Partial<TransportRequest>)).toMatch(why);
  });

  test("headers the transport owns (Host, framing, connection) are dropped, not sent", async () => {
    await transportFor(server).fetch(
      request(`${server.origin}/owned`, {
        method: "POST",
        body: new TextEncoder().encode("0123456789"),
        headers: [
          ["Host", "internal.example"],
          ["Content-Length", "3"],
          ["Transfer-Encoding", "chunked"],
          ["Connection", "close, x-drop"],
          ["Expect", "100-continue"],
          ["X-Kept", "  trimmed\t"],
        ],
      }),
    );
    const seen = server.requests.at(-1)!;
    expect(seen.headers.host).toBe(`127.0.0.1:${server.port}`);
    expect(seen.headers["content-length"]).toBe("10");
    expect(seen.headers["transfer-encoding"]).toBeUndefined();
    expect(seen.headers.expect).toBeUndefined();
    expect(seen.body.toString()).toBe("0123456789");
    expect(seen.headers["x-kept"]).toBe("trimmed");
  });
});

describe("a URL the host parsed itself (the bridge passes one after checking the URL rules)", () => {
  test("is used as is: no second parse, the fragment still never reaches the wire", async () => {
    const before = server.requests.length;
    const result = await transportFor(server).fetch({ ...request(`${server.origin}/x`), url: new URL(`${server.origin}/parsed?q=1#fragment`) });
    expect(result.response.status).toBe(200);
    expect(result.response.url).toBe(`${server.origin}/parsed?q=1`);
    expect(server.requests.slice(before).map((r) => r.url)).toEqual(["/parsed?q=1"]);
  });

  test("with credentials it is refused like the string form", async () => {
    const url = new URL(server.origin);
    url.username = "user";
    expect(await refusedBeforeTheWire({ url })).toBe("fetch failed: invalid request: the URL includes credentials");
  });
});
