// URL parsing for Request, Response.redirect and fetch: relative URLs resolve against the
// sandbox's `location` option (like Deno's --location), else they are a TypeError.
import bridge from "scriptbox:bridge";
import { URL } from "scriptbox:web";
import { TypeErrorCtor } from "./util";

let base: string | null | undefined;

export function parseURL(input: string, what: string): URL {
  if (base === undefined) base = bridge.location();
  const url = URL.parse(input, base ?? undefined);
  if (url === null) {
    throw new TypeErrorCtor(
      base === null && URL.parse(input, "http://base.invalid/") !== null
        ? `${what}: relative URL ${JSON.stringify(input)} needs the sandbox's location option`
        : `${what}: invalid URL ${JSON.stringify(input)}`,
    );
  }
  return url;
}

/** The URL serialized without its fragment (Fetch stores request and response URLs so). */
export function withoutFragment(url: URL): string {
  const href = url.href;
  const hash = href.indexOf("#");
  return hash < 0 ? href : href.slice(0, hash);
}
