// Finds a secret's value in text a server sent back, however the server escaped it.
//
// A pattern is a sequence of characters (code points; an element may allow several). The
// text is read as a sequence of *units*, each standing for one or more code points, and at
// every position every reading is tried, so a pattern is found whichever subset of its
// characters was escaped and in whichever of these ways (hex digits in either case):
//
//   raw            the character itself; a UTF-8 byte sequence for it (text read as bytes,
//                  or a UTF-8 body shown as latin1); a UTF-16 surrogate pair
//   URL            %XX (one byte: the character if below 0x80, its latin1 code otherwise),
//                  %XX%XX… (a UTF-8 sequence), %uXXXX (JavaScript's escape()), + for space
//   JSON / JS      \" \\ \/ \' \b \f \n \r \t, \uXXXX (and surrogate pairs), \xXX
//   HTML / XML     &#DDD; &#xHHH; (leading zeros, ; optional), named references (the
//                  HTML 5 list, legacy names without ;, via the `entities` package)
//   lossy          in a reason phrase undici decoded as UTF-8, U+FFFD stands for 1-3 bytes
//                  at or above 0x80 it could not decode
//
// One layer only: an encoding applied twice (%252F, \u0026amp;) is not undone. Matching is
// a small NFA per candidate start (the states are (pattern index, text position)); start
// positions are filtered with a table of the bytes that can begin a unit for the pattern's
// first element, so plain text costs one table lookup per byte.
import { createRequire } from "node:module";
import type * as Entities from "entities/decode";

// The HTML entity tables (entities/decode) are loaded at the first named reference a scan
// meets, not when the package is imported.
const require = createRequire(import.meta.url);
let entities: typeof Entities | undefined;
const entityLibrary = (): typeof Entities => (entities ??= require("entities/decode") as typeof Entities);

export interface EchoPattern {
  /** Allowed code points per position. */
  readonly elements: readonly (readonly number[])[];
  /** The first / last element may be missing (the partial edge characters of a base64 form). */
  readonly optionalFirst: boolean;
  readonly optionalLast: boolean;
}

/** Text to scan: bytes (a body, a latin1 header) or UTF-16 code units (a decoded string). */
export interface ScanSource {
  readonly codes: Uint8Array | Uint16Array;
  /** U+FFFD may stand for 1-3 undecodable bytes (a reason phrase undici decoded as UTF-8). */
  readonly lossy: boolean;
}

export interface Span {
  start: number;
  end: number;
  /** The tag of the pattern that matched. */
  tag: number;
}

interface Unit {
  len: number;
  /** The code points it stands for; empty for the lossy wildcard. */
  codes: number[];
  wildcard?: boolean;
}

const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const AMPERSAND = 0x26;
const PLUS = 0x2b;
const HASH = 0x23;
const SEMICOLON = 0x3b;
const REPLACEMENT = 0xfffd;
const SIMPLE_ESCAPES: Record<number, number> = {
  0x22: 0x22, // \"
  0x5c: 0x5c, // \\
  0x2f: 0x2f, // \/
  0x27: 0x27, // \'
  0x62: 0x08, // \b
  0x66: 0x0c, // \f
  0x6e: 0x0a, // \n
  0x72: 0x0d, // \r
  0x74: 0x09, // \t
};
/** Longest named reference in HTML 5 is 33 characters with & and ;. */
const MAX_REFERENCE = 40;

/** A pattern compiled for scanning. */
export class CompiledPattern {
  readonly elements: readonly (readonly number[])[];
  readonly optionalFirst: boolean;
  readonly optionalLast: boolean;
  /** Per element: whether it allows some code at or above 0x80 (what a lossy U+FFFD can stand for). */
  readonly #high: boolean[];
  /** starts[b]: a unit beginning with code b can stand for the first (or, if optional, second) element. */
  readonly starts = new Uint8Array(256);
  readonly startsAboveLatin1: boolean;
  /** unitStarts[k][b]: a unit beginning with code b can stand for element k (k < 3). */
  readonly #unitStarts: Uint8Array[];

