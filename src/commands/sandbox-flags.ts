// The sandbox flags every command that runs a script shares (`run`, and the queue's
// `worker` / `submit`): limits, --allow-net, --env, --env-file, --secret, --cloud-*,
// --location and the optional scriptbox.config.json. Two entry points:
//
//   addSandboxFlags(command)                  defines the flags on a commander Command;
//   resolveSandboxFlags(flags, { scriptPath }) turns what was parsed into SandboxOptions.
//
// The config file's format is read and checked in config-file.ts.
// Values are checked here, before createSandbox sees them, so that every mistake is
// reported with the flag (or config key) the user wrote and in the user's units:
// `--memory 10mb is below the 24mb minimum`, not `limits.memoryBytes … 25165824`.
// Precedence: flags over the config file; lists (allow-net) and records (env, secrets)
// merge, a flag winning over the config for the same name.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import * as util from "node:util";
import { Command, Option } from "commander";
import { parseAllowEntry } from "../../host/net/allowEntry.js";
import { LIMIT_BOUNDS, type Limits } from "../../host/limits.js";
import type { CloudOption, SandboxOptions, SecretOption } from "../../host/types.js";
import { UsageError } from "../usage.js";
import { CONFIG_FILE_NAME, type ConfigFile, readConfig } from "./config-file.js";
import { formatQuantity, parseQuantity, quantityExample, type QuantityKind } from "./units.js";

interface LimitFlag {
  flag: string;
  kind: QuantityKind;
  help: string;
}

/** One flag per limit; `--limit name=value` takes the library name or the flag name. */
export { CONFIG_FILE_NAME };

export const LIMIT_FLAGS: Readonly<Record<keyof Limits, LimitFlag>> = {
  memoryBytes: { flag: "memory", kind: "bytes", help: "memory limit (bytes, or 64mb, 512k, …)" },
  stackBytes: { flag: "stack", kind: "bytes", help: "QuickJS stack size (256k, …)" },
  cpuTimeMs: { flag: "cpu-time", kind: "ms", help: "guest CPU time limit (ms, or 2s, …)" },
  wallTimeMs: { flag: "timeout", kind: "ms", help: "wall-clock limit for the whole run (ms, or 30s, 2m, …)" },
  maxFetches: { flag: "max-fetches", kind: "count", help: "fetches per run" },
  maxConcurrentFetches: { flag: "max-concurrent-fetches", kind: "count", help: "fetches in flight at once" },
  maxRequestBytes: { flag: "max-request-bytes", kind: "bytes", help: "largest request body (10mb, …)" },
  maxResponseBytes: { flag: "max-response-bytes", kind: "bytes", help: "largest response body (16mb, …)" },
  fetchTimeoutMs: { flag: "fetch-timeout", kind: "ms", help: "time limit of one fetch (ms, or 15s, …)" },
  maxTimers: { flag: "max-timers", kind: "count", help: "timers pending at once" },
  maxLogBytes: { flag: "max-log-bytes", kind: "bytes", help: "console output kept per run (1mb, …)" },
  maxRequestHeaders: { flag: "max-request-headers", kind: "count", help: "header fields of one request" },
  maxRequestHeaderBytes: { flag: "max-request-header-bytes", kind: "bytes", help: "header bytes of one request, secrets substituted (64k, …)" },
  maxHostCalls: { flag: "max-host-calls", kind: "count", help: "host-module calls per run (embedders' host modules)" },
  maxHostCallBytes: { flag: "max-host-call-bytes", kind: "bytes", help: "size of one host-module call's arguments or result (8mb, …)" },
};

const LIMIT_NAMES = Object.keys(LIMIT_FLAGS) as (keyof Limits)[];

/** What commander hands over for the flags below (unparsed: checked in resolveSandboxFlags). */
export interface SandboxFlagValues {
  allowNet?: string[];
  env?: string[];
  envFile?: string[];
  secret?: string[];
  /** Secrets whose weak value the user accepts (--weak-secret NAME). */
  weakSecret?: string[];
  limit?: string[];
  cloudUrl?: string;
  cloudTokenSecret?: string;
  cloudSessionSecret?: string;
  location?: string;
  /** A path, or false for --no-config. */
  config?: string | false;
  [limitFlag: string]: unknown;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];
