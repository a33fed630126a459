// Encoding §9.1 UTF-8 encode: large strings are encoded by the host (bridge utf8Encode);
// the result must be byte for byte what the guest's own encoder gives for short strings.
import { describe, expect, it } from "vitest";
import { runScript } from "scriptbox";

describe("Encoding §9.1 UTF-8 encode of large strings (host path)", () => {
  it("matches the guest encoder byte for byte, NULs, lone surrogates (U+FFFD) and astral characters included", async () => {
    const result = await runScript(`export default () => {
      const unit = "aé€😀\\u0000\\ud800x\\udc00";
      const enc = new TextEncoder();
      const small = enc.encode(unit);              // guest path
      const big = enc.encode(unit.repeat(5000));   // host path (over the threshold)
      let same = big.length === small.length * 5000;
      for (let i = 0; same && i < big.length; i++) same = big[i] === small[i % small.length];
      return { same, small: Array.from(small), blobSize: new Blob([unit.repeat(5000)]).size, text: new TextDecoder().decode(big).slice(0, 9) };
    }`);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const value = result.value as { same: boolean; small: number[]; blobSize: number; text: string };
    expect(value.same).toBe(true);
    expect(value.small).toEqual([...Buffer.from("aé€😀\u0000\ufffdx\ufffd", "utf8")]);
    expect(value.blobSize).toBe(value.small.length * 5000);
    expect(value.text).toBe("aé€😀\u0000\ufffdx\ufffd");
  });
});
