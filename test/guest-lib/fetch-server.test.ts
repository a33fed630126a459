// fetch() from the guest against a real node:http server on 127.0.0.1 (guest half of the
// fetch flow: request record, body bytes, response and error mapping, abort).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSandbox } from "scriptbox";
import { guest } from "./run.js";

let server: Server;
let origin = "";
let allow: { allow: string[] };
let slowClosed: Promise<void>;
let markSlowClosed: () => void;
let requestsSeen = 0;

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** /stalls ids whose half body the client has read, and who waits for one. */
const halfSent = Object.assign(
  (id: string) => {
    halfSentIds.add(id);
    halfSentWaiters.get(id)?.();
  },
  {
    wait: (id: string) => (halfSentIds.has(id) ? Promise.resolve() : new Promise<void>((resolve) => halfSentWaiters.set(id, resolve))),
  },
);
const halfSentIds = new Set<string>();
const halfSentWaiters = new Map<string, () => void>();

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (url.pathname === "/echo") {
    const body = await readBody(req);
    res.setHeader("content-type", req.headers["content-type"] ?? "application/octet-stream");
    res.setHeader("x-method", req.method ?? "");
    res.setHeader("x-headers", JSON.stringify(req.headers));
    res.setHeader("set-cookie", ["a=1; Path=/", "b=2"]);
    res.end(body);
  } else if (url.pathname.startsWith("/redirect/")) {
    res.statusCode = Number(url.pathname.slice(10));
    res.setHeader("location", "/echo");
    res.end();
  } else if (url.pathname === "/slow") {
    res.writeHead(200, { "content-type": "text/plain" });
    res.write("partial");
    req.socket.on("close", () => markSlowClosed());
  } else if (url.pathname === "/big") {
    const size = Number(url.searchParams.get("n"));
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    if (url.searchParams.has("chunked")) res.writeHead(200, { "content-type": "application/octet-stream" });
    else res.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
    for (let sent = 0; sent < size; sent += chunk.length) res.write(chunk.subarray(0, Math.min(chunk.length, size - sent)));
    res.end();
  } else if (url.pathname === "/pattern" || url.pathname === "/stalls") {
    // Byte i is i % 251 (a misplaced chunk shows); /stalls sends half of what it declares, then waits.
    const size = Number(url.searchParams.get("n"));
    const body = Buffer.alloc(size);
    for (let i = 0; i < size; i++) body[i] = i % 251;
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
    if (url.pathname === "/pattern") return void res.end(body);
    // Megabytes do not fit in the socket buffers: the write completes once the client has read most of them.
    const id = url.searchParams.get("id")!;
    res.write(body.subarray(0, size >> 1), () => halfSent(id));
  } else if (url.pathname === "/half-sent") {
    // Answers once /stalls?id=… has had half its body taken by the client.
    await halfSent.wait(url.searchParams.get("id")!);
    res.end("sent");
  } else if (url.pathname === "/headers") {
    res.setHeader("Content-Type", "text/csv; Charset=UTF-8");
    res.setHeader("X-Mixed-Case", "kept as sent");
    res.setHeader("set-cookie", ["one=1", "two=2"]);
    res.end("a,b\n1,2\n");
  } else if (url.pathname === "/status") {
    res.statusCode = 418;
    res.statusMessage = "Teapot Here";
    res.end("short and stout");
  } else {
    res.statusCode = 404;
    res.end();
  }
}

