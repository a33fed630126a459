// Validates createSandbox options on the embedder's thread, so that a mistake is a clear
// TypeError at the call site rather than a failure inside a worker later.
import { parseAllowEntry } from "./net/allowEntry.js";
import { SecretStore } from "./fetch/secrets.js";
import { defineData } from "./marshal/crossing-values.js";
import { resolveLimits } from "./limits.js";
import type { SandboxConfig } from "./protocol.js";
import type { SandboxOptions } from "./types.js";
import type { EngineVariantName } from "./engine/wasm-binary.js";

const KNOWN_OPTIONS = new Set(["limits", "net", "env", "secrets", "cloud", "location", "onLog", "isolate", "engineVariant"]);

function plainObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError(`${what} must be an object`);
  return value as Record<string, unknown>;
}

function httpUrl(value: unknown, what: string): string {
  if (typeof value !== "string") throw new TypeError(`${what} must be a URL string`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${what} is not a valid absolute URL: ${value}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError(`${what} must be an http: or https: URL`);
  return url.href;
}

export function resolveSandboxConfig(options: SandboxOptions & { engineVariant?: EngineVariantName }): SandboxConfig {
  const raw = plainObject(options, "sandbox options");
  for (const key of Object.keys(raw)) {
    if (!KNOWN_OPTIONS.has(key) && !["filename", "input"].includes(key)) throw new TypeError(`unknown sandbox option "${key}"`);
  }
  const limits = resolveLimits(options.limits);

  const allow: string[] = [];
  if (options.net !== undefined) {
    const net = plainObject(options.net, "net");
    if (net.allow !== undefined) {
      if (!Array.isArray(net.allow)) throw new TypeError("net.allow must be an array of host entries");
      for (const entry of net.allow) {
        if (typeof entry !== "string") throw new TypeError("net.allow entries must be strings");
        parseAllowEntry(entry); // throws a TypeError that says what is wrong with the entry
        allow.push(entry);
      }
    }
  }

  const env: Record<string, string> = {};
  if (options.env !== undefined) {
    for (const [key, value] of Object.entries(plainObject(options.env, "env"))) {
      if (typeof value !== "string") throw new TypeError(`env.${key} must be a string`);
      defineData(env, key, value); // "__proto__" stays a key (host/marshal/crossing-values.ts)
    }
  }

  const secrets: SandboxConfig["secrets"] = {};
  if (options.secrets !== undefined) {
    for (const [name, spec] of Object.entries(plainObject(options.secrets, "secrets"))) {
      const secret = plainObject(spec, `secrets.${name}`);
      if (typeof secret.value !== "string") throw new TypeError(`secrets.${name}.value must be a string`);
      if (!Array.isArray(secret.origins) || !secret.origins.every((o) => typeof o === "string")) {
        throw new TypeError(`secrets.${name}.origins must be an array of origins`);
      }
      defineData(secrets, name, { value: secret.value, origins: [...(secret.origins as string[])] });
    }
    new SecretStore(secrets); // validates names, values and origins with clear messages
  }

  let cloud: SandboxConfig["cloud"] = null;
  if (options.cloud !== undefined) {
    const raw = plainObject(options.cloud, "cloud");
    cloud = { baseUrl: httpUrl(raw.baseUrl, "cloud.baseUrl").replace(/\/$/, "") };
    // Configuring the cloud API is the embedder naming its origin: the preconfigured
    // client may reach it (and only it) without a separate net.allow entry.
    const origin = new URL(cloud.baseUrl);
    const entry = `${origin.hostname}:${origin.port || (origin.protocol === "https:" ? 443 : 80)}`;
    if (!allow.includes(entry)) allow.push(entry);
    for (const key of ["token", "session"] as const) {
      if (raw[key] === undefined) continue;
      const ref = plainObject(raw[key], `cloud.${key}`);
      if (typeof ref.secret !== "string" || !(ref.secret in secrets)) {
        throw new TypeError(`cloud.${key}.secret must name one of the sandbox's secrets (${Object.keys(secrets).join(", ") || "none given"})`);
      }
      cloud[key] = { secret: ref.secret };
    }
  }

  const location = options.location === undefined ? null : httpUrl(options.location, "location");
  if (options.onLog !== undefined && typeof options.onLog !== "function") throw new TypeError("onLog must be a function");
  if (options.isolate !== undefined && typeof options.isolate !== "boolean") throw new TypeError("isolate must be a boolean");
  const variant = options.engineVariant ?? "release";
  if (variant !== "release" && variant !== "debug") throw new TypeError('engineVariant must be "release" or "debug"');

  return { limits, allow, env, secrets, cloud, location, streamLogs: typeof options.onLog === "function", variant };
}
