// Issue 13 §3: crypto.subtle in a real sandbox, against the standards' own test vectors:
// FIPS 180-4 examples (NIST CSRC "Examples with intermediate values") for SHA-1/256/384/512,
// RFC 4231 for HMAC-SHA-256/384/512 and RFC 2202 for HMAC-SHA-1; and the Web Crypto API's
// rules for keys (W3C Web Cryptography API §14.3 SubtleCrypto methods, §29 HMAC).
import { describe, expect, it } from "vitest";
import { runScript } from "scriptbox";

const HEX = `const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
const bytes = (s) => new Uint8Array(Array.from(s, (c) => c.charCodeAt(0)));`;

async function guest<T>(body: string, input?: unknown): Promise<T> {
  const result = await runScript(`${HEX}\nexport default async (input) => {\n${body}\n};`, { filename: "webcrypto.js", input, limits: { memoryBytes: 128 * 1024 * 1024 } });
  if (!result.ok) expect.fail(`sandbox run failed: ${JSON.stringify(result.error)}`);
  return result.value as T;
}

const M448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
const M896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

describe("crypto.subtle.digest: FIPS 180-4 examples", () => {
  const VECTORS: [hash: string, message: string, digest: string][] = [
    ["SHA-1", "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"],
    ["SHA-1", M448, "84983e441c3bd26ebaae4aa1f95129e5e54670f1"],
    ["SHA-1", "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"],
    ["SHA-256", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
    ["SHA-256", M448, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"],
    ["SHA-256", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    ["SHA-384", "abc", "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"],
    ["SHA-384", M896, "09330c33f71147e83d192fc782cd1b4753111b173b3b05d22fa08086e3b0f712fcc7c71a557e2db966c3e9fa91746039"],
    ["SHA-512", "abc", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"],
    ["SHA-512", M896, "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"],
  ];

  it("gives the published digests, for ArrayBuffer and view inputs, with case-insensitive names", async () => {
    const out = await guest<string[]>(
      `const results = [];
       for (const [hash, message] of input) {
         results.push(hex(await crypto.subtle.digest(hash, bytes(message))));
       }
       // Same digest from an ArrayBuffer, a DataView over part of a buffer, and { name } in lower case.
       const padded = bytes("xxabcxx");
       results.push(hex(await crypto.subtle.digest({ name: "sha-256" }, new DataView(padded.buffer, 2, 3))));
       results.push(hex(await crypto.subtle.digest("Sha-256", bytes("abc").buffer)));
       return results;`,
      VECTORS.map(([hash, message]) => [hash, message]),
    );
    expect(out).toEqual([...VECTORS.map(([, , digest]) => digest), VECTORS[3]![2], VECTORS[3]![2]]);
  });

  it("one million repetitions of 'a' (FIPS 180 long message)", async () => {
    const digest = await guest<string>(`return hex(await crypto.subtle.digest("SHA-256", new Uint8Array(1e6).fill(0x61)));`);
    expect(digest).toBe("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  });

  it("rejects (never throws) on an unknown algorithm or data that is not a BufferSource", async () => {
    const out = await guest<string[]>(`
      const outcomes = [];
      for (const [alg, data] of [["MD5", new Uint8Array(1)], ["SHA-256", "abc"], [{}, new Uint8Array(1)], ["SHA-256", [1, 2]]]) {
        let p;
        try { p = crypto.subtle.digest(alg, data); } catch (e) { outcomes.push("threw " + e.name); continue; }
        await p.then(() => outcomes.push("resolved"), (e) => outcomes.push(e.name));
      }
      return outcomes;`);
    expect(out).toEqual(["NotSupportedError", "TypeError", "TypeError", "TypeError"]);
  });
});

describe("HMAC: RFC 4231 and RFC 2202 test cases", () => {
  const key20x0b = "0b".repeat(20);
  const keyAA131 = "aa".repeat(131);
  const CASES: [name: string, hash: string, keyHex: string, dataHex: string, mac: string][] = [
    ["RFC 4231 4.2", "SHA-256", key20x0b, Buffer.from("Hi There").toString("hex"), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"],
    ["RFC 4231 4.2", "SHA-384", key20x0b, Buffer.from("Hi There").toString("hex"), "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6"],
    ["RFC 4231 4.2", "SHA-512", key20x0b, Buffer.from("Hi There").toString("hex"), "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"],
    ["RFC 4231 4.3", "SHA-256", Buffer.from("Jefe").toString("hex"), Buffer.from("what do ya want for nothing?").toString("hex"), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"],
    ["RFC 4231 4.3", "SHA-384", Buffer.from("Jefe").toString("hex"), Buffer.from("what do ya want for nothing?").toString("hex"), "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649"],
    ["RFC 4231 4.3", "SHA-512", Buffer.from("Jefe").toString("hex"), Buffer.from("what do ya want for nothing?").toString("hex"), "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"],
    ["RFC 4231 4.4", "SHA-256", "aa".repeat(20), "dd".repeat(50), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"],
    ["RFC 4231 4.5", "SHA-256", Buffer.from(Array.from({ length: 25 }, (_, i) => i + 1)).toString("hex"), "cd".repeat(50), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"],
    ["RFC 4231 4.7", "SHA-256", keyAA131, Buffer.from("Test Using Larger Than Block-Size Key - Hash Key First").toString("hex"), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"],
    [
      "RFC 4231 4.8",
      "SHA-256",
      keyAA131,
      Buffer.from("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.").toString("hex"),
      "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
    ],
    ["RFC 2202 2", "SHA-1", key20x0b, Buffer.from("Hi There").toString("hex"), "b617318655057264e28bc0b6fb378c8ef146be00"],
  ];

  it("importKey(raw) + sign gives each published MAC, and verify accepts it and refuses a changed one", async () => {
    const out = await guest<{ mac: string; ok: boolean; tampered: boolean; short: boolean }[]>(
      `const fromHex = (h) => new Uint8Array(h.match(/../g)?.map((x) => parseInt(x, 16)) ?? []);
       const results = [];
       for (const [hash, keyHex, dataHex] of input) {
         const key = await crypto.subtle.importKey("raw", fromHex(keyHex), { name: "HMAC", hash }, false, ["sign", "verify"]);
         const data = fromHex(dataHex);
         const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, data));
         const ok = await crypto.subtle.verify({ name: "HMAC" }, key, mac, data);
         const changed = mac.slice(); changed[0] ^= 1;
         const tampered = await crypto.subtle.verify("HMAC", key, changed, data);
         const short = await crypto.subtle.verify("HMAC", key, mac.slice(0, 16), data);
         results.push({ mac: hex(mac), ok, tampered, short });
       }
       return results;`,
      CASES.map(([, hash, keyHex, dataHex]) => [hash, keyHex, dataHex]),
    );
    expect(out).toEqual(CASES.map(([, , , , mac]) => ({ mac, ok: true, tampered: false, short: false })));
  });

  it("a JWK round trip (RFC 7518 §6.4 oct key) signs the same; generateKey uses the hash's block size", async () => {
    const out = await guest<Record<string, unknown>>(`
      const raw = new TextEncoder().encode("Jefe");
      const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, true, ["sign"]);
      const jwk = await crypto.subtle.exportKey("jwk", key);
      const again = await crypto.subtle.importKey("jwk", jwk, { name: "HMAC", hash: { name: "SHA-256" } }, false, ["sign"]);
      const data = new TextEncoder().encode("what do ya want for nothing?");
      const g256 = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, true, ["sign", "verify"]);
      const g512 = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-512", length: 200 }, true, ["verify"]);
      return {
        jwk,
        same: hex(await crypto.subtle.sign("HMAC", again, data)),
        algorithm: key.algorithm, type: key.type, extractable: again.extractable, usages: again.usages,
        g256: [g256.algorithm.length, (await crypto.subtle.exportKey("raw", g256)).byteLength],
        g512: [g512.algorithm.length, (await crypto.subtle.exportKey("raw", g512)).byteLength],
        distinct: hex(await crypto.subtle.exportKey("raw", g256)) !== hex(await crypto.subtle.exportKey("raw", await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, true, ["sign"]))),
        tag: Object.prototype.toString.call(key), isKey: key instanceof CryptoKey, subtle: crypto.subtle instanceof SubtleCrypto,
      };`);
    expect(out).toEqual({
      jwk: { kty: "oct", k: "SmVmZQ", alg: "HS256", key_ops: ["sign"], ext: true },
      same: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
      algorithm: { name: "HMAC", hash: { name: "SHA-256" }, length: 32 },
      type: "secret",
      extractable: false,
      usages: ["sign"],
      g256: [512, 64],
      g512: [200, 25],
      distinct: true,
      tag: "[object CryptoKey]",
      isKey: true,
      subtle: true,
    });
  });

  it("keys obey their usages and extractability; unsupported operations reject with NotSupportedError", async () => {
    const out = await guest<Record<string, string>>(`
      const name = (p) => p.then(() => "resolved", (e) => e.name);
      const raw = new Uint8Array(16);
      const signOnly = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      return {
        verifyWithSignOnly: await name(crypto.subtle.verify("HMAC", signOnly, new Uint8Array(32), raw)),
        exportNonExtractable: await name(crypto.subtle.exportKey("raw", signOnly)),
        noUsages: await name(crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, true, [])),
        encryptUsage: await name(crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, true, ["encrypt"])),
        emptyKey: await name(crypto.subtle.importKey("raw", new Uint8Array(0), { name: "HMAC", hash: "SHA-256" }, true, ["sign"])),
        wrongLength: await name(crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256", length: 64 }, true, ["sign"])),
        aes: await name(crypto.subtle.importKey("raw", raw, "AES-GCM", true, ["encrypt"])),
        pkcs8: await name(crypto.subtle.importKey("pkcs8", raw, { name: "HMAC", hash: "SHA-256" }, true, ["sign"])),
        encrypt: await name(crypto.subtle.encrypt({ name: "AES-GCM" }, signOnly, raw)),
        badJwk: await name(crypto.subtle.importKey("jwk", { kty: "RSA" }, { name: "HMAC", hash: "SHA-256" }, true, ["sign"])),
        notAKey: await name(crypto.subtle.sign("HMAC", { type: "secret" }, raw)),
        newKey: (() => { try { new CryptoKey(); return "constructed"; } catch (e) { return e.name; } })(),
      };`);
    expect(out).toEqual({
      verifyWithSignOnly: "InvalidAccessError",
      exportNonExtractable: "InvalidAccessError",
      noUsages: "SyntaxError",
      encryptUsage: "SyntaxError",
      emptyKey: "DataError",
      wrongLength: "DataError",
      aes: "NotSupportedError",
      pkcs8: "NotSupportedError",
      encrypt: "NotSupportedError",
      badJwk: "DataError",
      notAKey: "TypeError",
      newKey: "TypeError",
    });
  });

  it("the key bytes are not reachable from the CryptoKey object", async () => {
    const out = await guest<unknown>(`
      const key = await crypto.subtle.importKey("raw", new TextEncoder().encode("secret-key-bytes"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      return [Object.getOwnPropertyNames(key), Object.getOwnPropertySymbols(key).length, JSON.stringify(key)];`);
    expect(out).toEqual([[], 0, "{}"]);
  });
});