  constructor(pattern: EchoPattern) {
    this.elements = pattern.elements;
    this.optionalFirst = pattern.optionalFirst && pattern.elements.length > 1;
    this.optionalLast = pattern.optionalLast && pattern.elements.length > 1;
    this.#high = this.elements.map((e) => e.some((c) => c >= 0x80));
    this.#unitStarts = this.elements.slice(0, 3).map((element) => {
      const table = new Uint8Array(256);
      for (const code of element) {
        if (code <= 0xff) table[code] = 1;
        if (code >= 0x80) table[utf8Lead(code)] = 1;
        if (code === 0x20) table[PLUS] = 1;
      }
      for (const code of [BACKSLASH, PERCENT, AMPERSAND]) table[code] = 1;
      return table;
    });
    const firsts = [...this.elements[0]!, ...(this.optionalFirst ? this.elements[1]! : [])];
    for (let b = 0; b < 256; b++) this.starts[b] = this.#unitStarts[0]![b]! | (this.optionalFirst ? this.#unitStarts[1]![b]! : 0);
    this.startsAboveLatin1 = firsts.some((c) => c >= 0x80); // U+FFFD, surrogates, code points above 0xFF
  }

  /**
   * A cheap necessary condition for a match at p: a plain ASCII character stands only for
   * itself (or + for space), so it and the next one must fit the first two elements.
   */
  mayMatchAt(codes: Uint8Array | Uint16Array, p: number): boolean {
    return this.#mayStart(codes, p, 0) || (this.optionalFirst && this.#mayStart(codes, p, 1));
  }

  #mayStart(codes: Uint8Array | Uint16Array, p: number, k: number): boolean {
    if (k >= this.elements.length) return true;
    const c = codes[p]!;
    if (c > 0xff) return true;
    if (this.#unitStarts[k]![c] === 0) return false;
    if (c >= 0x80 || c === BACKSLASH || c === PERCENT || c === AMPERSAND || p + 1 >= codes.length) return true;
    if (k + 1 >= this.elements.length || k + 1 >= 3) return true;
    const next = codes[p + 1]!;
    return next > 0xff || this.#unitStarts[k + 1]![next] === 1;
  }

  /** Whether one of the units at a start position can stand for the first element (or the second, if the first is optional). */
  firstStepFits(units: readonly Unit[]): boolean {
    for (const unit of units) {
      if (unit.wildcard) {
        if (this.#high[0] || (this.optionalFirst && this.#high[1])) return true;
        continue;
      }
      const code = unit.codes[0]!;
      if (this.allows(0, code) || (this.optionalFirst && this.allows(1, code))) return true;
    }
    return false;
  }

  allows(index: number, code: number): boolean {
    const element = this.elements[index]!;
    return element.length === 1 ? element[0] === code : element.includes(code);
  }

  high(index: number): boolean {
    return this.#high[index]!;
  }
}

/** The patterns of one secret, with the tables that let plain text be skipped fast. */
export class PatternSet {
  readonly patterns: readonly CompiledPattern[];
  /** any[b]: some pattern may start at a unit beginning with b. */
  readonly #any = new Uint8Array(256);
  readonly #anyAbove: boolean;
  /** pairs[a << 8 | b]: some pattern may start at plain ASCII a followed by b. */
  readonly #pairs = new Uint8Array(65536);

