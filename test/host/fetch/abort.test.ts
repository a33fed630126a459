import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { failure, fetchText, request, startServer, transportFor, type TestServer } from "./helpers.js";

let server: TestServer;
let firstChunkSent: () => void = () => {};
let held: (() => void)[] = [];

beforeAll(async () => {
  server = await startServer((req, res) => {
    if (req.url === "/slow") {
      // Half a body, then nothing until the client goes away.
      res.writeHead(200, { "content-length": 1_000_000 });
      res.write(Buffer.alloc(1000), () => firstChunkSent());
      return;
    }
    if (req.url === "/hold") {
      held.push(() => res.end("released"));
      return;
    }
    res.end("ok");
  });
});
afterAll(() => server.close());

describe("abort (WHATWG Fetch 4.1 main fetch, abort the fetch controller)", () => {
  test("aborting in the middle of a slow response rejects with type abort and the server sees the socket close", async () => {
    const transport = transportFor(server);
    const controller = new AbortController();
    const sent = new Promise<void>((resolve) => (firstChunkSent = resolve));
    const pending = transport.fetch(request(`${server.origin}/slow`), { signal: controller.signal });
    await sent;
    const index = server.requests.length - 1;
    controller.abort();
    expect(await failure(pending)).toEqual({ type: "abort", message: "fetch aborted" });
    await server.socketClosed(index);
    expect((await fetchText(transport, `${server.origin}/after`)).text).toBe("ok"); // the transport still works
  });

  test("an already-aborted signal fails without contacting the server", async () => {
    const before = server.requests.length;
    const e = await failure(transportFor(server).fetch(request(`${server.origin}/x`), { signal: AbortSignal.abort() }));
    expect(e.type).toBe("abort");
    expect(server.requests.length).toBe(before);
  });

  test("a fetch aborted while waiting for a concurrency slot leaves the queue and gives no slot away", async () => {
    const transport = transportFor(server, { limits: { maxConcurrentFetches: 1 } });
    held = [];
    const first = fetchText(transport, `${server.origin}/hold`);
    for (let i = 0; i < 200 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const controller = new AbortController();
    const waiting = transport.fetch(request(`${server.origin}/never-sent`), { signal: controller.signal });
    controller.abort();
    expect((await failure(waiting)).type).toBe("abort");
    expect(server.requests.some((r) => r.url === "/never-sent")).toBe(false);
    held.shift()!();
    expect((await first).text).toBe("released");
    expect((await fetchText(transport, `${server.origin}/next`)).text).toBe("ok");
  });

  test("abortAll() cancels fetches in flight and waiting (the run ended)", async () => {
    const transport = transportFor(server, { limits: { maxConcurrentFetches: 1 } });
    held = [];
    const inFlight = transport.fetch(request(`${server.origin}/hold`));
    const queued = transport.fetch(request(`${server.origin}/hold`));
    for (let i = 0; i < 200 && held.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const index = server.requests.length - 1;
    transport.abortAll();
    expect(await failure(inFlight)).toEqual({ type: "abort", message: "fetch aborted: the run ended" });
    expect((await failure(queued)).type).toBe("abort");
    await server.socketClosed(index);
    expect(held.length).toBe(1); // the queued one never reached the server
  });
});
