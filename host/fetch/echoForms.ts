// The forms of a secret's value that a server echoing it can produce, as patterns for
// echoScanner.ts (which adds the per-character escapes on top of each):
//   - its characters, one code point per byte as it went on the wire (latin1);
//   - the code points its bytes spell as UTF-8, when they are valid UTF-8 with a
//     multi-byte sequence (a server that decodes headers as UTF-8, then escapes \u20ac);
//     both of these in any letter case: a server may fold the case of what it echoes (a
//     URL's host is lower-cased by every URL parser: a redirect to `http://<VALUE>.evil/`
//     built from a header the script chose showed the value lower-cased in the refusal;
//     for a key in one letter case, such as upper-case hex, that is the value itself);
//   - base64 and base64url of its bytes, and of its characters re-encoded as UTF-8, at each
//     of the three alignments it can have inside a longer base64 text ("user:" + value).
//     An unaligned form's edge characters mix the value's bits with its neighbours': they
//     are part of the pattern as the set of characters consistent with the value's bits,
//     optional, so a match covers them and no bit of the value is left outside it.
import type { EchoPattern } from "./echoScanner.js";

const STANDARD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

export function echoPatterns(value: string): EchoPattern[] {
  const latin1 = Buffer.from(value, "latin1");
  const patterns: EchoPattern[] = [literal([...latin1])];
  const utf8Reading = new TextDecoder("utf-8", { fatal: false }).decode(latin1);
  const codePoints = [...utf8Reading].map((c) => c.codePointAt(0)!);
  if (!codePoints.includes(0xfffd) && codePoints.length !== latin1.length) patterns.push(literal(codePoints));
  const byteForms = [latin1];
  const reencoded = Buffer.from(value, "utf8");
  if (!reencoded.equals(latin1)) byteForms.push(reencoded);
  for (const bytes of byteForms) for (let align = 0; align < 3; align++) patterns.push(base64Pattern(bytes, align));
  return patterns;
}

/**
 * The code points, each in any letter case it has (its lower- and upper-case forms of one
 * code point), and a backslash also as a slash: the URL parser writes `\` as `/` in a
 * URL of a special scheme, so a value with a backslash echoed into a redirect's path
 * reached the script in `response.url` (found by review).
 */
function literal(codes: number[]): EchoPattern {
  return { elements: codes.map(echoedForms), optionalFirst: false, optionalLast: false };
}

function echoedForms(code: number): number[] {
  const char = String.fromCodePoint(code);
  const forms = new Set([code]);
  if (code === 0x5c) forms.add(0x2f);
  for (const folded of [char.toLowerCase(), char.toUpperCase()]) {
    const folds = [...folded];
    if (folds.length === 1) forms.add(folds[0]!.codePointAt(0)!);
  }
  return [...forms];
}

/** The base64 characters covering `bytes` placed after `align` other bytes; edge characters as sets. */
function base64Pattern(bytes: Uint8Array, align: number): EchoPattern {
  const firstBit = 8 * align;
  const endBit = firstBit + 8 * bytes.length;
  const bit = (b: number) => (bytes[(b - firstBit) >> 3]! >> (7 - ((b - firstBit) & 7))) & 1;
  const elements: number[][] = [];
  const firstChar = Math.floor(firstBit / 6);
  const endChar = Math.ceil(endBit / 6);
  for (let j = firstChar; j < endChar; j++) {
    // Which 6-bit values agree with the value's bits inside this character.
    const values: number[] = [];
    for (let v = 0; v < 64; v++) {
      let ok = true;
      for (let k = 0; k < 6 && ok; k++) {
        const b = 6 * j + k;
        if (b >= firstBit && b < endBit) ok = ((v >> (5 - k)) & 1) === bit(b);
      }
      if (ok) values.push(v);
    }
    const chars = new Set<number>();
    for (const v of values) {
      chars.add(STANDARD.charCodeAt(v));
      chars.add(URL_SAFE.charCodeAt(v));
    }
    elements.push([...chars]);
  }
  return { elements, optionalFirst: firstBit % 6 !== 0, optionalLast: endBit % 6 !== 0 };
}
