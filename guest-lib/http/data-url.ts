// Fetch §4.2 "data: URL processor": data: URLs are answered inside the sandbox.
import { atob } from "scriptbox:web";
import { TypeErrorCtor, binaryToBytes, parseMimeType, serializeMimeType } from "./util";

const nativeUnescape = unescape;

/** [Content-Type, body] of a data: URL (serialized, fragment excluded), or a TypeError. */
export function processDataURL(href: string): [string, Uint8Array] {
  const input = href.slice(5);
  const comma = input.indexOf(",");
  if (comma < 0) throw new TypeErrorCtor("fetch: invalid data: URL (no comma)");
  let mimeType = input.slice(0, comma).replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "");
  // Percent-decode to bytes (one char per byte); "%u" is not an escape here.
  let body = nativeUnescape(input.slice(comma + 1).replace(/%u/gi, "%25u"));
  const base64 = /;[ ]*base64$/i.exec(mimeType);
  if (base64) {
    try {
      body = atob(body);
    } catch {
      throw new TypeErrorCtor("fetch: invalid base64 in data: URL");
    }
    mimeType = mimeType.slice(0, base64.index);
  }
  if (mimeType.startsWith(";")) mimeType = `text/plain${mimeType}`;
  const parsed = parseMimeType(mimeType);
  return [parsed ? serializeMimeType(parsed) : "text/plain;charset=US-ASCII", binaryToBytes(body)];
}
