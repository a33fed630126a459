// Echoes that change the value on the way back, found by a hostile review (2026-12-01):
// a redirect whose Location a bound origin built from a header the script chose (as
// frameworks do with X-Forwarded-Host), where the URL parser lower-cased the host or split
// the value between host and path; an echo with the letter case folded; and a body with a
// transfer coding other than chunked, which undici does not undo. The value must not reach
// the script in any of these forms, and no message may show it.
import net from "node:net";
import zlib from "node:zlib";
import { createSandbox } from "scriptbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startServer, value, type Sandbox, type Server } from "./helpers.js";

/** One letter case only (upper-case hex): a lower-cased echo of it, upper-cased again, is the value. */
const HEX = "9F3A7C1E5B2D8A4C6E0F1B3D5A7C9E2B";
/** base64 with "/": a URL parser puts what comes before it in the host, the rest in the path. */
const B64 = "q8Zx2mP9wL4nR7tB/1yDk3Fh6Jc5Vb0Ns+Ee";
/** With a backslash: a URL parser writes it as "/" in the path of an http(s) URL. */
const SLASHED = "Kq8Zx2mP9wL4nR7t\\B1yDk3Fh6Jc5Vb0N";

let origin: Server; // HEX and B64 are bound to it
let codedEcho: net.Server; // bound to HEX as well: answers with Transfer-Encoding: gzip, chunked
let codedOrigin: string;
let strict: Sandbox; // net.allow lists the bound origins only
let open: Sandbox; // net.allow has "*" as well