beforeAll(async () => {
  slowClosed = new Promise((resolve) => (markSlowClosed = resolve));
  server = createServer((req, res) => {
    requestsSeen++;
    void handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  origin = `http://127.0.0.1:${port}`;
  allow = { allow: [`127.0.0.1:${port}`] };
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("network failures say what happened (issue 13 §5)", () => {
  test("a refused connection: TypeError 'fetch failed: connect ECONNREFUSED …', the bare reason as cause, the stack at the fetch() call", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const v = await guest<Record<string, unknown>>(
      `try { await fetch("http://127.0.0.1:${port}/"); return "no error"; }
      catch (e) { return { name: e.name, isTypeError: e instanceof TypeError, message: e.message, cause: e.cause instanceof Error && e.cause.message, stack: e.stack }; }`,
      { net: { allow: [`127.0.0.1:${port}`] } },
    );
    expect(v).toMatchObject({
      name: "TypeError",
      isTypeError: true,
      message: `fetch failed: connect ECONNREFUSED 127.0.0.1:${port}`,
      cause: `connect ECONNREFUSED 127.0.0.1:${port}`,
    });
    // The guest test wraps the body in a default function: its frame is the fetch() caller.
    expect(v.stack).toMatch(new RegExp(`^TypeError: fetch failed: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\n\\s+at .*guest-test\\.js:2:`));
    expect(v.stack).not.toContain("scriptbox:");
  });

  test("an aborted fetch still rejects with the signal's reason, untouched", async () => {
    const v = await guest<unknown[]>(
      `const c = new AbortController(); const reason = new Error("my reason");
      const p = fetch("${origin}/echo", { signal: c.signal }); c.abort(reason);
      try { await p; } catch (e) { return [e === reason, e.message]; }`,
      { net: allow },
    );
    expect(v).toEqual([true, "my reason"]);
  });
});

describe("fetch against a local server", () => {
  test("Fetch §5.6: status, statusText, headers (Set-Cookie kept apart), url, a text body round trip, a relative URL against location", async () => {
    const v = await guest<unknown[]>(
      `const r = await fetch("${origin}/echo", { method: "POST", body: "héllo", headers: { "X-Custom": "1" } });
      const sent = JSON.parse(r.headers.get("x-headers"));
      const teapot = await fetch("/status");
      return [r.status, r.statusText, r.ok, r.type, r.url, r.redirected, await r.text(), r.headers.get("x-method"), r.headers.getSetCookie(),
        sent["x-custom"], sent["content-type"], teapot.status, teapot.statusText, teapot.ok, await teapot.text(),
        (() => { try { r.headers.set("a", "b"); return "mutable"; } catch (e) { return e.name; } })()];`,
      { net: allow, location: `${origin}/page` },
    );
    expect(v).toEqual([200, "OK", true, "basic", `${origin}/echo`, false, "héllo", "POST", ["a=1; Path=/", "b=2"], "1", "text/plain;charset=UTF-8",
      418, "Teapot Here", false, "short and stout", "TypeError"]);
  });

  test("Fetch §4.4 redirects: followed by the host, redirected and the final url set; 303 turns POST into GET", async () => {
    const v = await guest<unknown[]>(
      `const out = [];
      for (const status of [301, 302, 303, 307, 308]) {
        const r = await fetch("${origin}/redirect/" + status, { method: "POST", body: "b" });
        out.push([status, r.status, r.redirected, r.url, r.headers.get("x-method")]);
      }
      const manual = await fetch("${origin}/redirect/302", { redirect: "manual" });
      out.push([manual.status, manual.redirected]);
      return out;`,
      { net: allow },
    );
    const final = `${origin}/echo`;
    expect(v.slice(0, 5)).toEqual([
      [301, 200, true, final, "GET"],
      [302, 200, true, final, "GET"],
      [303, 200, true, final, "GET"],
      [307, 200, true, final, "POST"],
      [308, 200, true, final, "POST"],
    ]);
    expect(v[5]).toEqual([302, false]);
  });

  test("bodies cross as bytes: a 256 KiB binary body and a FormData upload come back intact", async () => {
    const v = await guest<unknown[]>(
      `const sent = new Uint8Array(256 * 1024);
      for (let i = 0; i < sent.length; i++) sent[i] = (i * 7 + (i >> 8)) & 255;
      const r = await fetch("${origin}/echo", { method: "PUT", body: sent });
      const got = new Uint8Array(await r.arrayBuffer());
      let same = got.length === sent.length;
      for (let i = 0; same && i < got.length; i++) same = got[i] === sent[i];
      const fd = new FormData();
      fd.append("field", "välue");
      fd.append("upload", new File([sent.subarray(0, 1000)], "data.bin", { type: "application/x-test" }));
      const echoed = await fetch("${origin}/echo", { method: "POST", body: fd });
      const back = await echoed.formData();
      const file = back.get("upload");
      const fileBytes = new Uint8Array(await file.arrayBuffer());
      let fileSame = fileBytes.length === 1000;
      for (let i = 0; fileSame && i < 1000; i++) fileSame = fileBytes[i] === sent[i];
      return [got.length, same, back.get("field"), file.name, file.type, fileSame];`,
      { net: allow },
    );
    expect(v).toEqual([256 * 1024, true, "välue", "data.bin", "application/x-test", true]);
  });

  test("Fetch §5.6 abort: aborting in the middle of a slow response rejects with the signal's reason and closes the socket", async () => {
    const v = await guest<unknown[]>(
      `const c = new AbortController();
      setTimeout(() => c.abort(), 150);
      let first;
      try { await fetch("${origin}/slow", { signal: c.signal }); first = "resolved"; } catch (e) { first = [e.name, e instanceof DOMException]; }
      const c2 = new AbortController();
      setTimeout(() => c2.abort(new Error("custom reason")), 50);
      let second;
      try { await fetch("${origin}/slow", { signal: c2.signal }); second = "resolved"; } catch (e) { second = e.message; }
      return [first, second];`,
      { net: allow },
    );
    expect(v).toEqual([["AbortError", true], "custom reason"]);
    await slowClosed; // the host cancelled the request and closed its socket
  });

  test("Fetch §5.2 header injection attempts fail in the guest before anything reaches the wire", async () => {
    const v = await guest<unknown[]>(
      `const tries = [{ "x-a": "1\\r\\nInjected: yes" }, { "x-a\\r\\nInjected": "yes" }, { "x-a": "1\\nInjected: yes" }, { "x-a": "nul\\0" }, [["bad name", "v"]]];
      const out = [];
      for (const headers of tries) { try { await fetch("${origin}/echo", { headers }); out.push("sent"); } catch (e) { out.push(e.name); } }
      try { await fetch("${origin}/echo", { method: "GET\\r\\nX: y" }); out.push("sent"); } catch (e) { out.push(e.name); }
      return out;`,
      { net: allow },
    );
    expect(v).toEqual(Array(6).fill("TypeError"));
  });

  test("Fetch §5.6 fetch(url): the host applies the Request constructor's URL rules to a plain string", async () => {
    const hits = requestsSeen;
    const v = await guest<unknown[]>(
      `const reason = async (p) => { try { const r = await p; return "resolved " + r.url; } catch (e) { return e.name + ": " + e.message; } };
      const port = new URL("${origin}").port;
      return [
        await reason(fetch("http://user:pw@127.0.0.1:" + port + "/echo")),
        await reason(fetch("http://[::1")),
        await reason(fetch("echo#fragment")),
        await reason(fetch("  ${origin}/echo?q=1#frag  ")),
        await reason(fetch("HTTP://127.0.0.1:" + port + "/./a/../echo")),
        await reason(fetch("mailto:a@b.test")),
        await reason(fetch("http://127.0.0.1:6000/")),
        await (await fetch(" DATA:,hi%20there#frag")).text(),
        (await fetch(new Request("data:text/plain,x#f"))).url,
      ];`,
      { net: allow, location: `${origin}/base/` },
    );
    expect(v).toEqual([
      `TypeError: Request: the URL "http://user:pw@127.0.0.1:${new URL(origin).port}/echo" includes credentials`,
      'TypeError: Request: invalid URL "http://[::1"',
      `resolved ${origin}/base/echo`,
      `resolved ${origin}/echo?q=1`,
      `resolved ${origin}/echo`,
      "TypeError: fetch: the mailto: scheme is not supported (only http:, https: and data:)",
      "TypeError: fetch: port 6000 is blocked (Fetch §2.9 bad ports)",
      "hi there",
      "data:text/plain,x",
    ]);
    // The credentials, scheme and port refusals never reached the server: only the three fetches that resolved did.
    expect(requestsSeen - hits).toBe(3);
    const noLocation = await guest<string>(`try { await fetch("/x"); return "resolved"; } catch (e) { return e.name + ": " + e.message; }`, {
      net: allow,
      location: null,
    });
    expect(noLocation).toBe(`TypeError: Request: relative URL "/x" needs the sandbox's location option`);
  });

  test("Fetch §5.5 Response headers of a fetched response: read before or after the body, cloned, lower-cased, Set-Cookie apart, the type of blob()", async () => {
    const v = await guest<unknown[]>(
      `const a = await fetch("${origin}/headers");
      const text = await a.text();
      const afterBody = [...a.headers];
      const b = await fetch("${origin}/headers");
      const blobType = (await b.clone().blob()).type;
      const c = b.clone();
      const fromClone = [c.headers.get("x-mixed-case"), c.headers.getSetCookie()];
      const d = await fetch("${origin}/headers");
      return [text, afterBody.filter(([n]) => n !== "date" && n !== "connection" && n !== "keep-alive" && n !== "content-length"), blobType, fromClone,
        d.headers === d.headers, (() => { try { d.headers.append("x", "y"); return "mutable"; } catch (e) { return e.name; } })()];`,
      { net: allow },
    );
    expect(v).toEqual([
      "a,b\n1,2\n",
      [["content-type", "text/csv; Charset=UTF-8"], ["set-cookie", "one=1"], ["set-cookie", "two=2"], ["x-mixed-case", "kept as sent"]],
      "text/csv;charset=UTF-8",
      ["kept as sent", ["one=1", "two=2"]],
      true,
      "TypeError",
    ]);
  });

  test("a body larger than the sandbox's free memory fails the fetch cleanly (a limit TypeError), with or without Content-Length; the sandbox keeps working", async () => {
    const sandbox = await createSandbox({ net: allow, limits: { memoryBytes: 24 * 1024 * 1024, maxResponseBytes: 64 * 1024 * 1024 } });
    try {
      const script = `export default async (path) => {
        try { const r = await fetch(${JSON.stringify(origin)} + path); return "read " + (await r.arrayBuffer()).byteLength; }
        catch (e) { return e.name + ": " + e.message; }
      };`;
      const declared = await sandbox.run(script, { input: "/big?n=" + 40 * 1024 * 1024 });
      expect(declared.ok && declared.value).toMatch(
        /^TypeError: limit: memoryBytes: the response body does not fit in the sandbox's free memory \(\d+ bytes\): Content-Length is 41943040$/,
      );
      const streamed = await sandbox.run(script, { input: "/big?chunked&n=" + 40 * 1024 * 1024 });
      expect(streamed.ok && streamed.value).toMatch(/^TypeError: limit: memoryBytes: the response body does not fit in the sandbox's free memory \(\d+ bytes\) while reading the response body$/);
      const small = await sandbox.run(script, { input: "/big?n=" + 2 * 1024 * 1024 });
      expect(small.ok && small.value).toBe("read 2097152");
    } finally {
      await sandbox.dispose();
    }
  });

  test("bodies written into the guest heap as they arrive (issue 12): aborted or cut short by the run's end, their memory is freed; whole, they arrive byte for byte", async () => {
    // 8 MiB declared per fetch in a 48 MiB sandbox: a block kept after an abort would make
    // a later fetch fail the headroom check, or run the sandbox out of memory.
    const sandbox = await createSandbox({ net: allow, limits: { memoryBytes: 48 * 1024 * 1024, maxResponseBytes: 64 * 1024 * 1024 } });
    const n = 8 * 1024 * 1024;
    try {
      const aborted = await sandbox.run(
        `export default async () => {
          const out = [];
          for (let i = 0; i < 8; i++) {
            const c = new AbortController();
            const id = "a" + i;
            const body = fetch(${JSON.stringify(origin)} + "/stalls?n=${n}&id=" + id, { signal: c.signal });
            await (await fetch(${JSON.stringify(origin)} + "/half-sent?id=" + id)).text();
            c.abort(new Error("enough"));
            try { await body; out.push("resolved"); } catch (e) { out.push(e.message); }
          }
          return out;
        };`,
      );
      expect(aborted).toMatchObject({ ok: true, value: Array(8).fill("enough") });
      for (let i = 0; i < 3; i++) {
        // The embedder ends the run while the body is half in.
        const stop = new AbortController();
        void halfSent.wait(`r${i}`).then(() => setTimeout(() => stop.abort(), 20));
        const ended = await sandbox.run(`export default () => fetch(${JSON.stringify(origin)} + "/stalls?n=${n}&id=r${i}").then(() => "resolved");`, { signal: stop.signal });
        expect(ended.ok).toBe(false);
      }
      const whole = await sandbox.run(
        `export default async () => {
          const results = [];
          for (let i = 0; i < 3; i++) {
            const bytes = new Uint8Array(await (await fetch(${JSON.stringify(origin)} + "/pattern?n=${n}")).arrayBuffer());
            let wrong = 0;
            for (let j = 0; j < bytes.length; j += 4093) if (bytes[j] !== j % 251) wrong++;
            for (let j = bytes.length - 70000; j < bytes.length; j++) if (bytes[j] !== j % 251) wrong++;
            results.push([bytes.length, wrong]);
          }
          const text = await (await fetch(${JSON.stringify(origin)} + "/pattern?n=300")).text();
          const json = await (await fetch(${JSON.stringify(origin)} + "/echo", { method: "POST", body: JSON.stringify({ a: [1, "é"] }) })).json();
          const blob = await (await fetch(${JSON.stringify(origin)} + "/pattern?n=1000")).blob();
          return [results, text.length, json, blob.size, new Uint8Array(await blob.arrayBuffer())[999]];
        };`,
      );
      expect(whole.ok ? null : whole.error).toBeNull();
      expect(whole).toMatchObject({ ok: true, value: [Array(3).fill([n, 0]), 300, { a: [1, "é"] }, 1000, 999 % 251] });
    } finally {
      await sandbox.dispose();
    }
  });

  test("a loop of large reads does not fill the heap: a read body lets go of its bytes (issue 12)", async () => {
    // 24 x 4 MiB through a 48 MiB heap: each body must be freed when the script drops it,
    // not at some later cycle collection (which the bytes' blocks do not trigger).
    const sandbox = await createSandbox({ net: allow, limits: { memoryBytes: 48 * 1024 * 1024, maxResponseBytes: 64 * 1024 * 1024 } });
    try {
      const result = await sandbox.run(
        `export default async () => {
          let bytes = 0;
          for (let i = 0; i < 24; i++) {
            const r = await fetch(${JSON.stringify(origin)} + "/big?n=${4 * 1024 * 1024}");
            bytes += i % 4 === 0 ? (await r.text()).length : i % 4 === 1 ? (await r.blob()).size : (await r.arrayBuffer()).byteLength;
          }
          return bytes;
        };`,
      );
      expect(result.ok ? result.value : result.error).toBe(24 * 4 * 1024 * 1024);
    } finally {
      await sandbox.dispose();
    }
  });

  test("a host the network policy does not allow is a TypeError starting with 'network policy:'", async () => {
    const v = await guest<string>(`try { await fetch("${origin}/echo"); return "sent"; } catch (e) { return e.name + ": " + e.message; }`);
    expect(v).toMatch(/^TypeError: network policy: /);
  });
});