const collectList = (value: string, previous: string[] = []) => [...previous, ...value.split(",").map((s) => s.trim()).filter(Boolean)];
const camel = (flag: string) => flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/** Defines the sandbox flags on `command` (returned for chaining). */
export function addSandboxFlags(command: Command): Command {
  command
    .option("--allow-net <hosts>", "allow network access to host[:port] entries (comma-separated, repeatable)", collectList)
    .option("--env <K=V>", 'an env value the script reads with `import { env } from "runtime"` (repeatable)', collect)
    .option("--env-file <file>", "env values from a dotenv file; variables a --secret names are withheld from the script (repeatable)", collect)
    .option("--secret <NAME=ENV_VAR@origin>", "a secret from an environment variable, usable only towards origin; allows the network to that origin (repeatable)", collect)
    .option("--weak-secret <NAME>", "accept a short or low-entropy value for secret NAME, which is refused otherwise (repeatable; docs/network.md)", collect);
  for (const name of LIMIT_NAMES) {
    const { flag, kind, help } = LIMIT_FLAGS[name];
    command.addOption(new Option(`--${flag} <${kind === "bytes" ? "size" : kind === "ms" ? "duration" : "n"}>`, `${help} [${name}]`));
  }
  command
    .option("--limit <name=value>", "any limit by name, e.g. maxFetches=200 or memory=128mb (repeatable)", collect)
    .option("--cloud-url <url>", "base URL of the cloud API for the preconfigured `cloud` client (allows the network to it)")
    .option("--cloud-token-secret <NAME>", "the secret holding the cloud API token (PAT); an environment variable NAME works too")
    .option("--cloud-session-secret <NAME>", "the secret holding the dashboard session (for PAT creation)")
    .option("--location <url>", "base URL for relative URLs in fetch (like Deno's --location)")
    .option("--config <file>", `read repeated flags from this file (default: ${CONFIG_FILE_NAME} next to the script)`)
    .option("--no-config", `ignore ${CONFIG_FILE_NAME}`);
  return command;
}

/** The config file to use: --config, else scriptbox.config.json next to the script, else none. */
function findConfig(flags: SandboxFlagValues, scriptPath: string | undefined): string | null {
  if (flags.config === false) return null;
  if (typeof flags.config === "string") {
    if (!existsSync(flags.config) || !statSync(flags.config).isFile()) throw new UsageError(`--config ${flags.config}: no such file`);
    return resolve(flags.config);
  }
  if (scriptPath === undefined) return null;
  const candidate = join(dirname(resolve(scriptPath)), CONFIG_FILE_NAME);
  return existsSync(candidate) ? candidate : null;
}

// ---------------------------------------------------------------- values

/** Parses and range-checks one limit; `shown` is how the user wrote it ("--memory 10mb"). */
function limitValue(name: keyof Limits, raw: string | number, shown: string): number {
  const { kind } = LIMIT_FLAGS[name];
  const quantity = parseQuantity(raw, kind);
  if (quantity === undefined) throw new UsageError(`${shown}: expected ${quantityExample(kind)}`);
  const [min, max] = LIMIT_BOUNDS[name];
  if (quantity.value < min) throw new UsageError(`${shown} is below the ${formatQuantity(min, kind, quantity.unit, "up")} minimum`);
  if (quantity.value > max) throw new UsageError(`${shown} is above the ${formatQuantity(max, kind, quantity.unit)} maximum`);
  return quantity.value;
}

function limitName(name: string): keyof Limits | undefined {
  if ((LIMIT_NAMES as string[]).includes(name)) return name as keyof Limits;
  return LIMIT_NAMES.find((key) => LIMIT_FLAGS[key].flag === name);
}

function unknownLimit(shown: string, name: string): never {
  throw new UsageError(`${shown}: unknown limit "${name}" (known: ${LIMIT_NAMES.map((key) => `${key} (--${LIMIT_FLAGS[key].flag})`).join(", ")})`);
}

