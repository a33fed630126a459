// XHR §4 FormData, and the two encodings bodies use for it: multipart/form-data (HTML
// §4.10.21.8) to send, and both form encodings to read back in Body.formData().
import { TextDecoder, URLSearchParams } from "scriptbox:web";
import { Blob, File, blobBytes, createFile, encoder, isBlob } from "./blob";
import { definePairIterable } from "./iterator";
import { TypeErrorCtor, binaryToBytes, bytesToBinary, concatBytes, mathRandom, toStringValue, webidlInterface } from "./util";

type Entry = [string, string | File];
type FormDataEntryValue = string | File;

// Both form parsers decode with "UTF-8 decode without BOM" (Fetch §5.1 formData(), URL
// §5.1 application/x-www-form-urlencoded parser): a leading U+FEFF is kept, not stripped.
const keepBOM = new TextDecoder("utf-8", { ignoreBOM: true });

let entriesOf: (formData: FormData) => Entry[];

/** XHR "create an entry": USVString name; a Blob value becomes a File. */
function makeEntry(name: unknown, value: unknown, filename: unknown, argc: number): Entry {
  const n = toStringValue(name).toWellFormed();
  if (argc > 2 && !isBlob(value)) throw new TypeErrorCtor("FormData: a filename is only allowed with a Blob value");
  if (!isBlob(value)) return [n, toStringValue(value).toWellFormed()];
  if (value instanceof File && argc < 3) return [n, value];
  const fileName = argc > 2 ? toStringValue(filename) : value instanceof File ? value.name : "blob";
  const lastModified = value instanceof File ? value.lastModified : undefined;
  return [n, createFile(blobBytes(value), fileName, value.type, lastModified)];
}

export class FormData {
  #entries: Entry[] = [];

  constructor(form?: unknown) {
    if (form !== undefined) throw new TypeErrorCtor("FormData: there are no form elements here; construct it empty");
  }

  append(name: string, value: string | Blob, filename?: string): void {
    if (arguments.length < 2) throw new TypeErrorCtor("FormData.append: 2 arguments required");
    this.#entries.push(makeEntry(name, value, filename, arguments.length));
  }

  delete(name: string): void {
    const n = toStringValue(name).toWellFormed();
    this.#entries = this.#entries.filter((entry) => entry[0] !== n);
  }

  get(name: string): FormDataEntryValue | null {
    const n = toStringValue(name).toWellFormed();
    const entry = this.#entries.find((e) => e[0] === n);
    return entry ? entry[1] : null;
  }

  getAll(name: string): FormDataEntryValue[] {
    const n = toStringValue(name).toWellFormed();
    return this.#entries.filter((e) => e[0] === n).map((e) => e[1]);
  }

  has(name: string): boolean {
    const n = toStringValue(name).toWellFormed();
    return this.#entries.some((e) => e[0] === n);
  }

  set(name: string, value: string | Blob, filename?: string): void {
    if (arguments.length < 2) throw new TypeErrorCtor("FormData.set: 2 arguments required");
    const entry = makeEntry(name, value, filename, arguments.length);
    const entries = this.#entries;
    const index = entries.findIndex((e) => e[0] === entry[0]);
    if (index < 0) entries.push(entry);
    else this.#entries = [...entries.slice(0, index), entry, ...entries.slice(index + 1).filter((e) => e[0] !== entry[0])];
  }

  static {
    entriesOf = (formData) => formData.#entries;
  }
}

// The pair-iterable members definePairIterable installs.
export interface FormData {
  entries(): IterableIterator<[string, FormDataEntryValue]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<FormDataEntryValue>;
  forEach(callbackfn: (value: FormDataEntryValue, key: string, parent: FormData) => void, thisArg?: unknown): void;
  [Symbol.iterator](): IterableIterator<[string, FormDataEntryValue]>;
}

webidlInterface(FormData, 0);
definePairIterable(FormData, (formData) => entriesOf(formData));

export const isFormData = (value: unknown): value is FormData => value instanceof FormData;

