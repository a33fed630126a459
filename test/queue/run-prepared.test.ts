// sandbox.runPrepared: what a queue worker runs. The code prepared on another machine (by
// prepareSource or bundleEntryFile) runs as it is, its source map maps the stack back to
// the author's files, and a malformed bundle is a TypeError, not a run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type Sandbox } from "scriptbox";
import { MAX_PREPARED_MAP_BYTES } from "../../host/source-map.js";
import { prepareSource } from "../../host/transpile.js";

let sandbox: Sandbox;

describe("sandbox.runPrepared", () => {
  beforeAll(async () => {
    sandbox = await createSandbox();
  });
  afterAll(async () => {
    await sandbox.dispose();
  });

  it("runs prepared TypeScript with its input, and maps a stack through the source map", async () => {
    const prepared = await prepareSource("type N = number;\nexport default (n: N): N => {\n  if (n < 0) throw new Error('neg');\n  return n * 2;\n};\n", "double.ts");
    expect(prepared.map).not.toBeNull();
    expect(await sandbox.runPrepared(prepared, { input: 4 })).toMatchObject({ ok: true, value: 8 });
    const failed = await sandbox.runPrepared(prepared, { input: -1 });
    expect(failed.ok).toBe(false);
    if (!failed.ok) expect(failed.error.stack).toMatch(/double\.ts:3:\d+/);
  });

  it("does not transpile again: TypeScript left in the code is a syntax error, even under a .ts name", async () => {
    const result = await sandbox.runPrepared({ code: "export default (n: number) => n;", filename: "raw.ts", map: null }, { input: 1 });
    expect(result.ok ? "ok" : result.error.kind).toBe("syntax");
  });

  it("refuses a malformed bundle with a TypeError", async () => {
    await expect(sandbox.runPrepared(null as never)).rejects.toThrow(TypeError);
    await expect(sandbox.runPrepared({ code: 1, filename: "x.js", map: null } as never)).rejects.toThrow(/prepared\.code/);
    await expect(sandbox.runPrepared({ code: "1", filename: "x.js", map: 5 } as never)).rejects.toThrow(/prepared\.map/);
    await expect(sandbox.runPrepared({ code: "1", filename: "a\nb", map: null })).rejects.toThrow(/filename/);
    await expect(sandbox.runPrepared({ code: "1", filename: "x.js", map: null }, { input: () => 1 })).rejects.toThrow(/cannot cross/);
  });

  it("checks a source map before the run: one that is not a v3 map, or too big to decode on this thread, is a TypeError", async () => {
    // The map is only decoded when a run fails: checked after the run, a bad map would fail
    // a job whose script had already had its effects (and pass a run that succeeded).
    const ok = { code: "export default () => 1", filename: "x.js" };
    await expect(sandbox.runPrepared({ ...ok, map: "not a source map" })).rejects.toThrow(/prepared\.map is not a source map/);
    await expect(sandbox.runPrepared({ ...ok, map: "{}" })).rejects.toThrow(/version 3 source map/);
    await expect(sandbox.runPrepared({ ...ok, map: "null" })).rejects.toThrow(/version 3 source map/);
    const huge = JSON.stringify({ version: 3, sources: ["a.ts"], names: [], mappings: "AAAA,".repeat((MAX_PREPARED_MAP_BYTES / 5) + 1) });
    await expect(sandbox.runPrepared({ ...ok, map: huge })).rejects.toThrow(/prepared\.map is larger than/);
    const small = JSON.stringify({ version: 3, sources: ["a.ts"], names: [], mappings: "AAAA" });
    expect(await sandbox.runPrepared({ ...ok, map: small })).toMatchObject({ ok: true, value: 1 });
  });
});
