// Bounded substitution: the host checks the size a request's headers will have with secrets
// substituted before it expands any, so a header made of ~21k placeholders for a 4 KiB
// secret (88 MB once expanded) is refused at no cost, even six at once. And a placeholder
// is never substituted into a header name, whatever its letter case.
import { randomBytes } from "node:crypto";
import { createSandbox } from "scriptbox";
import { afterAll, beforeAll, expect, test } from "vitest";
import { reflect, startServer, value, type Sandbox, type Server } from "./helpers.js";

const BIG = randomBytes(3072).toString("base64"); // 4 KiB
let reflector: Server;
let sandbox: Sandbox;

beforeAll(async () => {
  reflector = await startServer(reflect);
  sandbox = await createSandbox({
    net: { allow: [`127.0.0.1:${reflector.port}`] },
    secrets: { BIG: { value: BIG, origins: [reflector.origin] } },
  });
});
afterAll(async () => {
  await sandbox?.dispose();
  await reflector?.close();
});

test("~21k placeholders of a 4 KiB secret in one header, 6 fetches at once: all refused before anything is expanded or sent; host memory stays flat", async () => {
  // Warm up first, so the baseline includes the worker and a normal fetch.
  await value(sandbox, `await (await fetch(input.origin + "/body/raw", { headers: { "x-key": secret("BIG") } })).text(); return 1;`, { origin: reflector.origin });
  const sent = reflector.requests.length;
  const peakBefore = process.resourceUsage().maxRSS * 1024;
  const seen = await value<{ length: number; results: { name: string; message: string }[] }>(
    sandbox,
    `const header = Array(21000).fill(secret("BIG")).join(",");
     const attempt = () => fetch(input.origin + "/body/raw", { headers: { "x-key": header } }).then(() => ({ name: "sent" }), (e) => ({ name: e.name, message: e.message }));
     const results = await Promise.all([attempt(), attempt(), attempt(), attempt(), attempt(), attempt()]);
     return { length: header.length, results };`,
    { origin: reflector.origin },
  );
  const grown = process.resourceUsage().maxRSS * 1024 - peakBefore;
  console.log(`host peak RSS grew by ${(grown / 1048576).toFixed(1)} MiB; results: ${JSON.stringify(seen.results.map((r) => r.name))}`);
  expect(seen.length).toBeGreaterThan(21000 * 40); // ~1 MB of placeholders: 88 MB once expanded
  for (const result of seen.results) {
    expect(result).toEqual({
      name: "TypeError",
      message: "limit: maxRequestHeaderBytes (65536 bytes) exceeded: the request's header fields, with secrets substituted, are larger",
    });
  }
  expect(reflector.requests.length).toBe(sent);
  // Expanding would take 6 x 88 MB; the guest's own 1 MB string and its copies are all that moves.
  expect(grown).toBeLessThan(64 * 1024 * 1024);
});

test("maxRequestHeaderBytes counts the substituted size: under the limit as written, over it once expanded", async () => {
  // 40 placeholders (~1.6 KB as written) become 40 x 4 KiB = 160 KiB.
  const seen = await value(
    sandbox,
    `try { await fetch(input.origin + "/body/raw", { headers: { "x-key": Array(40).fill(secret("BIG")).join(",") } }); return "sent"; }
     catch (e) { return e.message; }`,
    { origin: reflector.origin },
  );
  expect(seen).toMatch(/^limit: maxRequestHeaderBytes \(65536 bytes\) exceeded/);
});

test("maxRequestHeaders: more header fields than the limit are refused before they are read", async () => {
  const before = reflector.requests.length;
  const seen = await value(
    sandbox,
    `const headers = new Headers();
     for (let i = 0; i < 200; i++) headers.append("x-h" + i, "1");
     try { await fetch(input.origin + "/body/raw", { headers }); return "sent"; } catch (e) { return e.message; }`,
    { origin: reflector.origin },
  );
  expect(seen).toBe("limit: maxRequestHeaders (128) exceeded: the request has 200 header fields");
  expect(reflector.requests.length).toBe(before);
});

test("a placeholder as a header name is refused (the guest's Headers lower-cases names; the check ignores case)", async () => {
  const before = reflector.requests.length;
  const seen = await value(
    sandbox,
    `try { await fetch(input.origin + "/body/raw", { headers: { [secret("BIG")]: "1" } }); return "sent"; } catch (e) { return e.message; }`,
    { origin: reflector.origin },
  );
  expect(seen).toBe('network policy: secret "BIG" refused: its placeholder is in a header name; secrets are only substituted in header values');
  expect(reflector.requests.length).toBe(before);
});
