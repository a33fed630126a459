// Fetch §5.4 Request. Per the spec: `cache` is always "no-cache", `mode` "navigate", and
// `body` is a Blob (or null) rather than a stream; `keepalive` is kept as given. RequestInit
// members the standard defines are still validated, so that invalid values fail as they
// do in browsers, Deno and Node.
import { AbortController, AbortSignal } from "scriptbox:web";
import { type Blob, createBlob } from "./blob";
import { type BodyInit, type BodyState, bodyBytes, bodyStates, cloneBodyState, installBody, newBodyState } from "./body";
import { Headers, type HeadersInit, fillHeaders, headerPairs } from "./headers";
import { locationOrigin, parseHref, parseURL } from "./url";
import { TypeErrorCtor, isToken, toByteString, toDictionary, toEnum, toStringValue, webidlInterface } from "./util";

export interface RequestOpts {
  body?: BodyInit;
  headers?: HeadersInit;
  method?: string;
  signal?: AbortSignal | null;
  url?: string;
  redirect?: "follow" | "error" | "manual";
  [member: string]: unknown;
}

interface RequestSlots {
  method: string;
  url: string;
  headers: Headers;
  body: BodyState;
  /** The signal this request's signal follows (created lazily: most requests never read it). */
  followed: AbortSignal | null;
  signal: AbortSignal | null;
  bodyBlob: Blob | null;
  mode: string;
  redirect: string;
  credentials: string;
  referrer: string;
  referrerPolicy: string;
  integrity: string;
  keepalive: boolean;
}

// Only a URL with "@" before its path can carry credentials.
const MAY_HAVE_CREDENTIALS = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i;

/** A request URL: absolute after resolving, and without credentials (Fetch §5.4 step 5). */
function requestURL(input: string): string {
  const href = parseHref(input, "Request");
  if (MAY_HAVE_CREDENTIALS.test(href)) {
    const url = parseURL(href, "Request");
    if (url.username || url.password) throw new TypeErrorCtor(`Request: the URL ${JSON.stringify(input)} includes credentials`);
  }
  return href;
}

const NORMALIZED_METHODS = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];
const FORBIDDEN_METHODS = ["CONNECT", "TRACE", "TRACK"];

let slotsOf: (request: Request) => RequestSlots;
// Passed as init by clone(): the slots are ready, skip the constructor steps.
const INTERNAL = {};
export let isRequest: (value: unknown) => value is Request;

export class Request {
  #slots: RequestSlots;

