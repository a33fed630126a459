// Issue 2 §9: crypto.getRandomValues and crypto.randomUUID from the host's CSPRNG
// (Web Crypto API §10.1.1 getRandomValues, §10.1.2 randomUUID).
import { describe, expect, it } from "vitest";
import { runScript } from "scriptbox";

describe("crypto", () => {
  it("getRandomValues fills integer typed arrays in place and returns them", async () => {
    const result = await runScript(`export default () => {
      const a = new Uint8Array(64), b = new Uint32Array(16), c = new BigInt64Array(2);
      const same = crypto.getRandomValues(a) === a;
      crypto.getRandomValues(b); crypto.getRandomValues(c);
      const view = new Uint8Array(8); crypto.getRandomValues(view.subarray(2, 4));
      return { a: Array.from(a), b: Array.from(b), same, viewEdges: [view[0], view[1], view[4], view[7]] };
    }`);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const value = result.value as { a: number[]; b: number[]; same: boolean; viewEdges: number[] };
    expect(value.same).toBe(true);
    expect(new Set(value.a).size).toBeGreaterThan(20); // 64 random bytes are not a handful of values
    expect(value.b.some((n) => n > 0xffff)).toBe(true);
    expect(value.viewEdges).toEqual([0, 0, 0, 0]); // only the subarray was filled
  });

  it("getRandomValues refuses non-integer arrays and more than 65,536 bytes with DOMExceptions", async () => {
    const result = await runScript(`export default () => {
      const names = [];
      for (const arg of [new Float64Array(1), new DataView(new ArrayBuffer(1)), "x", new Uint8Array(65537)]) {
        try { crypto.getRandomValues(arg) } catch (e) { names.push(e.name) }
      }
      crypto.getRandomValues(new Uint8Array(65536));
      return names;
    }`);
    expect(result).toMatchObject({ ok: true, value: ["TypeMismatchError", "TypeMismatchError", "TypeMismatchError", "QuotaExceededError"] });
  });

  it("randomUUID returns distinct version 4 UUIDs", async () => {
    const result = await runScript("export default () => Array.from({ length: 50 }, () => crypto.randomUUID())");
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const ids = result.value as string[];
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(50);
  });
});
