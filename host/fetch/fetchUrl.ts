// The URL rules a fetch meets before the transport sees it, on the host: the Request
// constructor's (Fetch §5.4: parse against the sandbox's location, no credentials), then
// main fetch's scheme switch (§4.1: data: is answered in the guest, http(s) goes to the
// network, everything else is refused) and port blocking (§2.9). The guest sends
// `fetch(url)` strings here unparsed: Node's WHATWG URL parser does in ~1 µs what the
// guest's interpreted one does in ~100 µs. Failures are TypeErrors with the messages the
// guest Request class gives for the same input.
export class FetchUrlError extends TypeError {}

export type FetchTarget = { scheme: "data"; href: string } | { scheme: "http"; url: URL };

// Fetch §2.9 port blocking.
const BAD_PORTS = new Set(
  "0,1,7,9,11,13,15,17,19,20,21,22,23,25,37,42,43,53,69,77,79,87,95,101,102,103,104,109,110,111,113,115,117,119,123,135,137,139,143,161,179,389,427,465,512,513,514,515,526,530,531,532,540,548,554,556,563,587,601,636,989,990,993,995,1719,1720,1723,2049,3659,4045,4190,5060,5061,6000,6566,6665,6666,6667,6668,6669,6679,6697,10080".split(","),
);

/** Fetch §5.4 step 5.3: a URL with a username or password cannot be fetched. */
export function hasCredentials(url: URL): boolean {
  // The href test skips the slower accessors when the answer cannot be yes.
  return url.href.includes("@") && (url.username !== "" || url.password !== "");
}

/** Requests and responses keep their URL without the fragment (Fetch). */
export function removeFragment(url: URL): void {
  if (url.href.includes("#")) url.hash = "";
}

/** Where a fetch of `input` goes, its fragment removed; a FetchUrlError when it cannot be fetched. */
export function fetchTarget(input: string, location: string | null): FetchTarget {
  let url: URL;
  try {
    url = new URL(input, location ?? undefined);
  } catch {
    throw new FetchUrlError(
      location === null && URL.canParse(input, "http://base.invalid/")
        ? `Request: relative URL ${JSON.stringify(input)} needs the sandbox's location option`
        : `Request: invalid URL ${JSON.stringify(input)}`,
    );
  }
  if (hasCredentials(url)) throw new FetchUrlError(`Request: the URL ${JSON.stringify(input)} includes credentials`);
  removeFragment(url);
  const scheme = url.protocol;
  if (scheme === "data:") return { scheme: "data", href: url.href };
  if (scheme !== "http:" && scheme !== "https:") {
    throw new FetchUrlError(`fetch: the ${scheme} scheme is not supported (only http:, https: and data:)`);
  }
  if (BAD_PORTS.has(url.port)) throw new FetchUrlError(`fetch: port ${url.port} is blocked (Fetch §2.9 bad ports)`);
  return { scheme: "http", url };
}
