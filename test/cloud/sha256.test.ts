// The SHA-256 behind PKCE's S256 (QuickJS has no Web Crypto digest): FIPS 180-2 Appendix B
// example vectors, every length around the padding boundaries against node:crypto, and
// RFC 7636 Appendix B end to end inside a sandbox (the QuickJS build, not V8).
import { createHash, randomBytes } from "node:crypto";
import { runScript } from "scriptbox";
import { expect, test } from "vitest";
import { sha256 } from "../../guest-lib/cloud/sha256.js";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const ascii = (text: string) => new Uint8Array(Buffer.from(text, "latin1"));

test("FIPS 180-2 Appendix B vectors: one block, two blocks, a million 'a'", () => {
  expect(hex(sha256(ascii("abc")))).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  expect(hex(sha256(ascii("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")))).toBe(
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  expect(hex(sha256(ascii("a".repeat(1_000_000))))).toBe("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  expect(hex(sha256(new Uint8Array(0)))).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
});

test("every length 0-300 (all padding cases) matches node:crypto", () => {
  for (let length = 0; length <= 300; length++) {
    const data = randomBytes(length);
    expect(hex(sha256(new Uint8Array(data))), `length ${length}`).toBe(createHash("sha256").update(data).digest("hex"));
  }
});

test("inside QuickJS: RFC 7636 Appendix B, and random verifiers against node:crypto", async () => {
  const verifiers = Array.from({ length: 40 }, (_, i) => randomBytes(32 + i * 2).toString("base64url").slice(0, 43 + i * 2));
  const result = await runScript(
    `import { cloud } from "cloud";
     export default (verifiers) => ({
       rfc: cloud.oauth.pkce.challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
       challenges: verifiers.map((v) => cloud.oauth.pkce.challenge(v)),
       fresh: [cloud.oauth.pkce.verifier(), cloud.oauth.pkce.verifier()],
     });`,
    { input: verifiers },
  );
  if (!result.ok) expect.fail(result.error.stack);
  const value = result.value as { rfc: string; challenges: string[]; fresh: string[] };
  expect(value.rfc).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  expect(value.challenges).toEqual(verifiers.map((v) => createHash("sha256").update(v).digest("base64url")));
  for (const verifier of value.fresh) expect(verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(value.fresh[0]).not.toBe(value.fresh[1]);
});
