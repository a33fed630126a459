// Secret strings (tokens, codes, client secrets, keys) and how they are kept at rest.
//
// Every secret is `<prefix><selector><verifier>`: the prefix says what kind of secret it is
// (so a leaked one is recognisable, and a PAT is never mistaken for an access token), the
// selector finds the row by index, and the whole string is stored only as its SHA-256,
// compared in constant time. SHA-256 is enough because every secret has ~190 bits of
// entropy from crypto.randomBytes; a slow password hash buys nothing here.
import { createHash, randomBytes, randomInt, timingSafeEqual } from "node:crypto";

export const TOKEN_PREFIXES = {
  pat: "sbpat_",
  session: "sbsess_",
  accessToken: "sbat_",
  refreshToken: "sbrt_",
  authorizationCode: "sbac_",
  deviceCode: "sbdc_",
  clientSecret: "sbcs_",
  instanceRegistrationKey: "sbirk_",
} as const;
export type SecretKind = keyof typeof TOKEN_PREFIXES;

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SELECTOR_LENGTH = 12;
const VERIFIER_LENGTH = 32;
const SECRET_BODY = new RegExp(`^[0-9A-Za-z]{${SELECTOR_LENGTH + VERIFIER_LENGTH}}$`);

/** Uniformly random characters from `alphabet` (rejection sampling via randomInt). */
export function randomString(length: number, alphabet = BASE62): string {
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** Record ids: `<prefix>_` + 20 base62 characters, e.g. `team_4f9K…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomString(20)}`;
}

/** Shape a record id in a path must have; anything else (`..`, `%2F`, quotes) cannot exist. */
export function idPattern(prefix: string): string {
  return `^${prefix}_[0-9A-Za-z]{1,64}$`;
}

export interface IssuedSecret {
  /** The string handed to the client, once. */
  value: string;
  /** Indexed column that finds the row. */
  selector: string;
  /** SHA-256 of `value`, the only form stored. */
  hash: Buffer;
}

export function issueSecret(kind: SecretKind): IssuedSecret {
  const selector = randomString(SELECTOR_LENGTH);
  const value = `${TOKEN_PREFIXES[kind]}${selector}${randomString(VERIFIER_LENGTH)}`;
  return { value, selector, hash: sha256(value) };
}

/** The selector of a presented secret of this kind, or null when it cannot be one. */
export function selectorOf(kind: SecretKind, presented: string): string | null {
  const prefix = TOKEN_PREFIXES[kind];
  if (!presented.startsWith(prefix)) return null;
  const body = presented.slice(prefix.length);
  return SECRET_BODY.test(body) ? body.slice(0, SELECTOR_LENGTH) : null;
}

/** Which kind of secret a string claims to be, by its prefix. */
export function kindOf(presented: string): SecretKind | null {
  for (const [kind, prefix] of Object.entries(TOKEN_PREFIXES) as [SecretKind, string][]) {
    if (presented.startsWith(prefix)) return kind;
  }
  return null;
}

export function sha256(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/** Constant-time check of a presented secret against a stored SHA-256. */
export function matchesHash(presented: string, storedHash: Buffer | null | undefined): boolean {
  if (!storedHash || storedHash.length !== 32) return false;
  return timingSafeEqual(sha256(presented), storedHash);
}

/** Constant-time equality of two strings (e.g. a PKCE challenge, a CSRF token). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

// RFC 8628 §6.1: user codes from 20 consonants (no vowels: no words; no look-alikes),
// 8 characters ≈ 34.5 bits, shown as XXXX-XXXX and matched case- and dash-insensitively.
const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
export function newUserCode(): string {
  return displayUserCode(randomString(8, USER_CODE_ALPHABET));
}
export function normalizeUserCode(input: string): string {
  return input.toUpperCase().replace(/[\s-]/g, "");
}
export function displayUserCode(input: string): string {
  const code = normalizeUserCode(input);
  return code.length === 8 ? `${code.slice(0, 4)}-${code.slice(4)}` : code;
}

// Voucher codes are typed by people: Crockford base32 without I, L, O, U.
const VOUCHER_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
export function newVoucherCode(): string {
  return `SB-${randomString(4, VOUCHER_ALPHABET)}-${randomString(4, VOUCHER_ALPHABET)}-${randomString(4, VOUCHER_ALPHABET)}`;
}
export function normalizeVoucherCode(input: string): string {
  return input.trim().toUpperCase();
}

/** PKCE S256 (RFC 7636 §4.2): BASE64URL(SHA256(ASCII(code_verifier))). */
export function pkceS256(verifier: string): string {
  return createHash("sha256").update(verifier, "ascii").digest("base64url");
}

/** 32 random bytes, base64url: server keys (e.g. the CSRF HMAC key). */
export function randomKey(): Buffer {
  return randomBytes(32);
}