function checkAllowEntry(entry: string, shown: string): void {
  try {
    parseAllowEntry(entry);
  } catch (error) {
    // "net.allow: invalid entry "x": why" → "--allow-net x: why"
    throw new UsageError(`${shown}: ${(error as Error).message.replace(/^net\.allow: invalid entry "[^"]*": /, "")}`);
  }
}

/** "https://api.example.com" (no path, http or https), normalised; a UsageError otherwise. */
function secretOrigin(text: string, shown: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${shown}: "${text}" is not an origin such as https://api.example.com`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`${shown}: the origin must start with https:// or http://, got "${text}"`);
  if (url.pathname !== "/" || url.search || url.hash || url.username || url.password) {
    throw new UsageError(`${shown}: give an origin only (scheme://host[:port]), got "${text}"`);
  }
  return url.origin;
}

function readEnvFile(path: string, shown: string): Record<string, string> {
  if (!existsSync(path) || !statSync(path).isFile()) throw new UsageError(`${shown}: no such file`);
  // Node's own dotenv parser (the format of `node --env-file`), present from Node 20.12.
  const parseEnv = (util as { parseEnv?: (content: string) => Record<string, string | undefined> }).parseEnv;
  if (typeof parseEnv !== "function") throw new UsageError(`${shown}: --env-file needs Node 20.12 or later (this is ${process.version})`);
  const values: Record<string, string> = {};
  for (const [key, value] of Object.entries(parseEnv(readFileSync(path, "utf8")))) if (value !== undefined) values[key] = value;
  return values;
}

// The rules the library applies to secrets (host/fetch/secrets.ts), checked here to name the flag.
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]+$/;

interface SecretRequest {
  name: string;
  variable: string;
  origins: string[];
  shown: string;
}

function parseSecretFlag(entry: string): SecretRequest {
  const shown = `--secret ${entry}`;
  const match = /^([^=@]+)=([^@]+)@(.+)$/.exec(entry);
  if (!match) throw new UsageError(`${shown}: expected NAME=ENV_VAR@origin, e.g. API_TOKEN=MY_TOKEN@https://api.example.com`);
  return { name: match[1]!, variable: match[2]!, origins: [secretOrigin(match[3]!, shown)], shown };
}

function parseConfigSecret(name: string, spec: unknown, label: string): SecretRequest {
  const shown = `${label}: secrets.${name}`;
  if (typeof spec === "string") {
    const match = /^([^@]+)@(.+)$/.exec(spec);
    if (!match) throw new UsageError(`${shown}: expected "ENV_VAR@origin" or { "env": "ENV_VAR", "origins": [...] }`);
    return { name, variable: match[1]!, origins: [secretOrigin(match[2]!, shown)], shown };
  }
  const record = spec as { env?: unknown; origins?: unknown } | null;
  if (typeof record !== "object" || record === null || typeof record.env !== "string" || !Array.isArray(record.origins) || record.origins.length === 0) {
    throw new UsageError(`${shown}: expected "ENV_VAR@origin" or { "env": "ENV_VAR", "origins": [...] }`);
  }
  return { name, variable: record.env, origins: record.origins.map((o) => (typeof o === "string" ? secretOrigin(o, shown) : secretOrigin(String(o), shown))), shown };
}

// ---------------------------------------------------------------- resolving

export interface ResolveSandboxFlagsOptions {
  /** The script being run: its folder is where scriptbox.config.json is looked for. */
  scriptPath?: string;
  /** Where secrets' ENV_VARs are read (default: process.env). */
  environment?: Record<string, string | undefined>;
}

export interface ResolvedSandboxFlags {
  /** Everything but onLog, which the command adds. */
  options: SandboxOptions;
  /** The config file that was read, if any. */
  configPath: string | null;
}