// HTML: names and filenames escape CR, LF and '"'; string values and names get CRLF newlines.
const escapeName = (s: string) => s.replace(/\r\n|\r|\n/g, "\r\n").replace(/[\n\r"]/g, (c) => (c === "\n" ? "%0A" : c === "\r" ? "%0D" : "%22"));
const escapeFileName = (s: string) => s.replace(/[\n\r"]/g, (c) => (c === "\n" ? "%0A" : c === "\r" ? "%0D" : "%22"));

/** multipart/form-data encoding: [body bytes, Content-Type with its boundary]. */
export function encodeMultipart(formData: FormData): [Uint8Array, string] {
  const entries = entriesOf(formData);
  let boundary = "----formdata-scriptbox-";
  for (let i = 0; i < 4; i++) boundary += (mathRandom() * 0x100000000).toString(16).padStart(8, "0");
  const chunks: Uint8Array[] = [];
  let text = "";
  for (const [name, value] of entries) {
    text += `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(name)}"`;
    if (typeof value === "string") {
      text += `\r\n\r\n${value.replace(/\r\n|\r|\n/g, "\r\n")}\r\n`;
      continue;
    }
    text += `; filename="${escapeFileName(value.name)}"\r\nContent-Type: ${value.type || "application/octet-stream"}\r\n\r\n`;
    chunks.push(encoder.encode(text), blobBytes(value));
    text = "\r\n";
  }
  // An empty FormData is an empty body (WPT request/response-consume-empty expect "").
  if (entries.length) chunks.push(encoder.encode(`${text}--${boundary}--\r\n`));
  return [concatBytes(chunks), `multipart/form-data; boundary=${boundary}`];
}

/** Parses an application/x-www-form-urlencoded body into a FormData. */
export function parseUrlencoded(bytes: Uint8Array): FormData {
  const formData = new FormData();
  // The body parser, unlike the URLSearchParams constructor, keeps a leading "?" (a leading
  // "&" only adds an empty sequence, which the parser skips).
  for (const [name, value] of new URLSearchParams(`&${keepBOM.decode(bytes)}`)) formData.append(name, value);
  return formData;
}

const invalidMultipart = () => new TypeErrorCtor("Body is not valid multipart/form-data");

/**
 * Parses a multipart/form-data body (RFC 7578) into a FormData. Boundaries are found
 * with native string search on a one-char-per-byte view of the bytes.
 */
export function parseMultipart(bytes: Uint8Array, boundary: string): FormData {
  const formData = new FormData();
  if (bytes.length === 0) return formData; // what an empty FormData encodes to
  // latin1 view: each char is one byte, so string offsets are byte offsets.
  const binary = bytesToBinary(bytes);
  const delimiter = `--${boundary}`;
  let pos = binary.indexOf(delimiter);
  if (pos < 0) throw invalidMultipart();
  for (;;) {
    pos += delimiter.length;
    if (binary.startsWith("--", pos)) return formData; // closing delimiter
    if (!binary.startsWith("\r\n", pos)) throw invalidMultipart();
    pos += 2;
    const headerEnd = binary.indexOf("\r\n\r\n", pos);
    if (headerEnd < 0) throw invalidMultipart();
    let name: string | null = null;
    let filename: string | null = null;
    let contentType: string | null = null;
    for (const line of binary.slice(pos, headerEnd).split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon < 0) throw invalidMultipart();
      const field = line.slice(0, colon).trim().toLowerCase();
      const value = keepBOM.decode(binaryToBytes(line.slice(colon + 1).trim()));
      if (field === "content-disposition") {
        if (!/^form-data\s*(;|$)/i.test(value)) throw invalidMultipart();
        name = dispositionParam(value, "name");
        filename = dispositionParam(value, "filename");
      } else if (field === "content-type") contentType = value;
    }
    if (name === null) throw invalidMultipart();
    const bodyStart = headerEnd + 4;
    const next = binary.indexOf(`\r\n${delimiter}`, bodyStart);
    if (next < 0) throw invalidMultipart();
    const content = bytes.slice(bodyStart, next);
    // A file part without Content-Type is text/plain (Fetch "multipart/form-data parser").
    if (filename !== null) formData.append(name, createFile(content, filename, contentType ?? "text/plain"));
    else formData.append(name, keepBOM.decode(content));
    pos = next + 2;
  }
}

function dispositionParam(value: string, param: string): string | null {
  const match = new RegExp(`;\\s*${param}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, "i").exec(value);
  if (!match) return null;
  const raw = match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1") : match[2];
  return raw.replace(/%0A/gi, "\n").replace(/%0D/gi, "\r").replace(/%22/g, '"');
}