  constructor(patterns: readonly EchoPattern[]) {
    this.patterns = patterns.map((pattern) => new CompiledPattern(pattern));
    for (const pattern of this.patterns) for (let b = 0; b < 256; b++) this.#any[b] |= pattern.starts[b]!;
    this.#anyAbove = this.patterns.some((pattern) => pattern.startsAboveLatin1);
    const pair = new Uint8Array(2);
    for (let a = 0; a < 0x80; a++) {
      if (this.#any[a] === 0 || a === BACKSLASH || a === PERCENT || a === AMPERSAND) continue;
      pair[0] = a;
      for (let b = 0; b < 256; b++) {
        pair[1] = b;
        if (this.patterns.some((pattern) => pattern.starts[a] === 1 && pattern.mayMatchAt(pair, 0))) this.#pairs[(a << 8) | b] = 1;
      }
    }
  }

  /**
   * Every match of the set's patterns (the longest from each start), left to right by start;
   * with `from` and `to`, those starting in [from, to) (a match may end past `to`: the whole
   * text is read as needed), so that a long text can be scanned in slices.
   */
  find(source: ScanSource, tag: number, from = 0, to = source.codes.length): Span[] {
    const codes = source.codes;
    const n = codes.length;
    const any = this.#any;
    const pairs = this.#pairs;
    const spans: Span[] = [];
    let units: UnitCache | null = null;
    for (let p = from; p < to; p++) {
      // A cheap necessary condition first: plain text costs a table lookup or two per character.
      const c = codes[p]!;
      if (c > 0xff) {
        if (!this.#anyAbove) continue;
      } else if (any[c] === 0) {
        continue;
      } else if (c === BACKSLASH || c === PERCENT || c === AMPERSAND) {
        if (!escapeMayStart(codes, p)) continue;
      } else if (c < 0x80 && p + 1 < n) {
        const next = codes[p + 1]!;
        if (next <= 0xff && pairs[(c << 8) | next] === 0) continue;
      }
      units ??= new UnitCache(source);
      const end = this.#longestAt(p, units);
      if (end > p) spans.push({ start: p, end, tag });
    }
    return spans;
  }

  #longestAt(p: number, units: UnitCache): number {
    const first = units.at(p);
    let best = -1;
    for (const pattern of this.patterns) {
      if (!pattern.firstStepFits(first)) continue;
      const end = longestMatch(pattern, p, units);
      if (end > best) best = end;
    }
    return best;
  }
}

/** Whether the \, % or & at p begins an escape at all (most in running text do not). */
function escapeMayStart(codes: Uint8Array | Uint16Array, p: number): boolean {
  const c = codes[p]!;
  const next = codes[p + 1];
  if (next === undefined) return false;
  if (c === BACKSLASH) return SIMPLE_ESCAPES[next] !== undefined || next === 0x75 || next === 0x78;
  if (c === PERCENT) return next === 0x75 || next === 0x55 || hexDigit(next) >= 0;
  return next === HASH || (next >= 0x41 && next <= 0x5a) || (next >= 0x61 && next <= 0x7a);
}

/** Every match of the set's patterns (the longest from each start) starting in [from, to), left to right by start. */
export function findEchoes(source: ScanSource, set: PatternSet, tag = 0, from = 0, to = source.codes.length): Span[] {
  return set.find(source, tag, from, to);
}

/** Spans merged where they overlap (a value echoed twice overlapping, two secrets sharing text), sorted. */
export function mergeSpans(spans: Span[]): Span[] {
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: Span[] = [];
  for (const span of spans) {
    const last = merged[merged.length - 1];
    if (last && span.start < last.end) last.end = Math.max(last.end, span.end);
    else merged.push({ ...span });
  }
  return merged;
}

/** The end of the longest match starting at `start`, or -1. */
function longestMatch(pattern: CompiledPattern, start: number, units: UnitCache): number {
  const m = pattern.elements.length;
  const stack = STACK;
  stack.length = 0;
  stack.push(0, start);
  if (pattern.optionalFirst) stack.push(1, start);
  // States can only be reached twice after a position read in two ways: the set is used then
  // (one set for every match, emptied here: a new one per start was garbage made per byte
  // of a body of escapes).
  let seen: Set<number> | null = null;
  let best = -1;
  while (stack.length > 0) {
    const p = stack.pop()!;
    const i = stack.pop()!;
    if (seen) {
      const key = i * 0x1000000 + (p - start);
      if (seen.has(key)) continue;
      seen.add(key);
    }
    if (i === m || (i === m - 1 && pattern.optionalLast && i > 0)) {
      if (p > best) best = p;
      if (i === m) continue;
    }
    if (p >= units.length) continue;
    const at = units.at(p);
    if (at.length > 1 && seen === null) {
      seen = SEEN;
      seen.clear();
    }
    for (const unit of at) {
      if (unit.wildcard) {
        for (let k = 1; k <= 3 && i + k <= m && pattern.high(i + k - 1); k++) stack.push(i + k, p + unit.len);
        continue;
      }
      const n = unit.codes.length;
      if (i + n > m) continue;
      let ok = true;
      for (let k = 0; k < n && ok; k++) ok = pattern.allows(i + k, unit.codes[k]!);
      if (ok) stack.push(i + n, p + unit.len);
    }
  }
  return best;
}

const STACK: number[] = [];
const SEEN = new Set<number>();

/**
 * The units at each position, computed once for all patterns and all start positions (the
 * units at a position do not depend on where a match started), in a direct-mapped window
 * of UNIT_WINDOW positions: matches from a start read only positions at or after it, so a
 * slot is reused once the scan has moved past its position, and the memory stays bounded
 * whatever the text. It used to be a Map cleared at every start position, and a body of
 * escapes (`%41,` repeated, or the escaped public prefix of a token, which a script can
 * make a bound origin echo) rebuilt each position's units once per start that reached it,
 * several seconds of the worker's thread for one 8 MiB response (found by review).
 */
class UnitCache {
  readonly #source: ScanSource;
  readonly #positions = new Int32Array(UNIT_WINDOW).fill(-1);
  readonly #units: (Unit[] | undefined)[] = new Array(UNIT_WINDOW);
  readonly length: number;