  constructor(input: Request | string, init?: RequestOpts) {
    if (arguments.length === 0) throw new TypeErrorCtor("Request constructor: 1 argument required");
    if (init === INTERNAL) {
      this.#slots = input as unknown as RequestSlots;
      bodyStates.set(this, this.#slots.body);
      return;
    }
    const source = isRequest(input) ? input.#slots : null;
    const url = source ? source.url : requestURL(toStringValue(input));
    const opts = toDictionary(init, "Request init");
    // Members in WebIDL dictionary order (lexicographic), each converted as it is read.
    const body = opts.body;
    const cache = opts.cache === undefined ? undefined : toEnum(opts.cache, "default,no-store,reload,no-cache,force-cache,only-if-cached", "Request cache");
    const credentials = opts.credentials === undefined ? undefined : toEnum(opts.credentials, "omit,same-origin,include", "Request credentials");
    if (opts.duplex !== undefined) toEnum(opts.duplex, "half", "Request duplex");
    const headersInit = opts.headers;
    const integrity = opts.integrity === undefined ? undefined : toStringValue(opts.integrity);
    const keepalive = opts.keepalive === undefined ? undefined : Boolean(opts.keepalive);
    const method = opts.method === undefined ? undefined : toByteString(opts.method);
    // A Request passed as init (`new Request(url, otherRequest)`) reports mode "navigate",
    // as every request here does; that is its constant, not a request for navigation.
    const modeOption = isRequest(init) ? undefined : opts.mode;
    const mode = modeOption === undefined ? undefined : toEnum(modeOption, "same-origin,no-cors,cors,navigate", "Request mode");
    if (opts.priority !== undefined) toEnum(opts.priority, "high,low,auto", "Request priority");
    const redirect = opts.redirect === undefined ? undefined : toEnum(opts.redirect, "follow,error,manual", "Request redirect");
    const referrer = opts.referrer === undefined ? undefined : toStringValue(opts.referrer);
    const referrerPolicy =
      opts.referrerPolicy === undefined
        ? undefined
        : toEnum(opts.referrerPolicy, ",no-referrer,no-referrer-when-downgrade,same-origin,origin,strict-origin,origin-when-cross-origin,strict-origin-when-cross-origin,unsafe-url", "Request referrerPolicy");
    const signal = opts.signal;
    // (`url` is this module's own init member; a Request as init has its url getter instead.)
    const urlOption = opts.url === undefined || isRequest(init) ? undefined : toStringValue(opts.url);
    if (opts.window !== undefined && opts.window !== null) throw new TypeErrorCtor("Request: window can only be null");

    const slots: RequestSlots = {
      method: source ? source.method : "GET",
      url: urlOption === undefined ? url : requestURL(urlOption),
      headers: new Headers(),
      body: null as unknown as BodyState,
      followed: source ? source.followed : null,
      signal: null,
      bodyBlob: null,
      mode: source ? source.mode : "cors",
      redirect: redirect ?? (source ? source.redirect : "follow"),
      credentials: credentials ?? (source ? source.credentials : "same-origin"),
      referrer: source ? source.referrer : "about:client",
      referrerPolicy: referrerPolicy ?? (source ? source.referrerPolicy : ""),
      integrity: integrity ?? (source ? source.integrity : ""),
      keepalive: keepalive ?? (source ? source.keepalive : false),
    };
    if (referrer !== undefined) {
      if (referrer === "") slots.referrer = "";
      else {
        const parsed = parseURL(referrer, "Request referrer");
        // Fetch §5.4 step 15.3.3: about:client, or a URL not same origin with the
        // environment (the location option's origin, when there is one), is "client".
        const origin = locationOrigin();
        slots.referrer = parsed.href === "about:client" || (origin !== null && parsed.origin !== origin) ? "about:client" : parsed.href;
      }
    }
    if (mode === "navigate") throw new TypeErrorCtor('Request: mode cannot be "navigate"');
    if (mode !== undefined) slots.mode = mode;
    if (cache === "only-if-cached" && slots.mode !== "same-origin") {
      throw new TypeErrorCtor('Request: cache "only-if-cached" needs mode "same-origin"');
    }
    if (method !== undefined) {
      if (!isToken(method)) throw new TypeErrorCtor(`Request: ${JSON.stringify(method)} is not a valid HTTP method`);
      const upper = method.toUpperCase();
      if (FORBIDDEN_METHODS.includes(upper)) throw new TypeErrorCtor(`Request: the method ${method} is forbidden`);
      slots.method = NORMALIZED_METHODS.includes(upper) ? upper : method;
    }
    if (slots.mode === "no-cors" && !["GET", "HEAD", "POST"].includes(slots.method)) {
      throw new TypeErrorCtor('Request: mode "no-cors" allows only GET, HEAD and POST');
    }
    if (signal !== undefined) {
      if (signal !== null && !(signal instanceof AbortSignal)) throw new TypeErrorCtor("Request: signal is not an AbortSignal");
      slots.followed = signal;
    }
    if (headersInit !== undefined) fillHeaders(slots.headers, headersInit);
    else if (source) fillHeaders(slots.headers, source.headers);

    const inputBody = source && source.body.data !== null ? source.body : null;
    const hasInitBody = body !== undefined && body !== null;
    if ((hasInitBody || inputBody) && (slots.method === "GET" || slots.method === "HEAD")) {
      throw new TypeErrorCtor(`Request: a ${slots.method} request cannot have a body`);
    }
    if (hasInitBody || !inputBody) slots.body = newBodyState(hasInitBody ? body : null, slots.headers);
    else {
      if (inputBody.used) throw new TypeErrorCtor("Request: the input request's body has already been used");
      // The new request takes the body over (Fetch §5.4 step 44).
      slots.body = { ...inputBody, headers: slots.headers };
    }
    // Once construction can no longer fail, an input with a body is disturbed, whether its
    // body was taken over or replaced by init's (WPT request-disturbed; browsers and Node).
    if (inputBody) inputBody.used = true;
    this.#slots = slots;
    bodyStates.set(this, slots.body);
  }

  get method(): string {
    return this.#slots.method;
  }
  get url(): string {
    return this.#slots.url;
  }
  get headers(): Headers {
    return this.#slots.headers;
  }
  // Constant members still check their receiver: `this.#slots` throws a TypeError for
  // anything that is not a Request.
  get destination(): string {
    return this.#slots && "";
  }
  get referrer(): string {
    return this.#slots.referrer;
  }
  get referrerPolicy(): string {
    return this.#slots.referrerPolicy;
  }
  get mode(): "navigate" {
    return this.#slots && "navigate";
  }
  get credentials(): string {
    return this.#slots.credentials;
  }
  get cache(): "no-cache" {
    return this.#slots && "no-cache";
  }
  get redirect(): string {
    return this.#slots.redirect;
  }
  get integrity(): string {
    return this.#slots.integrity;
  }
  /** Kept for scripts that read it; the transport does not need it (a run waits for its fetches anyway). */
  get keepalive(): boolean {
    return this.#slots.keepalive;
  }
  get isReloadNavigation(): boolean {
    return !this.#slots;
  }
  get isHistoryNavigation(): boolean {
    return !this.#slots;
  }
  get signal(): AbortSignal {
    const slots = this.#slots;
    if (!slots.signal) slots.signal = slots.followed ? AbortSignal.any([slots.followed]) : new AbortController().signal;
    return slots.signal;
  }
  get duplex(): "half" {
    return this.#slots && "half";
  }
  /** The body as a Blob (the spec's Body type), or null. */
  get body(): Blob | null {
    const slots = this.#slots;
    if (slots.body.data === null) return null;
    if (!slots.bodyBlob) {
      slots.body.shared = true;
      slots.bodyBlob = createBlob(bodyBytes(slots.body), "");
    }
    return slots.bodyBlob;
  }

  clone(): Request {
    const slots = this.#slots;
    const headers = new Headers(slots.headers);
    const body = cloneBodyState(slots.body, headers);
    return new Request({ ...slots, headers, body, signal: null, bodyBlob: null } as never, INTERNAL as RequestOpts);
  }

  static {
    slotsOf = (request) => request.#slots;
    isRequest = (value): value is Request => typeof value === "object" && value !== null && #slots in value;
  }
}

installBody(Request.prototype, ["arrayBuffer", "blob", "bytes", "formData", "json", "text"]);
webidlInterface(Request, 1);

/** What fetch needs from a Request: the transport record, the body bytes, the signal. */
/**
 * What `fetch(url)` (a string and no init) sends: exactly the record a `new Request(url)`
 * would give (same URL parsing and errors; GET, no headers, no body, no signal), without
 * building the Request object a script never sees.
 */
export function requestForTransport(request: Request) {
  const slots = slotsOf(request);
  const body = slots.body.data === null ? null : bodyBytes(slots.body);
  if (slots.body.data !== null) slots.body.used = true;
  return {
    url: slots.url,
    method: slots.method,
    headers: headerPairs(slots.headers),
    redirect: slots.redirect as "follow" | "manual" | "error",
    body,
    signal: slots.followed,
  };
}
