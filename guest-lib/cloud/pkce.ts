// RFC 7636 PKCE with S256: a verifier from 32 random bytes (§4.1 recommends exactly this)
// and its challenge BASE64URL(SHA-256(ASCII(verifier))) (§4.2).
import bridge from "scriptbox:bridge";
import { fail } from "./args";
import { sha256 } from "./sha256";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** base64url without padding (RFC 7636 Appendix A). */
export function base64url(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = Math.min(4, Math.ceil(((bytes.length - i) * 8) / 6));
    for (let j = 0; j < chars; j++) text += ALPHABET[(n >> (18 - 6 * j)) & 63];
  }
  return text;
}

export function verifier(): string {
  return base64url(new Uint8Array(bridge.randomBytes(32)));
}

export function challenge(codeVerifier: string): string {
  // §4.1: 43-128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~".
  if (typeof codeVerifier !== "string" || !/^[A-Za-z0-9\-._~]{43,128}$/.test(codeVerifier)) {
    fail("oauth.pkce.challenge", "the verifier", "43-128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636 §4.1)", codeVerifier);
  }
  const bytes = new Uint8Array(codeVerifier.length);
  for (let i = 0; i < bytes.length; i++) bytes[i] = codeVerifier.charCodeAt(i);
  return base64url(sha256(bytes));
}
