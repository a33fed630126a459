// The echo scanner on its own: a value is found whichever subset of its characters is
// escaped and however (docs/network.md "Redaction"), and the limits stated there hold.
import { describe, expect, test } from "vitest";
import { echoPatterns } from "../../../host/fetch/echoForms.js";
import { PatternSet, findEchoes, mergeSpans } from "../../../host/fetch/echoScanner.js";

const VALUE = 'Zq8/\u00e9&<"+> Wk3%\\x9mP~T-rY';
const set = new PatternSet(echoPatterns(VALUE));

function spansIn(text: string, lossy = false) {
  const codes = Uint16Array.from(text, (c) => c.charCodeAt(0));
  return mergeSpans(findEchoes({ codes, lossy }, set)).map(({ start, end }) => text.slice(start, end));
}

/** Each character in one of several forms, chosen by `choose(index)`. */
function mixed(choose: (i: number) => number): string {
  const forms = [
    (c: string) => c,
    (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()}`,
    (c: string) => [...Buffer.from(c, "utf8")].map((b) => `%${b.toString(16)}`).join(""),
    (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`,
    (c: string) => `&#${c.charCodeAt(0)};`,
    (c: string) => `&#x${c.charCodeAt(0).toString(16)}`, // no ;
  ];
  return [...VALUE].map((c, i) => forms[choose(i) % forms.length]!(c)).join("");
}

describe("any subset of characters, in any of the forms, mixed", () => {
  test.each([1, 2, 3, 5, 7, 11, 13])("a mix chosen by stride %i is found whole, and nothing around it", (stride) => {
    const echo = mixed((i) => i * stride + (i % 3));
    expect(spansIn(`<p>${echo}</p>`)).toEqual([echo]);
  });

  test("the UTF-8 bytes of é shown one character per byte, and the JSON \\/ of the slash", () => {
    const echo = VALUE.replace("\u00e9", "\u00c3\u00a9").replace("/", "\\/");
    expect(spansIn(`x=${echo};`)).toEqual([echo]);
  });

  test("base64 of the value after 0, 1 or 2 other bytes: the match covers every character that carries a bit of it", () => {
    for (const prefix of ["", "u", "us", "user:"]) {
      const text = Buffer.from(prefix + VALUE + "!", "latin1").toString("base64");
      const [span] = spansIn(text);
      const start = text.indexOf(span!);
      // Every base64 character whose 6 bits overlap the value's bytes is inside the span.
      const firstBit = prefix.length * 8;
      const endBit = firstBit + VALUE.length * 8;
      expect(start).toBeLessThanOrEqual(Math.floor(firstBit / 6));
      expect(start + span!.length).toBeGreaterThanOrEqual(Math.ceil(endBit / 6));
    }
  });

  test("U+FFFD in a lossy reason phrase stands for the byte undici could not decode", () => {
    const status = "OK " + VALUE.replace("\u00e9", "\ufffd");
    expect(spansIn(status, true)).toEqual([VALUE.replace("\u00e9", "\ufffd")]);
    expect(spansIn(status, false)).toEqual([]);
  });
});

describe("the stated limits", () => {
  test("an encoding applied twice is not undone", () => {
    const twice = encodeURIComponent(encodeURIComponent(VALUE));
    expect(spansIn(twice)).toEqual([]);
  });

  test("a part of the value is not redacted", () => {
    expect(spansIn(VALUE.slice(0, -1))).toEqual([]);
  });

  test("text without the value costs a table lookup per character and finds nothing", () => {
    expect(spansIn('{"a":"\\u0026 %41 &amp; &#65; Zq8/ Wk3"}')).toEqual([]);
  });
});