beforeAll(async () => {
  origin = await startServer((req, res) => {
    const url = new URL(req.url!, "http://x");
    if (url.pathname === "/redirect") {
      // What Rails does by default, and Express or Django behind a proxy.
      res.writeHead(301, { location: `http://${String(req.headers["x-forwarded-host"])}/docs/` });
      return res.end();
    }
    if (url.pathname === "/redirect-lower") {
      res.writeHead(302, { location: `http://${String(req.headers["x-forwarded-host"]).toLowerCase()}/docs/` });
      return res.end();
    }
    if (url.pathname === "/same-origin") {
      // A redirect to the bound origin itself, its path made of a header the script chose.
      res.writeHead(302, { location: `/docs/${String(req.headers["x-next"])}` });
      return res.end();
    }
    if (url.pathname.startsWith("/docs/")) return res.end("docs");
    if (url.pathname === "/lower") return res.end(`you sent: ${String(req.headers["x-key"]).toLowerCase()} (end)`);
    res.end("ok");
  });
  codedEcho = net.createServer((socket) => {
    let head = "";
    socket.on("data", (data) => {
      head += data.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      const echoed = Buffer.from(head.split("\r\n\r\n")[0]!, "latin1"); // the request head, echoed
      if (head.startsWith("GET /twice")) {
        // Chunked twice: undici undoes one layer; the inner chunks (3 bytes each) cut the value.
        let inner = "";
        for (let i = 0; i < echoed.length; i += 3) inner += `3\r\n${echoed.subarray(i, i + 3).toString("latin1")}\r\n`;
        inner += "0\r\n\r\n";
        const outer = Buffer.from(inner, "latin1");
        socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\nConnection: close\r\n\r\n${outer.length.toString(16)}\r\n`), outer, Buffer.from("\r\n0\r\n\r\n")]));
        return;
      }
      const body = zlib.gzipSync(echoed);
      socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n0\r\n\r\n")]));
    });
  });
  await new Promise<void>((resolve) => codedEcho.listen(0, "127.0.0.1", resolve));
  const codedPort = (codedEcho.address() as net.AddressInfo).port;
  codedOrigin = `http://127.0.0.1:${codedPort}`;
  const secrets = { HEX: { value: HEX, origins: [origin.origin, codedOrigin] }, B64: { value: B64, origins: [origin.origin] }, SLASHED: { value: SLASHED, origins: [origin.origin] } };
  strict = await createSandbox({ net: { allow: [`127.0.0.1:${origin.port}`, `127.0.0.1:${codedPort}`] }, secrets });
  open = await createSandbox({ net: { allow: [`127.0.0.1:${origin.port}`, `127.0.0.1:${codedPort}`, "*"] }, secrets });
});
afterAll(async () => {
  await strict?.dispose();
  await open?.dispose();
  await origin?.close();
  await new Promise((resolve) => codedEcho?.close(resolve));
});

/** Every form of the value a folding or splitting server can show: each case, each part around "/". */
function showsValue(text: string): boolean {
  const lower = text.toLowerCase();
  const parts = [HEX, ...B64.split("/")].map((part) => part.toLowerCase());
  return parts.some((part) => lower.includes(part));
}

describe("a redirect whose Location the bound origin built from a header the script chose", () => {
  test.each([
    ["net.allow without *", () => strict],
    ["net.allow with *", () => open],
  ])("is refused before it is followed, and the refusal shows the value in no letter case (%s)", async (_, sandbox) => {
    const requestsBefore = origin.requests.length;
    const messages = (await value(
      sandbox(),
      `const out = [];
       for (const name of ["HEX", "B64"]) {
         try {
           await fetch(input.origin + "/redirect", { headers: { authorization: "Bearer " + secret(name), "x-forwarded-host": secret(name) + ".evil.test" } });
           out.push("followed");
         } catch (error) {
           out.push(error.name + ": " + error.message + " / " + String(error.cause?.message));
         }
       }
       return out;`,
      { origin: origin.origin },
    )) as string[];
    expect(messages).toHaveLength(2);
    for (const message of messages) {
      expect(message).toMatch(/^TypeError: /);
      expect(message).toContain("a redirect's Location carries its value; it may only be sent to");
      expect(showsValue(message)).toBe(false);
    }
    // Each request reached the bound origin once; nothing was sent to where the redirect pointed.
    expect(origin.requests.length - requestsBefore).toBe(2);
  });

  test("with redirect: \"manual\" the script gets the Location redacted, lower-cased as it came back", async () => {
    const location = await value(
      strict,
      `const response = await fetch(input.origin + "/redirect-lower", { redirect: "manual", headers: { "x-forwarded-host": secret("HEX") } });
       return response.headers.get("location");`,
      { origin: origin.origin },
    );
    expect(showsValue(String(location))).toBe(false);
    expect(location).toMatch(/^http:\/\/scriptbox-secret\.HEX\.[^/]+\/docs\/$/);
  });
});

test("a value with a backslash, echoed into a redirect's path on its own origin, does not reach response.url with the backslash made a slash", async () => {
  const url = String(
    await value(strict, `return (await fetch(input.origin + "/same-origin", { headers: { "x-next": secret("SLASHED") } })).url;`, { origin: origin.origin }),
  );
  expect(url).not.toContain(SLASHED.replace("\\", "/"));
  expect(url).not.toContain(SLASHED);
  expect(url).toMatch(/\/docs\/scriptbox-secret\.SLASHED\./);
});

test("an echo of the value with its letter case folded is redacted like the value itself", async () => {
  const seen = (await value(
    strict,
    `const placeholder = secret("HEX");
     const text = await (await fetch(input.origin + "/lower", { headers: { "x-key": placeholder } })).text();
     return { text, placeholder };`,
    { origin: origin.origin },
  )) as { text: string; placeholder: string };
  expect(showsValue(seen.text)).toBe(false);
  expect(seen.text).toBe(`you sent: ${seen.placeholder} (end)`);
});

test("a body with a transfer coding other than chunked fails the fetch when a secret was carried, instead of reaching the script unread", async () => {
  const outcome = await value(
    strict,
    `try {
       const response = await fetch(input.coded, { headers: { authorization: "Bearer " + secret("HEX") } });
       return Array.from(new Uint8Array(await response.arrayBuffer()));
     } catch (error) {
       return error.name + ": " + error.message;
     }`,
    { coded: codedOrigin },
  );
  expect(outcome).toBe(
    "TypeError: fetch failed: cannot decode the response body: the request carried a secret and the body has a transfer coding other than chunked, which the transport does not decode, so it cannot be checked for the secret",
  );
  // Chunked twice is refused the same way (undici undoes one layer).
  const twice = await value(
    strict,
    `try { return (await (await fetch(input.coded + "/twice", { headers: { authorization: "Bearer " + secret("HEX") } })).text()).length } catch (error) { return error.message }`,
    { coded: codedOrigin },
  );
  expect(twice).toMatch(/transfer coding other than chunked/);
  // Without a secret the body is passed through as it came (the script gets the coded bytes).
  const plain = await value(strict, `return (await (await fetch(input.coded)).arrayBuffer()).byteLength`, { coded: codedOrigin });
  expect(plain).toBeGreaterThan(0);
});
