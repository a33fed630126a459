// HTML §8.3 atob and btoa (forgiving-base64), on strings of U+0000-U+00FF.
import { DOMException } from "./dom-exception";
import { toDOMString } from "./webidl";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const fromCharCode = String.fromCharCode;

const invalid = () => new DOMException("The string to be decoded is not correctly encoded.", "InvalidCharacterError");

export function atob(data: string): string {
  if (arguments.length === 0) throw new TypeError("atob: 1 argument required");
  let s = toDOMString(data).replace(/[\t\n\f\r ]+/g, "");
  if (s.length % 4 === 0) s = s.replace(/={1,2}$/, "");
  if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw invalid();
  const out: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    buffer = (buffer << 6) | ALPHABET.indexOf(s[i]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((buffer >> bits) & 0xff);
    }
  }
  const parts: string[] = [];
  for (let i = 0; i < out.length; i += 8192) parts.push(fromCharCode.apply(null, out.slice(i, i + 8192)));
  return parts.join("");
}

export function btoa(data: string): string {
  if (arguments.length === 0) throw new TypeError("btoa: 1 argument required");
  const s = toDOMString(data);
  if (/[^\x00-\xff]/.test(s)) throw invalid();
  let out = "";
  for (let i = 0; i < s.length; i += 3) {
    const a = s.charCodeAt(i);
    const b = s.charCodeAt(i + 1);
    const c = s.charCodeAt(i + 2);
    const n = (a << 16) | ((b || 0) << 8) | (c || 0);
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + (i + 1 < s.length ? ALPHABET[(n >> 6) & 63] : "=") + (i + 2 < s.length ? ALPHABET[n & 63] : "=");
  }
  return out;
}