/** Turns parsed flags (plus the config file) into createSandbox options; a UsageError names what is wrong. */
export function resolveSandboxFlags(flags: SandboxFlagValues, context: ResolveSandboxFlagsOptions = {}): ResolvedSandboxFlags {
  const environment = context.environment ?? process.env;
  const configPath = findConfig(flags, context.scriptPath);
  const label = configPath ?? "";
  const config: ConfigFile = configPath ? readConfig(configPath, label) : {};
  const configDir = configPath ? dirname(configPath) : process.cwd();

  // Limits: config first, then --limit, then the dedicated flags (the most specific wins).
  const limits: Partial<Limits> = {};
  for (const [key, raw] of Object.entries(config.limits ?? {})) {
    const name = limitName(key) ?? unknownLimit(`${label}: limits`, key);
    if (typeof raw !== "number" && typeof raw !== "string") throw new UsageError(`${label}: limits.${key} must be a number or a string such as "64mb"`);
    limits[name] = limitValue(name, raw, `${label}: limits.${key} ${JSON.stringify(raw)}`);
  }
  for (const entry of flags.limit ?? []) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new UsageError(`--limit ${entry}: expected name=value, e.g. maxFetches=200`);
    const key = entry.slice(0, eq).trim();
    const name = limitName(key) ?? unknownLimit(`--limit ${entry}`, key);
    limits[name] = limitValue(name, entry.slice(eq + 1), `--limit ${entry}`);
  }
  for (const name of LIMIT_NAMES) {
    const { flag } = LIMIT_FLAGS[name];
    const raw = flags[camel(flag)];
    if (typeof raw === "string") limits[name] = limitValue(name, raw, `--${flag} ${raw}`);
  }

  const allow: string[] = [];
  const addAllow = (entry: string, shown: string) => {
    checkAllowEntry(entry, shown);
    if (!allow.includes(entry)) allow.push(entry);
  };
  for (const entry of config.allowNet ?? []) addAllow(entry, `${label}: allowNet "${entry}"`);
  for (const entry of flags.allowNet ?? []) addAllow(entry, `--allow-net ${entry}`);

  // Env: env files (config's, then the flags'), then the config's env record, then --env.
  const envFiles: [path: string, shown: string][] = [];
  for (const file of typeof config.envFile === "string" ? [config.envFile] : (config.envFile ?? [])) {
    envFiles.push([isAbsolute(file) ? file : join(configDir, file), `${label}: envFile "${file}"`]);
  }
  for (const file of flags.envFile ?? []) envFiles.push([file, `--env-file ${file}`]);
  const fileValues: Record<string, string> = {};
  for (const [path, shown] of envFiles) Object.assign(fileValues, readEnvFile(path, shown));
  const explicitEnv: Record<string, string> = { ...config.env };
  for (const entry of flags.env ?? []) {
    const eq = entry.indexOf("=");
    if (eq <= 0) throw new UsageError(`--env ${entry}: expected NAME=VALUE`);
    explicitEnv[entry.slice(0, eq)] = entry.slice(eq + 1);
  }

  // Secrets: values from the environment (a real variable wins over an env file, as with
  // dotenv), never from argv or the config file itself.
  const lookup = (variable: string): string | undefined => environment[variable] ?? fileValues[variable];
  const requests: SecretRequest[] = [
    ...Object.entries(config.secrets ?? {}).map(([name, spec]) => parseConfigSecret(name, spec, label)),
    ...(flags.secret ?? []).map(parseSecretFlag),
  ];
  const secrets: Record<string, SecretOption> = {};
  const fromFlags = new Set<string>();
  const withheld = new Set<string>();
  for (const request of requests) {
    if (!SECRET_NAME.test(request.name)) throw new UsageError(`${request.shown}: invalid secret name "${request.name}": use letters, digits and _, not starting with a digit`);
    const value = lookup(request.variable);
    if (value === undefined) throw new UsageError(`${request.shown}: environment variable ${request.variable} is not set${envFiles.length ? " (nor in the env file)" : ""}`);
    if (!HEADER_VALUE.test(value)) {
      throw new UsageError(`${request.shown}: the value of ${request.variable} ${value === "" ? "is empty" : "cannot be sent in a header (a control character or a character above U+00FF)"}`);
    }
    withheld.add(request.variable);
    const isFlag = request.shown.startsWith("--");
    const existing = secrets[request.name];
    if (existing && existing.value !== value) {
      // A flag replaces the config's definition; two flags (or two config entries) disagreeing is a mistake.
      if (isFlag && !fromFlags.has(request.name)) delete secrets[request.name];
      else throw new UsageError(`${request.shown}: secret ${request.name} is given twice with different values`);
    }
    if (isFlag) fromFlags.add(request.name);
    const origins = [...(secrets[request.name]?.origins ?? [])];
    for (const origin of request.origins) if (!origins.includes(origin)) origins.push(origin);
    secrets[request.name] = { value, origins };
    // Naming an origin a secret may go to is naming that origin as reachable.
    for (const origin of request.origins) if (!allow.includes(origin)) allow.push(origin);
  }

  // Cloud: the flags override the config's record key by key.
  const cloudUrl = flags.cloudUrl ?? config.cloud?.url;
  const tokenSecret = flags.cloudTokenSecret ?? config.cloud?.tokenSecret;
  const sessionSecret = flags.cloudSessionSecret ?? config.cloud?.sessionSecret;
  let cloud: CloudOption | undefined;
  if (cloudUrl !== undefined) {
    const shownUrl = flags.cloudUrl !== undefined ? `--cloud-url ${cloudUrl}` : `${label}: cloud.url`;
    let origin: string;
    try {
      const url = new URL(cloudUrl);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
      origin = url.origin;
    } catch {
      throw new UsageError(`${shownUrl}: expected an http:// or https:// URL`);
    }
    cloud = { baseUrl: cloudUrl };
    for (const [key, name, shown] of [
      ["token", tokenSecret, flags.cloudTokenSecret !== undefined ? "--cloud-token-secret" : `${label}: cloud.tokenSecret`],
      ["session", sessionSecret, flags.cloudSessionSecret !== undefined ? "--cloud-session-secret" : `${label}: cloud.sessionSecret`],
    ] as const) {
      if (name === undefined) continue;
      if (!Object.hasOwn(secrets, name)) {
        // Shorthand: an environment variable of that name, usable towards the cloud origin only.
        const value = lookup(name);
        if (value === undefined) {
          throw new UsageError(`${shown} ${name}: no secret of that name (give --secret ${name}=ENV_VAR@${origin}) and no environment variable ${name}`);
        }
        secrets[name] = { value, origins: [origin] };
        withheld.add(name);
      }
      cloud[key] = { secret: name };
    }
  } else if (tokenSecret !== undefined || sessionSecret !== undefined) {
    throw new UsageError(`${flags.cloudTokenSecret !== undefined ? "--cloud-token-secret" : flags.cloudSessionSecret !== undefined ? "--cloud-session-secret" : `${label}: cloud`} needs --cloud-url`);
  }

  // --weak-secret: the user accepts the guessing risk for that secret (host/fetch/secretStrength.ts).
  for (const name of flags.weakSecret ?? []) {
    if (!Object.hasOwn(secrets, name)) throw new UsageError(`--weak-secret ${name}: no --secret ${name}=… was given`);
    secrets[name]!.weak = true;
  }

  // What the script sees as env: the env files minus the variables that feed secrets, then
  // the explicit values (an explicit --env is the user's deliberate choice).
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(fileValues)) if (!withheld.has(key)) env[key] = value;
  Object.assign(env, explicitEnv);

  const location = flags.location ?? config.location;
  if (location !== undefined) {
    try {
      const url = new URL(location);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
    } catch {
      throw new UsageError(`${flags.location !== undefined ? `--location ${location}` : `${label}: location`}: expected an http:// or https:// URL`);
    }
  }

  const options: SandboxOptions = { limits, net: { allow }, env, secrets };
  if (cloud) options.cloud = cloud;
  if (location !== undefined) options.location = location;
  return { options, configPath };
}

/**
 * Library messages name library options; a CLI user typed flags. Rewrites the network
 * policy's advice ("add "x" to net.allow") into the flag's terms.
 */
export function inFlagTerms(message: string): string {
  return message
    .replace(/add ("[^"]*") to net\.allow/g, (_match, entry: string) => `allow it with --allow-net ${JSON.parse(entry) as string}`)
    .replace(/\(net\.allow is empty: no network access\)/g, "(no --allow-net given: no network access)")
    .replace(/is not in net\.allow/g, "is not allowed by --allow-net");
}
