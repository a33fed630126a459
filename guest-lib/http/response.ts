// Fetch §5.5 Response, shaped by the spec: `body` is always null (no streams), there is
// no bytes(), and `type` is "basic" or "error". Defaults where the spec is silent follow
// the Fetch standard: status 200, statusText "", Response.redirect status 302.
import { AbortSignal } from "scriptbox:web";
import { type BodyInit, type BodyState, bodyStates, cloneBodyState, installBody, newBodyState } from "./body";
import { Headers, type HeadersInit, IMMUTABLE, fillHeaders, guardOf, headersFromList, setGuard } from "./headers";
import { parseURL, withoutFragment } from "./url";
import {
  RangeErrorCtor,
  TypeErrorCtor,
  jsonStringify,
  toByteString,
  toDictionary,
  toStringValue,
  webidlInterface,
} from "./util";

export interface ResponseInit {
  readonly headers?: HeadersInit;
  readonly status?: number;
  readonly statusText?: string;
}

export interface ResponseOpts extends ResponseInit {
  readonly signal?: AbortSignal;
  readonly url?: string;
}

export type ResponseType = "basic" | "error";

interface ResponseSlots {
  type: ResponseType;
  status: number;
  statusText: string;
  /** Null until first needed for a transport response, whose header list waits in `head`. */
  headers: Headers | null;
  /** The header lines of a transport response (see responseFromHead) until the Headers are built. */
  headerLines: string | null;
  url: string;
  redirected: boolean;
  body: BodyState;
}

const NULL_BODY_STATUS = [101, 103, 204, 205, 304];
const REDIRECT_STATUS = [301, 302, 303, 307, 308];

/** WebIDL unsigned short (ToNumber, truncate, modulo 2^16). */
function toUnsignedShort(value: unknown): number {
  const n = Math.trunc(Number(value));
  return Number.isFinite(n) ? ((n % 65536) + 65536) % 65536 : 0;
}

// Passed as init by create(): the slots are ready, skip "initialize a response".
const INTERNAL = {};
const create = (slots: ResponseSlots) => new Response(slots as never, INTERNAL as ResponseOpts);

export class Response {
  #slots: ResponseSlots;

