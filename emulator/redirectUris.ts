// What the emulator knows about an OAuth redirect URI: which forms it accepts (RFC 8252,
// RFC 9700 §2.1), how to tell a person where approval sends them, and the
// Content-Security-Policy source that lets the consent form's 303 reach it and nothing else.
export type RedirectKind = "https" | "loopback" | "private-use";

const LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"];
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/i;

/** The kind of an acceptable redirect URI, or null when registration must refuse it. */
export function redirectKind(value: string): RedirectKind | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.hash || value.includes("#")) return null;
  // WHATWG URL lets `;`, `,`, `'` and more into a host; the consent page quotes the origin
  // in its CSP form-action, where `;` or `,` would end the directive or the policy. A real
  // host is a (punycoded) DNS name or an IP literal, so anything else is refused.
  const webUrl = url.protocol === "https:" || url.protocol === "http:";
  if (webUrl && !/^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/i.test(url.hostname)) return null;
  if (url.protocol === "https:") return "https";
  if (url.protocol === "http:") return LOOPBACK_HOSTS.includes(url.hostname) ? "loopback" : null;
  // RFC 8252 §7.1: a private-use scheme is a reversed domain name (it has a dot).
  return PRIVATE_USE_SCHEME.test(url.protocol) ? "private-use" : null;
}

/** One sentence for the consent page: where the browser goes after Approve or Deny. */
export function describeRedirect(value: string): string {
  const url = new URL(value);
  switch (redirectKind(value)) {
    case "loopback":
      return `Approving or denying sends you to ${url.origin}${url.pathname}, an application running on this computer (port ${url.port || "80"}).`;
    case "private-use":
      return `Approving or denying hands you to the app installed on this device for "${url.protocol}" links (${url.protocol}${url.pathname}).`;
    default:
      return `Approving or denying sends you to ${url.origin}${url.pathname} (the site ${url.host}).`;
  }
}

/**
 * The CSP form-action source for a redirect URI (CSP3 §6.7.2.13): the form posts to the
 * emulator, whose 303 goes on to the client, and browsers check form-action on that
 * redirect too. http(s): the exact origin and path (`;` and `,` would end the source, so
 * they are percent-encoded; CSP matching decodes them). A private-use scheme: the scheme,
 * the narrowest source CSP can express for it.
 */
export function formActionSource(value: string): string {
  const url = new URL(value);
  if (url.protocol === "http:" || url.protocol === "https:") {
    return `${url.origin}${url.pathname.replace(/;/g, "%3B").replace(/,/g, "%2C")}`;
  }
  return url.protocol;
}
