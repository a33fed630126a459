import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { failure, fetchText, request, startServer, transportFor, type TestServer } from "./helpers.js";

let server: TestServer;
let held: (() => void)[] = [];
let streamed = 0; // bytes the /endless handler managed to write

beforeAll(async () => {
  server = await startServer((req, res) => {
    const url = new URL(req.url!, "http://x");
    switch (url.pathname) {
      case "/hold": // answers when the test releases it
        held.push(() => res.end("released"));
        return;
      case "/size": {
        const n = Number(url.searchParams.get("n"));
        if (url.searchParams.has("chunked")) res.writeHead(200);
        else res.writeHead(200, { "content-length": n });
        res.end(Buffer.alloc(n, 0x61));
        return;
      }
      case "/endless": {
        // Streams 64 KiB chunks (up to 256 MiB) for as long as the client reads.
        streamed = 0;
        const chunk = Buffer.alloc(64 * 1024, 0x62);
        const pump = () => {
          while (streamed < 256 * 1024 * 1024 && !res.destroyed) {
            streamed += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
          res.end();
        };
        res.writeHead(200, url.searchParams.has("declare") ? { "content-length": 256 * 1024 * 1024 } : {});
        pump();
        return;
      }
      case "/never":
        res.flushHeaders(); // headers, then nothing
        return;
      default:
        res.end("ok");
    }
  });
});
afterAll(() => server.close());

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

describe("maxFetches", () => {
  test("counts fetches per run, refuses past the limit, and beginRun() starts the count again", async () => {
    const transport = transportFor(server, { limits: { maxFetches: 2 } });
    const before = server.requests.length;
    await fetchText(transport, `${server.origin}/a`);
    await fetchText(transport, `${server.origin}/b`);
    const e = await failure(transport.fetch(request(`${server.origin}/c`)));
    expect(e).toEqual({ type: "limit", message: "limit: maxFetches (2) reached: no more fetches in this run" });
    expect(server.requests.length - before).toBe(2);
    expect(transport.stats.fetches).toBe(2);
    transport.beginRun();
    expect(transport.stats.fetches).toBe(0);
    expect((await fetchText(transport, `${server.origin}/d`)).text).toBe("ok");
  });

  test("a followed redirect is part of one fetch", async () => {
    const redirecting = await startServer((req, res) => {
      if (req.url === "/r") {
        res.writeHead(302, { location: "/done" });
        res.end();
      } else res.end("done");
    });
    const transport = transportFor(redirecting, { limits: { maxFetches: 1 } });
    expect((await fetchText(transport, `${redirecting.origin}/r`)).text).toBe("done");
    expect(transport.stats.fetches).toBe(1);
    await redirecting.close();
  });
});

describe("maxConcurrentFetches", () => {
  test("extra fetches wait their turn instead of failing; the server never sees more than the limit", async () => {
    const transport = transportFor(server, { limits: { maxConcurrentFetches: 2 } });
    held = [];
    server.maxInFlight = 0;
    const all = Array.from({ length: 5 }, () => fetchText(transport, `${server.origin}/hold`));
    await until(() => held.length === 2);
    await new Promise((r) => setTimeout(r, 50));
    expect(held.length).toBe(2); // the other three are waiting in the transport
    for (let released = 0; released < 5; released++) {
      await until(() => held.length > 0);
      held.shift()!();
    }
    const results = await Promise.all(all);
    expect(results.map((r) => r.text)).toEqual(Array(5).fill("released"));
    expect(server.maxInFlight).toBe(2);
  });
});

describe("maxRequestBytes", () => {
  test("a body over the limit is refused before anything is sent; one at the limit goes", async () => {
    const transport = transportFor(server, { limits: { maxRequestBytes: 1000 } });
    const before = server.requests.length;
    const e = await failure(transport.fetch(request(`${server.origin}/post`, { method: "POST", body: new Uint8Array(1001) })));
    expect(e).toEqual({ type: "limit", message: "limit: maxRequestBytes (1000 bytes) exceeded: the request body is 1001 bytes" });
    expect(server.requests.length).toBe(before);
    await transport.fetch(request(`${server.origin}/post`, { method: "POST", body: new Uint8Array(1000) }));
    expect(server.requests.at(-1)!.body.length).toBe(1000);
  });
});

describe("maxResponseBytes", () => {
  test("a declared Content-Length over the limit is refused before the body is read", async () => {
    const transport = transportFor(server, { limits: { maxResponseBytes: 1024 * 1024 } });
    const e = await failure(transport.fetch(request(`${server.origin}/endless?declare`)));
    expect(e).toEqual({ type: "limit", message: `limit: maxResponseBytes (1048576 bytes) exceeded: Content-Length is ${256 * 1024 * 1024}` });
    await server.socketClosed(server.requests.length - 1);
    expect(streamed).toBeLessThan(64 * 1024 * 1024);
  });

  test("a streamed body is cancelled once it passes the limit: the server sees the socket close", async () => {
    const transport = transportFor(server, { limits: { maxResponseBytes: 1024 * 1024 } });
    const e = await failure(transport.fetch(request(`${server.origin}/endless`)));
    expect(e).toEqual({ type: "limit", message: "limit: maxResponseBytes (1048576 bytes) exceeded while reading the response body" });
    await server.socketClosed(server.requests.length - 1);
    expect(streamed).toBeLessThan(64 * 1024 * 1024); // stopped long before the 256 MiB the server had to send
  });

  test("a body exactly at the limit is accepted", async () => {
    const r = await fetchText(transportFor(server, { limits: { maxResponseBytes: 5000 } }), `${server.origin}/size?n=5000`);
    expect(r.text.length).toBe(5000);
  });
});

describe("responseBodyBudget (the sandbox's memory headroom)", () => {
  test("is checked against Content-Length up front", async () => {
    const e = await failure(transportFor(server).fetch(request(`${server.origin}/size?n=5000`), { responseBodyBudget: () => 1000 }));
    expect(e).toEqual({
      type: "limit",
      message: "limit: memoryBytes: the response body does not fit in the sandbox's free memory (1000 bytes): Content-Length is 5000",
    });
  });

  test("is checked while streaming a body without Content-Length", async () => {
    const e = await failure(transportFor(server).fetch(request(`${server.origin}/size?n=5000&chunked`), { responseBodyBudget: () => 1000 }));
    expect(e.type).toBe("limit");
    expect(e.message).toBe("limit: memoryBytes: the response body does not fit in the sandbox's free memory (1000 bytes) while reading the response body");
  });
});

describe("responseBodyFits (the cheap form of the headroom question)", () => {
  test("is asked once per new size: Content-Length, then not again for the chunks up to it", async () => {
    const asked: number[] = [];
    const r = await transportFor(server).fetch(request(`${server.origin}/size?n=300000`), {
      responseBodyFits: (bytes) => (asked.push(bytes), true),
      responseBodyBudget: () => {
        throw new Error("the budget is only computed for a refusal message");
      },
    });
    expect(r.body.byteLength).toBe(300000);
    expect(asked).toEqual([300000]);
  });

  test("without Content-Length it is asked as the body grows; a no gives the budget in the message", async () => {
    const asked: number[] = [];
    const e = await failure(
      transportFor(server).fetch(request(`${server.origin}/size?n=5000&chunked`), {
        responseBodyFits: (bytes) => (asked.push(bytes), bytes <= 1000),
        responseBodyBudget: () => 1000,
      }),
    );
    expect(e.message).toBe("limit: memoryBytes: the response body does not fit in the sandbox's free memory (1000 bytes) while reading the response body");
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((bytes, i) => i === 0 || bytes > asked[i - 1]!)).toBe(true);
    expect(asked.at(-1)!).toBeGreaterThan(1000);
  });
});

describe("requestTimeoutMs", () => {
  test("a response that never finishes fails with type timeout and its socket is closed", async () => {
    const transport = transportFor(server, { limits: { requestTimeoutMs: 200 } });
    const e = await failure(transport.fetch(request(`${server.origin}/never`)));
    expect(e).toEqual({ type: "timeout", message: "limit: fetchTimeoutMs (200 ms) exceeded" });
    await server.socketClosed(server.requests.length - 1);
  });
});

describe("limits are validated", () => {
  test("a limit that is not a positive integer is a TypeError", () => {
    expect(() => transportFor(server, { limits: { maxFetches: 0 } })).toThrow(/limits.maxFetches must be a positive integer/);
    expect(() => transportFor(server, { limits: { maxResponseBytes: 1.5 } })).toThrow(TypeError);
  });
});
