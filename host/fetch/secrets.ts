// Secrets that never enter the sandbox. The guest gets a placeholder per secret,
//   scriptbox-secret.<NAME>.<nonce>
// (only [A-Za-z0-9_.-], so it survives URL and form encoding unchanged; <nonce> is random
// per transport, so a placeholder from one sandbox means nothing to another). On each hop
// of a request the transport:
//   - substitutes a placeholder in a header VALUE with the secret, only when the hop's
//     origin is one of that secret's origins;
//   - refuses the whole request (a "network policy: " error naming the secret) when a
//     placeholder appears anywhere else: a header to another origin, a header name, the
//     URL (also percent-decoded), or the body bytes; and when a redirect target URL carries
//     a secret's value to an origin not listed for it;
// and everything it hands back (headers, body, URL, status text, error messages) has each
// occurrence of a secret's value replaced with that secret's placeholder. Redaction catches
// a server echoing the value (raw, JSON-escaped or percent-encoded); it cannot stop an
// allowed origin that deliberately re-encodes the secret it was trusted with.
import { randomBytes } from "node:crypto";
import { NetworkPolicyError } from "../net/policy.js";
import { asBuffer, concatOwned } from "./bytes.js";

export interface SecretSpec {
  value: string;
  /** Origins ("https://api.example.com", "http://127.0.0.1:8787") the secret may be sent to. */
  origins: string[];
}

export const PLACEHOLDER_PREFIX = "scriptbox-secret.";
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
// A header field value as the transport sends it: tab, printable ASCII, obs-text bytes.
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]+$/;

interface Secret {
  name: string;
  value: string;
  placeholder: string;
  placeholderBytes: Buffer;
  origins: ReadonlySet<string>;
  /** Forms of the value that redaction replaces, as byte strings and as bytes. */
  forms: string[];
  formBytes: Buffer[];
}

export class SecretStore {
  readonly #secrets: Secret[] = [];
  readonly #byName = new Map<string, Secret>();
  readonly #prefixBytes = Buffer.from(PLACEHOLDER_PREFIX, "latin1");

  constructor(secrets: Record<string, SecretSpec> = {}, nonce: string = randomBytes(16).toString("base64url")) {
    if (secrets === null || typeof secrets !== "object") throw new TypeError("secrets must be an object");
    for (const [name, spec] of Object.entries(secrets)) {
      const secret = validate(name, spec, nonce);
      this.#secrets.push(secret);
      this.#byName.set(name, secret);
    }
  }

  get size(): number {
    return this.#secrets.length;
  }

  /** What the guest's secret(name) returns. Throws a TypeError for unknown names. */
  placeholder(name: string): string {
    const secret = this.#byName.get(name);
    if (!secret) throw new TypeError(`secret(${JSON.stringify(String(name))}): no such secret`);
    return secret.placeholder;
  }

  /**
   * The header list for one hop to `origin`: placeholders in values substituted where the
   * secret allows that origin. Throws NetworkPolicyError for a placeholder going anywhere else.
   */
  headersFor(headers: readonly [string, string][], origin: string): [string, string][] {
    let out: [string, string][] | null = null;
    for (let i = 0; i < headers.length; i++) {
      const [name, value] = headers[i]!;
      if (name.includes(PLACEHOLDER_PREFIX)) {
        const secret = this.#secrets.find((s) => name.includes(s.placeholder));
        if (secret) throw refusal(secret, "its placeholder is in a header name; secrets are only substituted in header values");
      }
      if (!value.includes(PLACEHOLDER_PREFIX)) continue;
      let substituted = value;
      for (const secret of this.#secrets) {
        if (!substituted.includes(secret.placeholder)) continue;
        if (!secret.origins.has(origin)) {
          throw refusal(secret, `it may only be sent to ${listOrigins(secret)}, not to ${origin} (header ${JSON.stringify(name.toLowerCase())})`);
        }
        substituted = substituted.split(secret.placeholder).join(secret.value);
      }
      if (substituted !== value) {
        out ??= headers.slice() as [string, string][];
        out[i] = [name, substituted];
      }
    }
    return out ?? (headers as [string, string][]);
  }

  /**
   * Refuses a URL that carries a placeholder (as written, percent-decoded, in any letter
   * case since URL hosts are lower-cased), or a secret's value to an origin not listed for it.
   */
  checkUrl(url: string, origin: string): void {
    let text = url;
    for (let round = 0; round < 4; round++) {
      const lower = text.toLowerCase();
      for (const secret of this.#secrets) {
        if (lower.includes(secret.placeholder.toLowerCase())) {
          throw refusal(secret, "its placeholder is in the URL; secrets are only substituted in request header values");
        }
        if (!secret.origins.has(origin) && text.includes(secret.value)) {
          throw refusal(secret, `the URL of a request to ${origin} carries its value; it may only be sent to ${listOrigins(secret)}`);
        }
      }
      const decoded = percentDecode(text);
      if (decoded === text) return;
      text = decoded;
    }
  }

