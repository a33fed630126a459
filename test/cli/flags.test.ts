// Issue 13 §4 and §5: the CLI fits a person's habits and says what happened. A flag (and
// `--limit name=value`) for every limit, --env-file, scriptbox.config.json next to the
// script, --secret implying --allow-net for its origin, --version; every usage error names
// the flag as typed and answers in the user's units, and with --json also prints one JSON
// object; network failures, unhandled rejections and a non-callable default export are
// reported for what they are. Each CLI test spawns the built CLI on files in a temp dir and
// talks to a real HTTP server on 127.0.0.1.
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMIT_FLAGS, resolveSandboxFlags } from "../../src/commands/sandbox-flags.js";
import { DEFAULT_LIMITS } from "scriptbox";
import { expectUsageError, jsonResult, runCli } from "./helpers.js";

let dir: string;
let server: Server;
let origin: string;
let closedPort: number;
const received: { url: string; headers: IncomingHttpHeaders }[] = [];

/** Tests that spawn the CLI several times: a cold node process each, slow on a loaded machine. */
const SEVERAL_SPAWNS_MS = 120_000;

const cli = (args: string[], env: Record<string, string> = {}, cwd = dir) => runCli(cwd, args, env);

const FETCH_ECHO = `export default async ({ url }) => { const res = await fetch(url); return (await res.json()).headers; };`;

