// The web module: the web platform globals QuickJS lacks, loaded into a sandbox the first
// time a script touches one of them (or the http module needs them).
export { DOMException } from "./dom-exception";
export { CustomEvent, Event, EventTarget } from "./event";
export { AbortController, AbortSignal } from "./abort";
export { TextEncoder, TextDecoder } from "./encoding";
export { URL, URLSearchParams } from "./url";
export { atob, btoa } from "./base64";