  constructor(body: BodyInit | null = null, init?: ResponseOpts) {
    if (init === INTERNAL) {
      this.#slots = body as unknown as ResponseSlots;
      bodyStates.set(this, this.#slots.body);
      return;
    }
    const [slots, signal] = initialize(init);
    if (body !== null && body !== undefined && NULL_BODY_STATUS.includes(slots.status)) {
      throw new TypeErrorCtor(`Response: a ${slots.status} response cannot have a body`);
    }
    slots.body = newBodyState(body, headersOf(slots));
    slots.body.signal = signal;
    this.#slots = slots;
    bodyStates.set(this, slots.body);
  }

  static error(): Response {
    const headers = new Headers();
    setGuard(headers, IMMUTABLE);
    return create({ type: "error", status: 0, statusText: "", headers, headerLines: null, url: "", redirected: false, body: newBodyState(null, headers) });
  }

  static redirect(url: string, status: number = 302): Response {
    const location = parseURL(toStringValue(url), "Response.redirect").href;
    const code = toUnsignedShort(status);
    if (!REDIRECT_STATUS.includes(code)) throw new RangeErrorCtor(`Response.redirect: ${code} is not a redirect status`);
    const headers = new Headers([["location", location]]);
    setGuard(headers, IMMUTABLE);
    return create({ type: "basic", status: code, statusText: "", headers, headerLines: null, url: "", redirected: false, body: newBodyState(null, headers) });
  }

  static json(data: unknown, init?: ResponseInit): Response {
    const text = jsonStringify(data);
    if (text === undefined) throw new TypeErrorCtor("Response.json: the data cannot be serialized as JSON");
    const [slots] = initialize(init);
    if (NULL_BODY_STATUS.includes(slots.status)) throw new TypeErrorCtor(`Response.json: a ${slots.status} response cannot have a body`);
    slots.body = newBodyState(text, headersOf(slots), "application/json");
    return create(slots);
  }

  get type(): ResponseType {
    return this.#slots.type;
  }
  get url(): string {
    return this.#slots.url;
  }
  get redirected(): boolean {
    return this.#slots.redirected;
  }
  get status(): number {
    return this.#slots.status;
  }
  get ok(): boolean {
    const status = this.#slots.status;
    return status >= 200 && status <= 299;
  }
  get statusText(): string {
    return this.#slots.statusText;
  }
  get headers(): Headers {
    return headersOf(this.#slots);
  }
  /** Always null: bodies are whole values here, read with text(), json(), arrayBuffer(), blob(). */
  get body(): null {
    return this.#slots && null;
  }

  clone(): Response {
    const slots = this.#slots;
    const source = headersOf(slots);
    const headers = new Headers(source);
    setGuard(headers, guardOf(source));
    return create({ ...slots, headers, headerLines: null, body: cloneBodyState(slots.body, headers) });
  }
}

installBody(Response.prototype, ["arrayBuffer", "blob", "formData", "json", "text"]);
webidlInterface(Response, 0);

/** Fetch "initialize a response": status, statusText and headers from ResponseInit. */
function initialize(init: unknown): [ResponseSlots, AbortSignal | null] {
  const opts = toDictionary(init, "Response init");
  // Members in WebIDL dictionary order: headers, signal, status, statusText, url.
  const headersInit = opts.headers;
  const signal = opts.signal;
  const status = opts.status === undefined ? 200 : toUnsignedShort(opts.status);
  const statusText = opts.statusText === undefined ? "" : toByteString(opts.statusText);
  const url = opts.url === undefined ? "" : withoutFragment(parseURL(toStringValue(opts.url), "Response"));
  if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal)) {
    throw new TypeErrorCtor("Response: signal is not an AbortSignal");
  }
  if (status < 200 || status > 599) throw new RangeErrorCtor(`Response: status ${status} is outside 200-599`);
  if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(statusText)) throw new TypeErrorCtor(`Response: invalid statusText ${JSON.stringify(statusText)}`);
  const headers = new Headers();
  if (headersInit !== undefined) fillHeaders(headers, headersInit);
  const slots: ResponseSlots = { type: "basic", status, statusText, headers, headerLines: null, url, redirected: false, body: null as unknown as BodyState };
  return [slots, (signal as AbortSignal | undefined) ?? null];
}

/** The headers of a response, built from the transport's header lines on first use. */
function headersOf(slots: ResponseSlots): Headers {
  if (slots.headers === null) {
    const lines = slots.headerLines!;
    slots.headers = headersFromList(lines === "" ? [] : lines.split("\n"), IMMUTABLE);
    slots.headerLines = null;
  }
  return slots.headers;
}

/**
 * A Response from the transport's answer, `head`: lines of status, statusText, "1" when
 * redirected (else "0"), the final URL, then a name line (lower-case) and a value line per
 * header. The host guarantees that none of them contains a line break. Most scripts never
 * look at the headers of most responses, so the header lines stay one string until the
 * Headers object is first needed.
 */
export function responseFromHead(head: string, body: Uint8Array | null): Response {
  const a = head.indexOf("\n");
  const b = head.indexOf("\n", a + 1);
  const c = head.indexOf("\n", b + 1);
  const d = head.indexOf("\n", c + 1);
  const status = +head.slice(0, a);
  const slots: ResponseSlots = {
    type: "basic",
    status,
    statusText: head.slice(a + 1, b),
    headers: null,
    headerLines: d < 0 ? "" : head.slice(d + 1),
    url: d < 0 ? head.slice(c + 1) : head.slice(c + 1, d),
    redirected: head.charCodeAt(b + 1) === 0x31,
    body: null as unknown as BodyState,
  };
  const data = body && body.length && !NULL_BODY_STATUS.includes(status) ? body : null;
  slots.body = {
    data,
    used: false,
    shared: false,
    signal: null,
    get headers() {
      return headersOf(slots);
    },
  };
  return create(slots);
}