const FILES: Record<string, string> = {
  "ok.js": `export default () => "ok";`,
  "env.js": `import { env } from "runtime"; export default () => ({ ...env });`,
  "fetches.js": `export default async ({ url }) => { for (let i = 0; i < 3; i++) await (await fetch(url)).text(); return "three fetches"; };`,
  "echo.js": FETCH_ECHO,
  "secret-fetch.js": `
    import { secret } from "runtime";
    export default async ({ url }) => {
      const res = await fetch(url, { headers: { authorization: "Bearer " + secret("API") } });
      return (await res.json()).headers.authorization;
    };`,
  "cloud.js": `import { cloud } from "cloud"; export default async () => { try { await cloud.team.get(); } catch {} return "done"; };`,
  "refused.js": `export default async ({ url }) => {\n  const res = await fetch(url);\n  return res.status;\n};`,
  "rejects.js": `Promise.reject(new RangeError("nobody handled this"));\nexport default () => "value";`,
  "object-default.js": `export default { not: "a function" };`,
  ".env": `# a dotenv file\nREGION=eu\nGREETING="hello world"\nAPI_TOKEN=token-from-env-file\n`,
  // A folder with its own config file, next to its script.
  "configured/job.js": `import { env } from "runtime"; export default async ({ url }) => ({ env: { ...env }, fetched: url ? (await fetch(url)).status : null });`,
  "configured/heavy.js": `export default async ({ url }) => { for (let i = 0; i < 3; i++) await (await fetch(url)).text(); return "three fetches"; };`,
  "configured/.env": `FROM_FILE=yes\n`,
  "broken/job.js": `export default () => 1;`,
  "broken/scriptbox.config.json": JSON.stringify({ limits: { memory: "10mb" } }),
  "typo/job.js": `export default () => 1;`,
  "typo/scriptbox.config.json": JSON.stringify({ allownet: ["example.com"] }),
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "scriptbox-cli-flags-"));
  for (const [name, text] of Object.entries(FILES)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  server = createServer((req, res) => {
    received.push({ url: req.url ?? "", headers: req.headers });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ url: req.url, headers: req.headers }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A port nothing listens on: bound once, then closed.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  await writeFile(
    join(dir, "configured/scriptbox.config.json"),
    JSON.stringify({ limits: { maxFetches: 2, timeout: "20s" }, allowNet: [origin.slice(7)], env: { REGION: "config" }, envFile: ".env" }),
  );
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("resolveSandboxFlags: every limit has a flag and a --limit name", () => {
  const SAMPLES = { bytes: ["32mb", 32 * 1024 * 1024], ms: ["2s", 2000], count: ["7", 7] } as const;

  it("covers every limit of the library", () => {
    expect(Object.keys(LIMIT_FLAGS).sort()).toEqual(Object.keys(DEFAULT_LIMITS).sort());
  });

  for (const [name, { flag, kind }] of Object.entries(LIMIT_FLAGS)) {
    const [text, value] = SAMPLES[kind];
    // stackBytes tops out at 1 MiB and maxRequestHeaderBytes at 16 MiB: a smaller sample for them.
    const [sample, expected] = name === "stackBytes" || name === "maxRequestHeaderBytes" ? ["512k", 512 * 1024] : [text, value];
    it(`--${flag} ${sample}, --limit ${name}=${sample} and --limit ${flag}=${sample} set limits.${name}`, () => {
      const camel = flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
      for (const flags of [{ [camel]: sample }, { limit: [`${name}=${sample}`] }, { limit: [`${flag}=${sample}`] }]) {
        const { options } = resolveSandboxFlags({ ...flags, config: false });
        expect(options.limits).toEqual({ [name]: expected });
      }
    });
  }

  it("a dedicated flag wins over --limit, which wins over the config file", () => {
    const { options } = resolveSandboxFlags({ limit: ["maxFetches=5"], maxFetches: "9" }, { scriptPath: join(dir, "configured/job.js") });
    expect(options.limits).toMatchObject({ maxFetches: 9, wallTimeMs: 20_000 });
    expect(resolveSandboxFlags({ limit: ["maxFetches=5"] }, { scriptPath: join(dir, "configured/job.js") }).options.limits).toMatchObject({ maxFetches: 5 });
  });
});

describe("resolveSandboxFlags: secrets and the config file", () => {
  it("a --secret replaces the config's secret of the same name; both origins are allowed; the variables are withheld from env", async () => {
    await mkdir(join(dir, "override"), { recursive: true });
    await writeFile(join(dir, "override/scriptbox.config.json"), JSON.stringify({ secrets: { API: "FROM_CONFIG@https://config.example" }, envFile: "vars.env" }));
    await writeFile(join(dir, "override/vars.env"), "FROM_CONFIG=config-value\nFROM_FLAG=flag-value\nPLAIN=1\n");
    const scriptPath = join(dir, "override/job.js");
    const fromConfig = resolveSandboxFlags({}, { scriptPath, environment: {} });
    expect(fromConfig.options.secrets).toEqual({ API: { value: "config-value", origins: ["https://config.example"] } });
    const overridden = resolveSandboxFlags({ secret: ["API=FROM_FLAG@https://flag.example"] }, { scriptPath, environment: {} });
    expect(overridden.options.secrets).toEqual({ API: { value: "flag-value", origins: ["https://flag.example"] } });
    expect(overridden.options.net!.allow).toEqual(["https://config.example", "https://flag.example"]);
    expect(overridden.options.env).toEqual({ PLAIN: "1" });
    // The real environment wins over the env file for a secret's variable, as with dotenv.
    expect(resolveSandboxFlags({}, { scriptPath, environment: { FROM_CONFIG: "real" } }).options.secrets!.API!.value).toBe("real");
  });

  it("two flags giving one secret different values is a usage error", () => {
    expect(() => resolveSandboxFlags({ secret: ["A=X@https://a.example", "A=Y@https://b.example"], config: false }, { environment: { X: "1", Y: "2" } })).toThrow(
      "--secret A=Y@https://b.example: secret A is given twice with different values",
    );
    // The same value towards two origins is one secret with both.
    const same = resolveSandboxFlags({ secret: ["A=X@https://a.example", "A=X@https://b.example"], config: false }, { environment: { X: "1" } });
    expect(same.options.secrets).toEqual({ A: { value: "1", origins: ["https://a.example", "https://b.example"] } });
  });
});

describe.concurrent("scriptbox run: flags", () => {
  it("--version prints the package's version", async () => {
    const version = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
    const result = await cli(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(version);
  });

  it("--max-fetches and --limit raise or lower the fetch limit", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    const input = JSON.stringify({ url: `${origin}/n` });
    const capped = await cli(["run", "fetches.js", "--allow-net", origin.slice(7), "--input", input, "--max-fetches", "2", "--json"]);
    expect(capped.code, capped.stderr).toBe(3);
    expect(jsonResult(capped).error.message).toMatch(/^limit: maxFetches \(2\) reached/);
    const viaLimit = await cli(["run", "fetches.js", "--allow-net", origin.slice(7), "--input", input, "--limit", "maxFetches=2", "--json"]);
    expect(jsonResult(viaLimit).error.message).toMatch(/^limit: maxFetches \(2\) reached/);
    const enough = await cli(["run", "fetches.js", "--allow-net", origin.slice(7), "--input", input, "--limit", "max-fetches=3", "--json"]);
    expect(jsonResult(enough)).toMatchObject({ ok: true, value: "three fetches" });
  });

  it("--max-log-bytes cuts console output at the limit", async () => {
    await writeFile(join(dir, "chatty.js"), `export default () => { for (let i = 0; i < 100; i++) console.log("line " + i); };`);
    const result = await cli(["run", "chatty.js", "--max-log-bytes", "20", "--json"]);
    const logs = jsonResult(result).logs as { message: string }[];
    expect(logs.at(-1)!.message).toBe("[scriptbox] console output truncated: maxLogBytes limit (20 bytes) reached");
    expect(logs.length).toBeLessThan(6);
  });

  it("--env-file gives the script the file's values; a variable a --secret reads is withheld", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    const plain = await cli(["run", "env.js", "--env-file", ".env", "--env", "REGION=flag", "--json"]);
    expect(jsonResult(plain).value).toEqual({ REGION: "flag", GREETING: "hello world", API_TOKEN: "token-from-env-file" });

    const withSecret = await cli(["run", "secret-fetch.js", "--env-file", ".env", "--secret", `API=API_TOKEN@${origin}`, "--input", JSON.stringify({ url: `${origin}/s` }), "--json"]);
    const json = jsonResult(withSecret);
    expect(json, withSecret.stderr).toMatchObject({ ok: true });
    // The server got the value from the env file; the script only ever held a placeholder.
    expect(received.find((r) => r.url === "/s")?.headers.authorization).toBe("Bearer token-from-env-file");
    expect(json.value).toMatch(/^Bearer scriptbox-secret\.API\./);

    const env = await cli(["run", "env.js", "--env-file", ".env", "--secret", `API=API_TOKEN@${origin}`, "--json"]);
    expect(jsonResult(env).value).toEqual({ REGION: "eu", GREETING: "hello world" });
  });

  it("--env-file that does not exist is an error naming it", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    expect(() => resolveSandboxFlags({ envFile: [join(dir, "missing.env")], config: false })).toThrow(/^--env-file .*missing\.env: no such file$/);
    // Node 20 and 22 scan the whole command line for --env-file (nodejs/node#54232), so
    // their own "node: missing.env: not found" may come before ours: either way, it fails
    // and names the file.
    const result = await cli(["run", "ok.js", "--env-file", "missing.env"]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/missing\.env: (no such file|not found)/);
  });

  it("--secret …@origin allows the network to that origin without --allow-net", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    const result = await cli(["run", "secret-fetch.js", "--secret", `API=MY_TOKEN@${origin}`, "--input", JSON.stringify({ url: `${origin}/implied` }), "--json"], {
      MY_TOKEN: "implied-token-7f3a9c2e51",
    });
    expect(jsonResult(result), result.stderr).toMatchObject({ ok: true });
    expect(received.find((r) => r.url === "/implied")?.headers.authorization).toBe("Bearer implied-token-7f3a9c2e51");
    // Only that origin: another port on the same host is still refused.
    const other = await cli(["run", "echo.js", "--secret", `API=MY_TOKEN@${origin}`, "--input", JSON.stringify({ url: `http://127.0.0.1:${closedPort}/` }), "--json"], {
      MY_TOKEN: "implied-token-7f3a9c2e51",
    });
    expect(jsonResult(other).error.kind).toBe("network-policy");
  });

  it("--cloud-token-secret NAME takes the environment variable NAME when no --secret defines it", async () => {
    const result = await cli(["run", "cloud.js", "--cloud-url", origin, "--cloud-token-secret", "CLOUD_PAT", "--json"], { CLOUD_PAT: "pat-from-env-4b8d1e6f93" });
    expect(jsonResult(result), result.stderr).toMatchObject({ ok: true, value: "done" });
    expect(received.find((r) => r.url === "/api/v1/team")?.headers.authorization).toBe("Bearer pat-from-env-4b8d1e6f93");
  });

  it("a network-policy refusal is worded in flags: allow it with --allow-net", async () => {
    const result = await cli(["run", "echo.js", "--input", JSON.stringify({ url: `${origin}/x` })]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`allow it with --allow-net ${origin.slice(7)}`);
    expect(result.stderr).not.toContain("net.allow");
  });
});

