// Issue 10 §9 (options) and §6 (configurePool): option validation reads own properties
// only; "__proto__" is refused as an env or secret name with a clear error instead of
// being silently lost; pool sizes are validated.
import { describe, expect, it } from "vitest";
import { configurePool, createSandbox, runScript } from "scriptbox";

const secret = { value: "s3cret-7Hq2-xV9m-Lk4p", origins: ["https://api.example.com"] };

describe("sandbox options use own properties only", () => {
  it("limits: { toString: 1 } is an unknown limit, not a crash", async () => {
    await expect(createSandbox({ limits: { toString: 1 } as never })).rejects.toThrow(/limits\.toString is not a known limit/);
    await expect(createSandbox({ limits: { constructor: 1 } as never })).rejects.toThrow(/limits\.constructor is not a known limit/);
  });

  it("cloud.token.secret must name an own secret: 'toString' is refused", async () => {
    const cloud = { baseUrl: "https://api.example.com", token: { secret: "toString" } };
    await expect(createSandbox({ cloud })).rejects.toThrow(/cloud\.token\.secret must name one of the sandbox's secrets/);
    await expect(createSandbox({ secrets: { PAT: secret }, cloud: { ...cloud, token: { secret: "PAT" }, session: { secret: "hasOwnProperty" } } })).rejects.toThrow(
      /cloud\.session\.secret must name one of the sandbox's secrets \(PAT\)/,
    );
  });

  it("an own __proto__ key in env or secrets is refused with a clear error", async () => {
    const env = JSON.parse('{"__proto__": "x", "REGION": "eu"}') as Record<string, string>;
    expect(Object.keys(env)).toContain("__proto__");
    await expect(createSandbox({ env })).rejects.toThrow('env key "__proto__" is not allowed');
    const secrets = JSON.parse(`{"__proto__": ${JSON.stringify(secret)}}`) as Record<string, typeof secret>;
    await expect(createSandbox({ secrets })).rejects.toThrow('secret name "__proto__" is not allowed');
  });

  it("inherited options are not options: a prototype cannot switch limits or the network on", async () => {
    const inherited = Object.create({ limits: { cpuTimeMs: 1 }, net: { allow: ["example.com"] } }) as object;
    const result = await runScript("export default () => 'ran with defaults'", inherited);
    expect(result).toMatchObject({ ok: true, value: "ran with defaults" });
    const sandbox = await createSandbox(Object.create({ env: { LEAKED: "yes" } }) as object);
    const env = await sandbox.run('import { env } from "runtime"; export default () => env.LEAKED ?? "absent"');
    expect(env).toMatchObject({ ok: true, value: "absent" });
    await sandbox.dispose();
  });

  it("a secret's inherited value or origins are not taken", async () => {
    const spec = Object.create({ value: "inherited", origins: ["https://api.example.com"] }) as typeof secret;
    await expect(createSandbox({ secrets: { PAT: spec } })).rejects.toThrow("secrets.PAT.value must be a string");
  });
});

describe("configurePool", () => {
  it("validates its options and returns the sizes in force", () => {
    expect(() => configurePool({ sharedWorkers: 0 })).toThrow(/sharedWorkers must be an integer from 1/);
    expect(() => configurePool({ maxIsolatedWorkers: 2.5 })).toThrow(RangeError);
    expect(() => configurePool({ workers: 2 } as never)).toThrow(/unknown pool option "workers"/);
    expect(() => configurePool({ toString: 1 } as never)).toThrow(/unknown pool option "toString"/);
    const sizes = configurePool({ sharedWorkers: 2, maxIsolatedWorkers: 3 });
    expect(sizes).toMatchObject({ sharedWorkers: 2, maxIsolatedWorkers: 3, warmSandboxesPerWorker: 3, idleIsolatedWorkers: 2 });
    // Unchanged sizes stay as they were.
    expect(configurePool({})).toEqual(sizes);
  });
});
