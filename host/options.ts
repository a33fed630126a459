// Validates createSandbox and run options on the embedder's thread, so that a mistake is a
// clear TypeError at the call site rather than a failure inside a worker later.
//
// Only own properties count: an option inherited from a prototype (or a limit named
// "toString") is not an option, and "__proto__" is refused as an env or secret name
// rather than silently lost when copied into an object.
import { parseAllowEntry } from "./net/allowEntry.js";
import { SecretStore } from "./fetch/secrets.js";
import { checkSecretStrength } from "./fetch/secretStrength.js";
import { defineData } from "./marshal/crossing-values.js";
import { describeOption, resolveLimits } from "./limits.js";
import type { SandboxConfig } from "./protocol.js";
import type { SandboxOptions } from "./types.js";
import type { EngineVariantName } from "./engine/wasm-binary.js";

const KNOWN_OPTIONS = new Set(["limits", "net", "env", "secrets", "cloud", "location", "onLog", "isolate", "engineVariant", "modules"]);
/** Options of one run, load or call (RunOptions); runScript takes them beside the sandbox's. */
export const RUN_OPTION_KEYS = ["filename", "input", "signal", "queueTimeoutMs", "modules", "resolveDir", "sourceModules"] as const;

function plainObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError(`${what} must be an object`);
  return value as Record<string, unknown>;
}