describe.concurrent("scriptbox run: scriptbox.config.json", () => {
  it("is read from the script's folder: limits, allowNet, env and envFile (relative to the config)", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    const result = await cli(["run", "configured/job.js", "--input", JSON.stringify({ url: `${origin}/configured` }), "--json"]);
    expect(jsonResult(result), result.stderr).toMatchObject({ ok: true, value: { env: { REGION: "config", FROM_FILE: "yes" }, fetched: 200 } });
    const limited = await cli(["run", "configured/heavy.js", "--input", JSON.stringify({ url: `${origin}/c` }), "--json"]);
    expect(jsonResult(limited).error.message).toMatch(/^limit: maxFetches \(2\) reached/);
  });

  it("flags override it; --no-config ignores it; --config names another file", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    const input = JSON.stringify({ url: `${origin}/c2` });
    const raised = await cli(["run", "configured/heavy.js", "--input", input, "--max-fetches", "3", "--json"]);
    expect(jsonResult(raised)).toMatchObject({ ok: true, value: "three fetches" });
    const ignored = await cli(["run", "configured/job.js", "--no-config", "--input", "{}", "--json"]);
    expect(jsonResult(ignored)).toMatchObject({ ok: true, value: { env: {}, fetched: null } });
    const other = await cli(["run", "env.js", "--config", "configured/scriptbox.config.json", "--json"]);
    expect(jsonResult(other)).toMatchObject({ ok: true, value: { REGION: "config", FROM_FILE: "yes" } });
  });

  it("secrets by environment variable name, and the cloud client, from the config", async () => {
    await mkdir(join(dir, "cloudy"), { recursive: true });
    await writeFile(join(dir, "cloudy/job.js"), FILES["cloud.js"]!);
    await writeFile(
      join(dir, "cloudy/scriptbox.config.json"),
      JSON.stringify({ secrets: { PAT: { env: "CLOUDY_PAT", origins: [origin] } }, cloud: { url: `${origin}/cloudy`, tokenSecret: "PAT" } }),
    );
    const result = await cli(["run", "cloudy/job.js", "--json"], { CLOUDY_PAT: "pat-from-config-2c7e9a4f" });
    expect(jsonResult(result), result.stderr).toMatchObject({ ok: true, value: "done" });
    expect(received.find((r) => r.url === "/cloudy/api/v1/team")?.headers.authorization).toBe("Bearer pat-from-config-2c7e9a4f");
  });

  it("a mistake in it names the file and the key, in the user's units", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    expectUsageError(await cli(["run", "broken/job.js"]), /broken\/scriptbox\.config\.json: limits\.memory "10mb" is below the 24mb minimum$/);
    expectUsageError(await cli(["run", "typo/job.js"]), /typo\/scriptbox\.config\.json: unknown key "allownet" \(known: limits, allowNet, /);
  });
});

