// Weak secrets are called out: a value a script could find by guessing (docs/network.md
// "Threat model") is refused at createSandbox with a message that says why, unless the
// embedder opts in for that secret with weak: true.
import { createSandbox, runScript } from "scriptbox";
import { describe, expect, test } from "vitest";
import { secretWeakness } from "../../host/fetch/secretStrength.js";

const ORIGIN = "https://api.example.com";

describe("the rule (host/fetch/secretStrength.ts)", () => {
  test.each([
    ["a 6-digit PIN", "483920"],
    ["a dictionary password", "Summer2024!"],
    ["15 random characters", "xK9#mQ2$vL7@pR4"],
    ["20 digits (66 bits by size, but a period of 5)", "12345123451234512345"],
    ["a repeated character", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
    ["a run", "abcdefghijklmnopqrstuvwxyz"],
    ["16 lower-case letters of one repeated pair", "abababababababab"],
  ])("weak: %s", (_name, value) => {
    expect(secretWeakness(value)).not.toBeNull();
  });

  test.each([
    ["a GitHub-style token", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"],
    ["32 hex characters (128 bits)", "9f86d081884c7d659a2feaa0c55ad015"],
    ["a UUID", "3f2b8c1e-9d4a-4e7b-a1c5-6f0e2d9b8a73"],
    ["16 random base64url characters (96 bits)", "q3Vb-8Kx_Zr1Tn0W"],
    ["20 random digits", "83910274651829304718"],
  ])("strong: %s", (_name, value) => {
    expect(secretWeakness(value)).toBeNull();
  });
});

describe("createSandbox", () => {
  test("refuses a weak value with a message that explains the guessing attack and the opt-in, and never shows the value", async () => {
    const error = await createSandbox({ secrets: { PIN: { value: "483920", origins: [ORIGIN] } } }).then(
      () => null,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect(error!.message).toMatch(/^secrets\.PIN is weak: it is shorter than 16 characters\. /);
    expect(error!.message).toMatch(/test guesses of it through an origin the secret is bound to that echoes what it is sent/);
    expect(error!.message).toMatch(/weak: true \(CLI: --weak-secret PIN\)/);
    expect(error!.message).not.toContain("483920");
  });

  test("weak: true accepts it, for that secret only", async () => {
    const result = await runScript(`import { secret } from "runtime"; export default () => secret("PIN").startsWith("scriptbox-secret.PIN.")`, {
      secrets: { PIN: { value: "483920", origins: [ORIGIN], weak: true } },
    });
    expect(result).toMatchObject({ ok: true, value: true });
    await expect(
      createSandbox({ secrets: { PIN: { value: "483920", origins: [ORIGIN], weak: true }, CODE: { value: "letmein", origins: [ORIGIN] } } }),
    ).rejects.toThrow(/^secrets\.CODE is weak/);
  });

  test("weak must be a boolean", async () => {
    await expect(createSandbox({ secrets: { PIN: { value: "483920", origins: [ORIGIN], weak: "yes" as never } } })).rejects.toThrow("secrets.PIN.weak must be a boolean");
  });
});
