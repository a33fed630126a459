import { randomBytes } from "node:crypto";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { failure, fetchText, header, request, startServer, transportFor, type TestServer } from "./helpers.js";

let server: TestServer;

beforeAll(async () => {
  server = await startServer((req, res, body) => {
    const url = new URL(req.url!, "http://x");
    switch (url.pathname) {
      case "/echo-bytes":
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": body.length });
        res.end(body);
        return;
      case "/chunked": {
        res.writeHead(200, { "content-type": "application/octet-stream" }); // no Content-Length
        const half = body.length >> 1;
        res.write(body.subarray(0, half));
        setTimeout(() => res.end(body.subarray(half)), 5);
        return;
      }
      case "/cookies":
        res.setHeader("set-cookie", ["a=1; Path=/", "b=2, with comma; HttpOnly", "c=3"]);
        res.setHeader("x-multi", ["one", "two"]);
        res.end("ok");
        return;
      case "/encoded": {
        const coding = url.searchParams.get("coding")!;
        const text = Buffer.from("decoded text ".repeat(1000));
        const encoded =
          coding === "gzip"
            ? zlib.gzipSync(text)
            : coding === "deflate"
              ? zlib.deflateSync(text)
              : coding === "deflate-raw"
                ? zlib.deflateRawSync(text)
                : coding === "br"
                  ? zlib.brotliCompressSync(text)
                  : coding === "deflate, gzip"
                    ? zlib.gzipSync(zlib.deflateSync(text))
                    : text;
        res.writeHead(200, { "content-encoding": coding === "deflate-raw" ? "deflate" : coding, "content-length": encoded.length });
        res.end(encoded);
        return;
      }
      case "/status": {
        const status = Number(url.searchParams.get("s"));
        res.statusMessage = url.searchParams.get("text") ?? res.statusMessage;
        res.writeHead(status);
        res.end(status === 204 || status === 304 ? undefined : "body");
        return;
      }
      case "/early-hints":
        res.writeEarlyHints({ link: "</style.css>; rel=preload" });
        res.end("after hints");
        return;
      case "/headers":
        res.end(JSON.stringify(req.headers));
        return;
      default:
        res.writeHead(404);
        res.end();
    }
  });
});
afterAll(() => server.close());

describe("bodies cross as bytes", () => {
  test("an 8 MiB binary body makes the round trip byte for byte", async () => {
    const payload = randomBytes(8 * 1024 * 1024);
    const { response, body } = await transportFor(server).fetch(
      request(`${server.origin}/echo-bytes`, { method: "POST", body: new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength) }),
    );
    expect(response.status).toBe(200);
    expect(server.requests.at(-1)!.body.equals(payload)).toBe(true);
    expect(body).toBeInstanceOf(Uint8Array);
    expect(body.byteLength).toBe(payload.length);
    expect(Buffer.from(body.buffer, body.byteOffset, body.byteLength).equals(payload)).toBe(true);
  });

  test("a chunked body without Content-Length arrives whole", async () => {
    const payload = randomBytes(300_000);
    const { body } = await transportFor(server).fetch(request(`${server.origin}/chunked`, { method: "PUT", body: payload }));
    expect(Buffer.from(body).equals(payload)).toBe(true);
  });

  test("an empty POST body is sent with Content-Length: 0", async () => {
    await transportFor(server).fetch(request(`${server.origin}/headers`, { method: "POST", body: new Uint8Array(0) }));
    expect(server.requests.at(-1)!.headers["content-length"]).toBe("0");
  });
});

describe("response headers (WHATWG Fetch 2.2.2 headers)", () => {
  test("repeated Set-Cookie headers stay separate pairs, in order, commas intact", async () => {
    const r = await fetchText(transportFor(server), `${server.origin}/cookies`);
    const cookies = r.headers.filter(([n]) => n.toLowerCase() === "set-cookie").map(([, v]) => v);
    expect(cookies).toEqual(["a=1; Path=/", "b=2, with comma; HttpOnly", "c=3"]);
    expect(r.headers.filter(([n]) => n.toLowerCase() === "x-multi").map(([, v]) => v)).toEqual(["one", "two"]);
  });

  test("status and status text come through; 1xx informational responses are skipped", async () => {
    const r = await fetchText(transportFor(server), `${server.origin}/status?s=418&text=I%27m%20a%20teapot`);
    expect(r.status).toBe(418);
    expect(r.statusText).toBe("I'm a teapot");
    const hints = await fetchText(transportFor(server), `${server.origin}/early-hints`);
    expect(hints.status).toBe(200);
    expect(hints.text).toBe("after hints");
  });

  test("204, 304 and HEAD responses have an empty body (Fetch null body status)", async () => {
    const transport = transportFor(server);
    expect((await fetchText(transport, `${server.origin}/status?s=204`)).text).toBe("");
    expect((await fetchText(transport, `${server.origin}/status?s=304`)).text).toBe("");
    const head = await fetchText(transport, `${server.origin}/echo-bytes`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
  });

  test("default Accept, User-Agent and Accept-Encoding are sent unless the request sets them; Host names the URL's host", async () => {
    const transport = transportFor(server);
    await transport.fetch(request(`${server.origin}/headers`));
    let seen = server.requests.at(-1)!.headers;
    expect(seen.accept).toBe("*/*");
    expect(seen["user-agent"]).toBe("scriptbox");
    expect(seen["accept-encoding"]).toBe("gzip, deflate, br");
    expect(seen.host).toBe(`127.0.0.1:${server.port}`);
    await transport.fetch(request(`${server.origin}/headers`, { headers: [["Accept", "text/plain"], ["User-Agent", "mine"], ["Accept-Encoding", "identity"]] }));
    seen = server.requests.at(-1)!.headers;
    expect(seen.accept).toBe("text/plain");
    expect(seen["user-agent"]).toBe("mine");
    expect(seen["accept-encoding"]).toBe("identity");
  });
});

describe("content codings (WHATWG Fetch 4.6 HTTP-network fetch, handle content codings)", () => {
  for (const coding of ["gzip", "deflate", "deflate-raw", "br", "deflate, gzip"]) {
    test(`a ${coding} body is decoded; the headers stay as the server sent them`, async () => {
      const r = await fetchText(transportFor(server), `${server.origin}/encoded?coding=${encodeURIComponent(coding)}`);
      expect(r.text).toBe("decoded text ".repeat(1000));
      expect(header(r.headers, "content-encoding")).toBe(coding === "deflate-raw" ? "deflate" : coding);
    });
  }

  test("an unknown coding is passed through undecoded", async () => {
    const r = await fetchText(transportFor(server), `${server.origin}/encoded?coding=x-custom`);
    expect(r.text).toBe("decoded text ".repeat(1000));
  });

  test("the decoded size counts against maxResponseBytes (a compression bomb stops at the limit)", async () => {
    const e = await failure(transportFor(server, { limits: { maxResponseBytes: 5_000 } }).fetch(request(`${server.origin}/encoded?coding=gzip`)));
    expect(e.type).toBe("limit");
    expect(e.message).toBe("limit: maxResponseBytes (5000 bytes) exceeded while reading the response body");
  });
});