describe.concurrent("scriptbox run: usage errors name the flag and the user's units", () => {
  const cases: [string[], RegExp][] = [
    [["--memory", "10mb"], /^scriptbox: --memory 10mb is below the 24mb minimum$/],
    [["--memory", "5gb"], /^scriptbox: --memory 5gb is above the 2gb maximum$/],
    [["--stack", "2mb"], /^scriptbox: --stack 2mb is above the 1mb maximum$/],
    [["--timeout", "0"], /^scriptbox: --timeout 0 is below the 1 minimum$/],
    [["--cpu-time", "2 parsecs"], /^scriptbox: --cpu-time 2 parsecs: expected a duration in ms, or with a unit: 500ms, 2s, 1\.5m$/],
    [["--max-fetches", "1.5"], /^scriptbox: --max-fetches 1\.5: expected a whole number$/],
    [["--limit", "maxFetches=0"], /^scriptbox: --limit maxFetches=0 is below the 1 minimum$/],
    [["--limit", "fetches=3"], /^scriptbox: --limit fetches=3: unknown limit "fetches" \(known: memoryBytes \(--memory\), /],
    [["--limit", "maxFetches"], /^scriptbox: --limit maxFetches: expected name=value/],
    [["--secret", "A=HOME@ftp://files.example"], /^scriptbox: --secret A=HOME@ftp:\/\/files\.example: the origin must start with https:\/\/ or http:\/\//],
    [["--secret", "A=HOME@https://api.example/v1"], /^scriptbox: --secret A=HOME@https:\/\/api\.example\/v1: give an origin only/],
    [["--secret", "1BAD=HOME@https://api.example"], /^scriptbox: --secret 1BAD=HOME@https:\/\/api\.example: invalid secret name "1BAD"/],
    [["--cloud-url", "https://c.example", "--cloud-token-secret", "NO_SUCH_VARIABLE_13B"], /^scriptbox: --cloud-token-secret NO_SUCH_VARIABLE_13B: no secret of that name/],
  ];
  for (const [flags, pattern] of cases) {
    it(flags.join(" "), async () => {
      expectUsageError(await cli(["run", "ok.js", ...flags]), pattern);
    });
  }

  it("with --json, a usage error is also one JSON object on stdout (ours and commander's)", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    for (const [args, message] of [
      [["run", "ok.js", "--memory", "10mb", "--json"], "--memory 10mb is below the 24mb minimum"],
      [["run", "ok.js", "--bogus", "--json"], "unknown option '--bogus'"],
      [["run", "--json"], "missing required argument 'file'"],
    ] as const) {
      const result = await cli([...args]);
      expect(result.code).toBe(2);
      expect(jsonResult(result)).toEqual({ ok: false, error: { kind: "usage", name: "UsageError", message } });
      expect(result.stderr).toContain(message);
    }
  });
});

describe.concurrent("scriptbox run: failures say what happened", () => {
  it("a refused connection prints its cause once, with the script's file:line", async () => {
    const result = await cli(["run", "refused.js", "--allow-net", `127.0.0.1:${closedPort}`, "--input", JSON.stringify({ url: `http://127.0.0.1:${closedPort}/` })]);
    expect(result.code).toBe(1);
    const cause = `connect ECONNREFUSED 127.0.0.1:${closedPort}`;
    expect(result.stderr).toContain(`TypeError: fetch failed: ${cause}\n    at `);
    expect(result.stderr.split(cause)).toHaveLength(2); // once
    expect(result.stderr).toMatch(/refused\.js:2:\d+/);
  });

  it("an unresolvable host says so (ENOTFOUND)", async () => {
    const result = await cli(["run", "refused.js", "--allow-net", "no-such-host.invalid", "--input", JSON.stringify({ url: "http://no-such-host.invalid/" }), "--json"]);
    expect(jsonResult(result).error).toMatchObject({ kind: "script", name: "TypeError", message: "fetch failed: cannot resolve no-such-host.invalid (ENOTFOUND)" });
  });

  it("a TLS failure gives the TLS reason (a self-signed certificate the host does not trust)", async () => {
    const tls = https.createServer(
      { cert: readFileSync(new URL("../host/fetch/fixtures/tls-cert.pem", import.meta.url)), key: readFileSync(new URL("../host/fetch/fixtures/tls-key.pem", import.meta.url)) },
      (_req, res) => res.end("never reached"),
    );
    await new Promise<void>((resolve) => tls.listen(0, "127.0.0.1", resolve));
    try {
      const port = (tls.address() as AddressInfo).port;
      const result = await cli(["run", "refused.js", "--allow-net", `localhost:${port}`, "--input", JSON.stringify({ url: `https://localhost:${port}/` }), "--json"]);
      expect(jsonResult(result).error).toMatchObject({ kind: "script", name: "TypeError", message: "fetch failed: self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)" });
    } finally {
      await new Promise((resolve) => tls.close(resolve));
    }
  });

  it("an unhandled rejection is labelled as one", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    const result = await cli(["run", "rejects.js"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^scriptbox: the script failed \(script\): unhandled promise rejection\nRangeError: nobody handled this\n\s+at .*rejects\.js:1:/);
    const json = jsonResult(await cli(["run", "rejects.js", "--json"]));
    expect(json.error).toMatchObject({ origin: "unhandled-rejection", name: "RangeError" });
  });

  it("a default export that is not a function: a warning without --input, an error with it", { timeout: SEVERAL_SPAWNS_MS }, async () => {
    const note = await cli(["run", "object-default.js"]);
    expect(note.code).toBe(0);
    expect(note.stderr).toContain("[scriptbox] the module's default export is an object, not a function, so it was not called");
    const failed = await cli(["run", "object-default.js", "--input", "{}", "--json"]);
    expect(failed.code).toBe(1);
    expect(jsonResult(failed).error).toMatchObject({ kind: "script", name: "TypeError" });
    expect(jsonResult(failed).error.message).toMatch(/^the module's default export is an object, not a function: the input has nothing to be passed to/);
  });
});
