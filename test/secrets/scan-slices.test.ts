// A response to a request that carried a secret is scanned for the value before the script
// gets it, and a body built to be slow to scan (escapes a script made a bound origin echo:
// ~0.3-0.5 µs per byte) took seconds of the worker's thread in one go, during which every
// other sandbox on that worker waited (found by review). The scan now runs in slices with
// the worker's event loop served between them: the same redaction, and a neighbour served
// while it runs.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { configurePool, createSandbox } from "scriptbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SecretStore } from "../../host/fetch/secrets.js";

const VALUE = "s3cr3tVALUEZq8xK2mP9wL4nR7tB1yDq";
const escaped = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16)}`).join("");

describe("redactBytesInSlices", () => {
  const store = new SecretStore({ K: { value: VALUE, origins: ["http://127.0.0.1:1"] } });
  const carried = new Set(store.substitution([["x", store.placeholder("K")]], "http://127.0.0.1:1").carried);

  test("finds what one pass finds, echoes across slice boundaries included, and yields between slices", async () => {
    // Echoes at and around every 32 KiB boundary, raw and escaped, in 200 KiB of filler.
    const parts: string[] = [];
    let length = 0;
    const echoes = [VALUE, escaped(VALUE), Buffer.from(VALUE).toString("base64")];
    for (let i = 0; length < 200 * 1024; i++) {
      const boundary = 32 * 1024 * (Math.floor(length / (32 * 1024)) + 1);
      const filler = "x".repeat(Math.max(1, boundary - length - 7 - (i % 3) * 5));
      const echo = echoes[i % echoes.length]!;
      parts.push(filler, echo);
      length += filler.length + echo.length;
    }
    const body = Buffer.from(parts.join(""), "latin1");
    const whole = store.redactBytes(body, carried);
    let yields = 0;
    const sliced = await store.redactBytesInSlices(body, carried, async () => void yields++);
    expect(Buffer.from(sliced).toString("latin1")).toBe(Buffer.from(whole).toString("latin1"));
    expect(Buffer.from(sliced).toString("latin1")).not.toContain(VALUE);
    expect(Buffer.from(sliced).toString("latin1").split(store.placeholder("K")).length - 1).toBe(parts.length / 2);
    expect(yields).toBe(Math.ceil(body.length / (32 * 1024)) - 1);
    // Nothing to find: the same array back, as from redactBytes.
    const plain = Buffer.alloc(100 * 1024, 0x61);
    expect(await store.redactBytesInSlices(plain, carried, async () => undefined)).toBe(plain);
  });

  test("stops when `between` throws (the fetch was cancelled), without scanning the rest", async () => {
    const body = Buffer.alloc(1024 * 1024, 0x61);
    let calls = 0;
    await expect(
      store.redactBytesInSlices(body, carried, async () => {
        if (++calls === 2) throw new Error("cancelled");
      }),
    ).rejects.toThrow("cancelled");
    expect(calls).toBe(2);
  });
});

describe("a slow-to-scan response on a shared worker", () => {
  let server: http.Server;
  let origin = "";
  let responded: () => void = () => undefined;
  beforeAll(async () => {
    // One shared worker: the fetching sandbox and its neighbour share its thread.
    configurePool({ sharedWorkers: 1 });
    const unit = `${escaped(VALUE.slice(0, 12))},`;
    const body = Buffer.from(unit.repeat(Math.floor((6 * 1024 * 1024) / unit.length)));
    server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": body.length });
      res.end(body, () => responded());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test("leaves the worker to its neighbour between slices: the neighbour's run ends before the scanned fetch does", async () => {
    const fetching = await createSandbox({
      net: { allow: [origin.slice("http://".length)] },
      secrets: { K: { value: VALUE, origins: [origin] } },
      limits: { wallTimeMs: 60_000, cpuTimeMs: 60_000 },
    });
    const neighbour = await createSandbox();
    try {
      expect((await neighbour.run("export default () => 'warm'")).ok).toBe(true);
      const order: string[] = [];
      const sent = new Promise<void>((resolve) => (responded = resolve));
      const fetched = fetching
        .run(`import { secret } from "runtime"; export default async () => (await (await fetch(${JSON.stringify(origin)}, { headers: { authorization: secret("K") } })).arrayBuffer()).byteLength`)
        .then((result) => (order.push("fetch"), result));
      // The body is on its way: the worker is receiving it, then scanning it (~2 s in one go).
      await sent;
      await new Promise((resolve) => setTimeout(resolve, 100));
      const neighbourRun = neighbour.run("export default () => 'served'").then((result) => (order.push("neighbour"), result));
      const [fetchResult, neighbourResult] = await Promise.all([fetched, neighbourRun]);
      expect(fetchResult.ok && typeof fetchResult.value).toBe("number");
      expect(neighbourResult.ok && neighbourResult.value).toBe("served");
      expect(order).toEqual(["neighbour", "fetch"]);
    } finally {
      await fetching.dispose();
      await neighbour.dispose();
    }
  }, 60_000);
});