  constructor(source: ScanSource) {
    this.#source = source;
    this.length = source.codes.length;
  }

  at(p: number): Unit[] {
    const c = this.#source.codes[p]!;
    if (c < 0x80 && PLAIN[c]) return PLAIN[c]!; // most positions: no allocation, no cache
    const slot = p & (UNIT_WINDOW - 1);
    if (this.#positions[slot] === p) return this.#units[slot]!;
    const units = unitsAt(this.#source, p);
    this.#positions[slot] = p;
    this.#units[slot] = units;
    return units;
  }
}

/** Positions UnitCache keeps (a power of two): far more than one match can read past its start. */
const UNIT_WINDOW = 4096;

/** The one unit of each plain ASCII character (not \ % & +), shared. */
const PLAIN: (Unit[] | null)[] = Array.from({ length: 0x80 }, (_, c) =>
  c === BACKSLASH || c === PERCENT || c === AMPERSAND || c === PLUS ? null : [{ len: 1, codes: [c] }],
);

/** Every way to read the text at p as one unit. */
export function unitsAt(source: ScanSource, p: number): Unit[] {
  const codes = source.codes;
  const c = codes[p]!;
  const out: Unit[] = [{ len: 1, codes: [c] }];
  if (c >= 0x80) {
    const utf8 = utf8At((k) => (p + k < codes.length && codes[p + k]! <= 0xff ? codes[p + k]! : -1), 1);
    if (utf8) out.push({ len: utf8.count, codes: [utf8.code] });
    if (c >= 0xd800 && c <= 0xdbff && p + 1 < codes.length && codes[p + 1]! >= 0xdc00 && codes[p + 1]! <= 0xdfff) {
      out.push({ len: 2, codes: [0x10000 + ((c - 0xd800) << 10) + (codes[p + 1]! - 0xdc00)] });
    }
    if (c === REPLACEMENT && source.lossy) out.push({ len: 1, codes: [], wildcard: true });
  } else if (c === PLUS) {
    out.push({ len: 1, codes: [0x20] });
  } else if (c === BACKSLASH) {
    escapeAt(codes, p, out);
  } else if (c === PERCENT) {
    percentAt(codes, p, out);
  } else if (c === AMPERSAND) {
    referenceAt(codes, p, out);
  }
  return out;
}

function hexAt(codes: ArrayLike<number>, p: number, digits: number): number {
  if (p + digits > codes.length) return -1;
  let value = 0;
  for (let k = 0; k < digits; k++) {
    const d = hexDigit(codes[p + k]!);
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** JSON and JavaScript string escapes at a backslash. */
function escapeAt(codes: ArrayLike<number>, p: number, out: Unit[]): void {
  const next = codes[p + 1];
  if (next === undefined) return;
  const simple = SIMPLE_ESCAPES[next];
  if (simple !== undefined) out.push({ len: 2, codes: [simple] });
  else if (next === 0x75 /* u */) surrogateAware(p, 6, (q) => (codes[q] === BACKSLASH && codes[q + 1] === 0x75 ? hexAt(codes, q + 2, 4) : -1), out);
  else if (next === 0x78 /* x */) {
    const value = hexAt(codes, p + 2, 2);
    if (value >= 0) out.push({ len: 4, codes: [value] });
  }
}

/** A \uXXXX-like unit of `len` characters at p, joined with a following low surrogate unit when it is a high one. */
function surrogateAware(p: number, len: number, read: (q: number) => number, out: Unit[]): void {
  const unit = read(p);
  if (unit < 0) return;
  out.push({ len, codes: [unit] });
  if (unit >= 0xd800 && unit <= 0xdbff) {
    const low = read(p + len);
    if (low >= 0xdc00 && low <= 0xdfff) out.push({ len: 2 * len, codes: [0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)] });
  }
}

/** Percent-encoding at a %: one byte, a UTF-8 sequence of %XX bytes, or %uXXXX. */
function percentAt(codes: ArrayLike<number>, p: number, out: Unit[]): void {
  const next = codes[p + 1];
  if (next === 0x75 || next === 0x55) {
    surrogateAware(p, 6, (q) => (codes[q] === PERCENT && (codes[q + 1] === 0x75 || codes[q + 1] === 0x55) ? hexAt(codes, q + 2, 4) : -1), out);
    return;
  }
  const byte = hexAt(codes, p + 1, 2);
  if (byte < 0) return;
  out.push({ len: 3, codes: [byte] });
  if (byte >= 0xc2) {
    const utf8 = utf8At((k) => (codes[p + 3 * k] === PERCENT ? hexAt(codes, p + 3 * k + 1, 2) : -1), 3);
    if (utf8) out.push({ len: utf8.count, codes: [utf8.code] });
  }
}

/** HTML/XML character references at an &. */
function referenceAt(codes: ArrayLike<number>, p: number, out: Unit[]): void {
  if (codes[p + 1] === HASH) {
    const hex = codes[p + 2] === 0x78 || codes[p + 2] === 0x58;
    let q = p + (hex ? 3 : 2);
    let value = 0;
    let digits = 0;
    for (; q < codes.length && digits < 16; q++, digits++) {
      const d = hex ? hexDigit(codes[q]!) : codes[q]! >= 0x30 && codes[q]! <= 0x39 ? codes[q]! - 0x30 : -1;
      if (d < 0) break;
      value = value * (hex ? 16 : 10) + d;
    }
    if (digits === 0 || value > 0x10ffff) return;
    out.push({ len: q - p, codes: [value] }); // without the ; (HTML accepts that)
    if (codes[q] === SEMICOLON) out.push({ len: q + 1 - p, codes: [value] });
    return;
  }
  const next = codes[p + 1];
  if (next === undefined || !((next >= 0x41 && next <= 0x5a) || (next >= 0x61 && next <= 0x7a))) return;
  let text = "";
  for (let q = p; q < codes.length && q < p + MAX_REFERENCE; q++) text += String.fromCharCode(codes[q]!);
  const decoded: number[] = [];
  const { EntityDecoder, htmlDecodeTree, DecodingMode } = entityLibrary();
  const decoder = new EntityDecoder(htmlDecodeTree, (code) => decoded.push(code));
  decoder.startEntity(DecodingMode.Legacy);
  let consumed = decoder.write(text, 1);
  if (consumed < 0) consumed = decoder.end();
  if (consumed > 0 && decoded.length > 0) out.push({ len: consumed, codes: decoded });
}

/** A valid UTF-8 sequence whose k-th byte is byteAt(k); count is in text positions (stride per byte). */
function utf8At(byteAt: (k: number) => number, stride: number): { code: number; count: number } | null {
  const lead = byteAt(0);
  let need: number;
  let code: number;
  let min: number;
  if (lead >= 0xc2 && lead <= 0xdf) [need, code, min] = [1, lead & 0x1f, 0x80];
  else if (lead >= 0xe0 && lead <= 0xef) [need, code, min] = [2, lead & 0x0f, 0x800];
  else if (lead >= 0xf0 && lead <= 0xf4) [need, code, min] = [3, lead & 0x07, 0x10000];
  else return null;
  for (let k = 1; k <= need; k++) {
    const byte = byteAt(k);
    if (byte < 0x80 || byte > 0xbf) return null;
    code = (code << 6) | (byte & 0x3f);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return null;
  return { code, count: (need + 1) * stride };
}

/** The first byte of the UTF-8 encoding of a code point at or above 0x80. */
function utf8Lead(code: number): number {
  if (code < 0x800) return 0xc0 | (code >> 6);
  if (code < 0x10000) return 0xe0 | (code >> 12);
  return 0xf0 | (code >> 18);
}