/** The own property `key` of `object` (undefined when absent or only inherited). */
export function own(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** A script's name, as stacks show it (default "script.js"). */
export function checkFilename(filename: unknown): string {
  if (filename === undefined) return "script.js";
  if (typeof filename !== "string" || filename === "" || filename.length > 1024 || /[\0\n\r]/.test(filename)) {
    throw new TypeError("filename must be a non-empty single-line string");
  }
  return filename;
}

/** Names that would be lost as keys of a plain object (it would set the prototype instead). */
function checkName(name: string, what: string): void {
  if (name === "__proto__") throw new TypeError(`${what} "__proto__" is not allowed: it cannot be carried as a plain key`);
}

export interface ResolvedRunOptions {
  filename: string | undefined;
  input: unknown;
  signal: AbortSignal | null;
  queueTimeoutMs: number | null;
  /** Host modules this run adds or overrides (validated by host/host-modules/declaration.ts). */
  modules: unknown;
  /** Bundling of source scripts (host/bundle/): checked where the source is prepared. */
  resolveDir: unknown;
  sourceModules: unknown;
}

/**
 * Validates RunOptions (and LoadOptions, which are the same without input). `null` and
 * `undefined` mean no options; unknown keys are errors, so a misspelt `signal` is not
 * silently ignored.
 */
export function resolveRunOptions(options: unknown, what = "run options", allowed: readonly string[] = RUN_OPTION_KEYS): ResolvedRunOptions {
  if (options === undefined || options === null) return { filename: undefined, input: undefined, signal: null, queueTimeoutMs: null, modules: undefined, resolveDir: undefined, sourceModules: undefined };
  const raw = plainObject(options, what);
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) throw new TypeError(`unknown ${what} key "${key}" (known: ${allowed.join(", ")})`);
  }
  const signal = own(raw, "signal");
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError("signal must be an AbortSignal");
  const queueTimeoutMs = own(raw, "queueTimeoutMs");
  if (queueTimeoutMs !== undefined && typeof queueTimeoutMs !== "number") {
    throw new TypeError(`queueTimeoutMs must be a number from 0 to ${24 * 3600_000}, got ${describeOption(queueTimeoutMs)}`);
  }
  if (queueTimeoutMs !== undefined && (!Number.isFinite(queueTimeoutMs) || queueTimeoutMs < 0 || queueTimeoutMs > 24 * 3600_000)) {
    throw new RangeError(`queueTimeoutMs must be a number from 0 to ${24 * 3600_000}, got ${String(queueTimeoutMs)}`);
  }
  return {
    filename: own(raw, "filename") as string | undefined,
    input: own(raw, "input"),
    signal: (signal as AbortSignal | undefined) ?? null,
    queueTimeoutMs: (queueTimeoutMs as number | undefined) ?? null,
    modules: own(raw, "modules"),
    resolveDir: own(raw, "resolveDir"),
    sourceModules: own(raw, "sourceModules"),
  };
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
    if (!KNOWN_OPTIONS.has(key)) throw new TypeError(`unknown sandbox option "${key}"`);
  }
  const limits = resolveLimits(own(raw, "limits"));

  const allow: string[] = [];
  const netOption = own(raw, "net");
  if (netOption !== undefined) {
    const net = plainObject(netOption, "net");
    const netAllow = own(net, "allow");
    if (netAllow !== undefined) {
      if (!Array.isArray(netAllow)) throw new TypeError("net.allow must be an array of host entries");
      for (const entry of netAllow) {
        if (typeof entry !== "string") throw new TypeError("net.allow entries must be strings");
        parseAllowEntry(entry); // throws a TypeError that says what is wrong with the entry
        allow.push(entry);
      }
    }
  }

  const env: Record<string, string> = {};
  const envOption = own(raw, "env");
  if (envOption !== undefined) {
    for (const [key, value] of Object.entries(plainObject(envOption, "env"))) {
      checkName(key, "env key");
      if (typeof value !== "string") throw new TypeError(`env.${key} must be a string`);
      defineData(env, key, value); // "__proto__" stays a key (host/marshal/crossing-values.ts)
    }
  }

  const secrets: SandboxConfig["secrets"] = {};
  const secretsOption = own(raw, "secrets");
  if (secretsOption !== undefined) {
    for (const [name, spec] of Object.entries(plainObject(secretsOption, "secrets"))) {
      checkName(name, "secret name");
      const secret = plainObject(spec, `secrets.${name}`);
      const value = own(secret, "value");
      const origins = own(secret, "origins");
      if (typeof value !== "string") throw new TypeError(`secrets.${name}.value must be a string`);
      if (!Array.isArray(origins) || !origins.every((o) => typeof o === "string")) {
        throw new TypeError(`secrets.${name}.origins must be an array of origins`);
      }
      const weak = own(secret, "weak");
      defineData(secrets, name, { value, origins: [...(origins as string[])], ...(weak !== undefined ? { weak: weak as boolean } : {}) });
    }
    new SecretStore(secrets); // validates names, values and origins with clear messages
    for (const [name, spec] of Object.entries(secrets)) checkSecretStrength(name, spec.value, spec.weak); // weak: true opts in
  }

  let cloud: SandboxConfig["cloud"] = null;
  const cloudOption = own(raw, "cloud");
  if (cloudOption !== undefined) {
    const rawCloud = plainObject(cloudOption, "cloud");
    cloud = { baseUrl: httpUrl(own(rawCloud, "baseUrl"), "cloud.baseUrl").replace(/\/$/, "") };
    // Configuring the cloud API is the embedder naming its origin: the preconfigured
    // client may reach it (and only it) without a separate net.allow entry.
    const origin = new URL(cloud.baseUrl);
    const entry = `${origin.hostname}:${origin.port || (origin.protocol === "https:" ? 443 : 80)}`;
    if (!allow.includes(entry)) allow.push(entry);
    for (const key of ["token", "session"] as const) {
      const refOption = own(rawCloud, key);
      if (refOption === undefined) continue;
      const ref = plainObject(refOption, `cloud.${key}`);
      const secretName = own(ref, "secret");
      if (typeof secretName !== "string" || !Object.hasOwn(secrets, secretName)) {
        throw new TypeError(`cloud.${key}.secret must name one of the sandbox's secrets (${Object.keys(secrets).join(", ") || "none given"})`);
      }
      cloud[key] = { secret: secretName };
    }
  }

  const locationOption = own(raw, "location");
  const location = locationOption === undefined ? null : httpUrl(locationOption, "location");
  const onLog = own(raw, "onLog");
  if (onLog !== undefined && typeof onLog !== "function") throw new TypeError("onLog must be a function");
  const isolate = own(raw, "isolate");
  if (isolate !== undefined && typeof isolate !== "boolean") throw new TypeError("isolate must be a boolean");
  const variant = own(raw, "engineVariant") ?? "release";
  if (variant !== "release" && variant !== "debug") throw new TypeError('engineVariant must be "release" or "debug"');

  return { limits, allow, env, secrets, cloud, location, streamLogs: typeof onLog === "function", variant };
}