  /** Refuses a method that is a placeholder (placeholders are valid HTTP tokens). */
  checkMethod(method: string): void {
    const secret = this.#secrets.find((s) => method.includes(s.placeholder));
    if (secret) throw refusal(secret, "its placeholder is the request method");
  }

  /** Refuses a request body that carries a placeholder. */
  checkBody(body: Uint8Array): void {
    const bytes = asBuffer(body);
    if (bytes.indexOf(this.#prefixBytes) < 0) return;
    for (const secret of this.#secrets) {
      if (bytes.indexOf(secret.placeholder, 0, "latin1") >= 0) {
        throw refusal(secret, "its placeholder is in the request body; secrets are only substituted in request header values");
      }
    }
  }

  /** The text with every secret value replaced by its placeholder. */
  redactText(text: string): string {
    if (this.#secrets.length === 0) return text;
    const matches = this.#find((secret) => secret.forms, (form, from) => text.indexOf(form, from));
    if (matches.length === 0) return text;
    let out = "";
    let from = 0;
    for (const m of matches) {
      out += text.slice(from, m.at) + m.secret.placeholder;
      from = m.at + m.length;
    }
    return out + text.slice(from);
  }

  /** The bytes with every secret value replaced by its placeholder; the same array when nothing matched. */
  redactBytes(body: Uint8Array): Uint8Array {
    if (this.#secrets.length === 0 || body.byteLength === 0) return body;
    const bytes = asBuffer(body);
    const matches = this.#find((secret) => secret.formBytes, (form, from) => bytes.indexOf(form, from));
    if (matches.length === 0) return body;
    const parts: Uint8Array[] = [];
    let from = 0;
    for (const m of matches) {
      parts.push(bytes.subarray(from, m.at), m.secret.placeholderBytes);
      from = m.at + m.length;
    }
    parts.push(bytes.subarray(from));
    return concatOwned(parts, parts.reduce((n, p) => n + p.byteLength, 0));
  }

  /** Every occurrence of every form of every secret: leftmost first, longest on a tie, none overlapping. */
  #find<T extends { length: number }>(formsOf: (secret: Secret) => T[], indexOf: (form: T, from: number) => number): Match[] {
    const all: Match[] = [];
    for (const secret of this.#secrets) {
      for (const form of formsOf(secret)) {
        for (let at = indexOf(form, 0); at >= 0; at = indexOf(form, at + form.length)) all.push({ at, length: form.length, secret });
      }
    }
    all.sort((a, b) => a.at - b.at || b.length - a.length);
    const chosen: Match[] = [];
    let end = 0;
    for (const m of all) {
      if (m.at < end) continue;
      chosen.push(m);
      end = m.at + m.length;
    }
    return chosen;
  }
}

interface Match {
  at: number;
  length: number;
  secret: Secret;
}

function validate(name: string, spec: SecretSpec, nonce: string): Secret {
  if (!NAME.test(name)) {
    throw new TypeError(`secrets: invalid name ${JSON.stringify(name)}: use letters, digits and _, not starting with a digit (like an environment variable)`);
  }
  if (spec === null || typeof spec !== "object") throw new TypeError(`secrets.${name}: expected { value, origins }`);
  const { value, origins } = spec;
  // Never echo the value in these messages.
  if (typeof value !== "string" || value === "") throw new TypeError(`secrets.${name}.value must be a non-empty string`);
  if (!HEADER_VALUE.test(value)) {
    throw new TypeError(`secrets.${name}.value cannot be sent in a header: it has a control character (CR, LF, NUL, …) or a character above U+00FF`);
  }
  if (!Array.isArray(origins) || origins.length === 0) throw new TypeError(`secrets.${name}.origins must list at least one origin`);
  const set = new Set<string>();
  for (const origin of origins) set.add(parseOrigin(name, origin));
  // Text forms are byte strings (one char per byte, as headers are read); the UTF-8 form
  // covers a server that echoes a non-ASCII value re-encoded as UTF-8.
  const encodings = [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)];
  const forms = [...new Set([...encodings, ...encodings.map((e) => Buffer.from(e, "utf8").toString("latin1"))])];
  const formBytes = forms.map((form) => Buffer.from(form, "latin1"));
  const placeholder = `${PLACEHOLDER_PREFIX}${name}.${nonce}`;
  return { name, value, placeholder, placeholderBytes: Buffer.from(placeholder, "latin1"), origins: set, forms, formBytes };
}

function parseOrigin(name: string, text: unknown): string {
  let url: URL | null = null;
  try {
    url = typeof text === "string" ? new URL(text) : null;
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password || url.pathname !== "/" || url.search || url.hash) {
    throw new TypeError(`secrets.${name}.origins: ${JSON.stringify(text)} is not an http(s) origin like "https://api.example.com"`);
  }
  return url.origin;
}

function refusal(secret: Secret, why: string): NetworkPolicyError {
  return new NetworkPolicyError(`secret ${JSON.stringify(secret.name)} refused: ${why}`);
}

function listOrigins(secret: Secret): string {
  return [...secret.origins].join(", ");
}

function percentDecode(text: string): string {
  return text.includes("%") ? text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : text;
}
