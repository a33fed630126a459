// The adversarial secrets suite: a real sandbox (the built package) whose script is the
// attacker, a "reflector" on 127.0.0.1 that a secret is bound to and that echoes what it
// is sent (as debug endpoints and error pages do), and a "sink": another allowed origin
// where a script would like the value to arrive. Rules: docs/network.md "Threat model".
import http from "node:http";
import zlib from "node:zlib";
import type { AddressInfo } from "node:net";
import { createSandbox, type RunResult } from "scriptbox";
import { expect } from "vitest";

export type Sandbox = Awaited<ReturnType<typeof createSandbox>>;

/** A strong value full of characters every encoding changes: / é & < " + > space % \ ~ */
export const VALUE = 'Zq8/\u00e9&<"+> Wk3%\\x9mP~T-rY';

export interface Server {
  origin: string;
  port: number;
  /** Every request: method, url, raw header bytes and body bytes, as they arrived. */
  requests: { method: string; url: string; head: Buffer; body: Buffer }[];
  close(): Promise<void>;
}

export async function startServer(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void): Promise<Server> {
  const server = http.createServer({ maxHeaderSize: 256 * 1024 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const head = Buffer.from(req.rawHeaders.join("\n"), "latin1");
      state.requests.push({ method: req.method!, url: req.url!, head, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const state: Server = {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests: [],
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  return state;
}

const hex4 = (code: number, upper: boolean) => {
  const h = code.toString(16).padStart(4, "0");
  return upper ? h.toUpperCase() : h;
};
/** A fixed "random" choice per character, so the subsets are mixed but reproducible. */
const pick = (i: number, salt: number) => ((i * 7 + salt * 13) % 5) < 2;

/** How real servers write a value they echo. `v` is the header value as Node read it (latin1). */
export const ENCODINGS: Record<string, (v: string) => string> = {
  raw: (v) => v,
  // PHP json_encode: \/ and \u00e9 (lower-case hex).
  "json-php": (v) => JSON.stringify(v).slice(1, -1).replace(/\//g, "\\/").replace(/[\u0080-\uffff]/g, (c) => `\\u${hex4(c.charCodeAt(0), false)}`),
  // Python json.dumps (ensure_ascii): \u00e9.
  "json-python": (v) => JSON.stringify(v).slice(1, -1).replace(/[\u0080-\uffff]/g, (c) => `\\u${hex4(c.charCodeAt(0), false)}`),
  // Go encoding/json: \u003c \u003e \u0026, non-ASCII as UTF-8.
  "json-go": (v) => JSON.stringify(v).slice(1, -1).replace(/[<>&]/g, (c) => `\\u${hex4(c.charCodeAt(0), false)}`),
  // Every character as \uXXXX, upper-case hex.
  "json-every-char": (v) => [...v].map((c) => `\\u${hex4(c.charCodeAt(0), true)}`).join(""),
  // A mixed subset as \uXXXX in both cases, the rest as JSON.stringify writes it.
  "json-subset": (v) => [...v].map((c, i) => (pick(i, 1) ? `\\u${hex4(c.charCodeAt(0), i % 2 === 0)}` : JSON.stringify(c).slice(1, -1))).join(""),
  // encodeURIComponent with lower-case hex (%2f, %c3%a9).
  "percent-lower": (v) => encodeURIComponent(v).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
  // application/x-www-form-urlencoded in latin1 (Python quote_plus(encoding="latin1")): + for space, %E9.
  "percent-form-latin1": (v) => [...v].map((c) => (c === " " ? "+" : /[A-Za-z0-9_.~-]/.test(c) ? c : `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`)).join(""),
  // Every byte percent-encoded, mixed case.
  "percent-every-char": (v) => [...Buffer.from(v, "utf8")].map((b, i) => `%${b.toString(16).padStart(2, "0")[i % 2 ? "toUpperCase" : "toLowerCase"]()}`).join(""),
  // HTML entities by name (PHP htmlentities).
  "html-named": (v) => v.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/\u00e9/g, "&eacute;"),
  // Every character as a decimal reference, some with leading zeros.
  "html-decimal": (v) => [...v].map((c, i) => `&#${i % 3 === 0 ? "00" : ""}${c.charCodeAt(0)};`).join(""),
  // A mixed subset as hexadecimal references, &#x and &#X, both cases.
  "html-hex-subset": (v) => [...v].map((c, i) => (pick(i, 2) ? `&#${i % 2 ? "x" : "X"}${c.charCodeAt(0).toString(16)[i % 2 ? "toUpperCase" : "toLowerCase"]()};` : c.replace("&", "&amp;").replace("<", "&lt;"))).join(""),
  base64: (v) => Buffer.from(v, "latin1").toString("base64"),
  "base64-of-utf8": (v) => Buffer.from(v, "utf8").toString("base64"),
  base64url: (v) => Buffer.from(v, "latin1").toString("base64url"),
  // Inside a longer base64 text, unaligned (a Basic credential echoed back).
  "base64-basic": (v) => Buffer.from(`user:${v}`, "latin1").toString("base64"),
};

/** The reflector: echoes the x-key header it receives, in the encoding the path names. */
export function reflect(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url!, "http://x");
  const v = String(req.headers["x-key"] ?? "");
  const [, kind, arg] = url.pathname.split("/");
  if (kind === "body") {
    res.setHeader("content-type", "text/plain; charset=utf-8");
    res.end(`you sent: ${ENCODINGS[arg!]!(v)} (end)`);
  } else if (kind === "header") {
    res.setHeader("x-echo", `you sent: ${ENCODINGS[arg!]!(v)}`); // Node sends it as UTF-8
    res.end("see the header");
  } else if (kind === "status" && arg === "latin1") {
    // The value's bytes as they came (é is the byte E9), which undici reads as UTF-8 (U+FFFD):
    // written on the socket, since Node would encode a reason phrase as UTF-8.
    const head = Buffer.concat([Buffer.from("HTTP/1.1 200 OK ", "latin1"), Buffer.from(v, "latin1"), Buffer.from("\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok", "latin1")]);
    res.socket!.end(head);
  } else if (kind === "status") {
    res.statusMessage = `OK ${v}`; // Node writes it as UTF-8
    res.end("see the status");
  } else if (kind === "gzip") {
    let body: Buffer = Buffer.from(`you sent: ${ENCODINGS["json-php"]!(v)}`, "utf8");
    const layers = Number(arg);
    for (let i = 0; i < layers; i++) body = zlib.gzipSync(body);
    res.setHeader("content-encoding", Array(layers).fill("gzip").join(", "));
    res.end(body);
  } else if (kind === "negotiated-gzip") {
    // As compression middleware does: gzip only when asked to. Echoes x-key and x-guess, and
    // tells which Accept-Encoding it saw.
    const accepted = String(req.headers["accept-encoding"] ?? "");
    const text = Buffer.from(`you sent: x-key: ${v}\nx-guess: ${String(req.headers["x-guess"] ?? "")}\n`, "latin1");
    res.setHeader("x-seen-accept-encoding", accepted);
    if (/\bgzip\b/.test(accepted)) {
      res.setHeader("content-encoding", "gzip");
      res.end(zlib.gzipSync(text));
    } else {
      res.end(text);
    }
  } else if (kind === "unknown-coding") {
    res.setHeader("content-encoding", "x-custom");
    res.end(Buffer.from(`you sent: ${v}`, "latin1"));
  } else if (kind === "redirect") {
    res.writeHead(302, { location: url.searchParams.get("to")! });
    res.end();
  } else {
    // An error page that quotes the path, as many frameworks do.
    res.writeHead(404, { "content-type": "text/plain" });
    res.end(`Cannot GET ${decodeURIComponent(url.pathname)}`);
  }
}

/** Runs the script as an async function body (with `secret` imported) and returns its value. */
export async function value<T = any>(sandbox: Sandbox, body: string, input?: unknown): Promise<T> {
  const result: RunResult<T> = await sandbox.run<T>(`import { secret } from "runtime";\nexport default async (input) => {\n${body}\n};\n`, { filename: "attack.js", input });
  if (!result.ok) expect.fail(`run failed: ${result.error.stack || result.error.message}`);
  return result.value;
}

/** Whether bytes a server received contain the value: raw (latin1, as a header carries it) or UTF-8. */
export function containsValue(bytes: Buffer): boolean {
  return bytes.includes(Buffer.from(VALUE, "latin1")) || bytes.includes(Buffer.from(VALUE, "utf8"));
}
