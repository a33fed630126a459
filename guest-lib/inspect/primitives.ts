// Quoting and escaping of strings, keys and numbers, as Node's util.inspect does.
import { Object } from "./builtins.js";
const ESCAPES: Record<string, string> = { "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v", "\\": "\\\\" };

export function quoteString(value: string): string {
  let quote = "'";
  if (value.indexOf("'") !== -1) {
    if (value.indexOf('"') === -1) quote = '"';
    else if (value.indexOf("`") === -1 && value.indexOf("${") === -1) quote = "`";
  }
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    const code = value.charCodeAt(i);
    if (ch === quote) out += `\\${ch}`;
    else if (ESCAPES[ch] !== undefined) out += ESCAPES[ch];
    else if (code < 0x20 || code === 0x7f) out += `\\x${(code + 0x100).toString(16).slice(1).toUpperCase()}`;
    else out += ch;
  }
  return quote + out + quote;
}

export function formatKey(key: string): string {
  return /^[a-zA-Z_][a-zA-Z_0-9]*$/.test(key) ? key : quoteString(key);
}

export function formatNumber(value: number): string {
  return Object.is(value, -0) ? "-0" : `${value}`;
}
