import { describe, expect, test } from "vitest";
import { parseAllowEntry, entryMatchesHost, type RequestTarget } from "../../../host/net/allowEntry.js";
import { parseIpLiteral } from "../../../host/net/addressClass.js";

function target(url: string): RequestTarget {
  const u = new URL(url);
  const scheme = u.protocol as "http:" | "https:";
  const ip = parseIpLiteral(u.hostname);
  const hostname = ip ? ip.address : u.hostname.replace(/\.$/, "");
  return { scheme, hostname, port: u.port ? Number(u.port) : scheme === "https:" ? 443 : 80, ip };
}

const matches = (entry: string, url: string) => entryMatchesHost(parseAllowEntry(entry), target(url));

describe("net.allow entry syntax", () => {
  test("host: that host on any port, http and https", () => {
    expect(parseAllowEntry("API.Example.com")).toMatchObject({ scheme: null, port: null, host: { kind: "name", name: "api.example.com" } });
    expect(matches("api.example.com", "https://api.example.com/")).toBe(true);
    expect(matches("api.example.com", "http://api.example.com:8080/")).toBe(true);
    expect(matches("api.example.com", "https://api.example.com./")).toBe(true); // trailing dot
    expect(matches("api.example.com", "https://www.example.com/")).toBe(false);
    expect(matches("api.example.com", "https://api.example.com.evil.test/")).toBe(false);
  });

  test("host:port: that port only", () => {
    expect(matches("api.example.com:8443", "https://api.example.com:8443/")).toBe(true);
    expect(matches("api.example.com:8443", "https://api.example.com/")).toBe(false);
    expect(matches("api.example.com:443", "https://api.example.com/")).toBe(true); // default port counts as 443
    expect(matches("api.example.com:443", "http://api.example.com/")).toBe(false);
  });

  test("*.domain: subdomains at any depth, not the domain itself", () => {
    expect(parseAllowEntry("*.example.com").host).toEqual({ kind: "suffix", suffix: ".example.com" });
    expect(matches("*.example.com", "https://a.example.com/")).toBe(true);
    expect(matches("*.example.com", "https://a.b.example.com/")).toBe(true);
    expect(matches("*.example.com", "https://example.com/")).toBe(false);
    expect(matches("*.example.com", "https://badexample.com/")).toBe(false);
    expect(matches("*.example.com:8080", "http://a.example.com:8080/")).toBe(true);
    expect(matches("*.example.com:8080", "http://a.example.com/")).toBe(false);
  });

  test("IP literals, IPv6 with brackets for a port", () => {
    expect(matches("127.0.0.1", "http://127.0.0.1:9999/")).toBe(true);
    expect(matches("127.0.0.1:8080", "http://127.0.0.1:8080/")).toBe(true);
    expect(matches("127.0.0.1:8080", "http://127.0.0.1:8081/")).toBe(false);
    expect(matches("::1", "http://[::1]:8080/")).toBe(true);
    expect(matches("[::1]", "http://[::1]/")).toBe(true);
    expect(matches("[::1]:8080", "http://[::1]:8080/")).toBe(true);
    expect(matches("[::1]:8080", "http://[::1]:8081/")).toBe(false);
    expect(matches("[0:0:0:0:0:0:0:1]:8080", "http://[::1]:8080/")).toBe(true); // compared in canonical form
    expect(matches("127.0.0.1", "http://localhost/")).toBe(false); // entries match the URL's host as written
  });

  test("an IPv4 entry also names the IPv4-mapped IPv6 form of that address", () => {
    expect(matches("127.0.0.1:8080", "http://[::ffff:127.0.0.1]:8080/")).toBe(true);
  });

  test("origins: a scheme restricts the scheme and implies its default port", () => {
    expect(parseAllowEntry("https://api.example.com")).toMatchObject({ scheme: "https:", port: 443 });
    expect(matches("https://api.example.com", "https://api.example.com/")).toBe(true);
    expect(matches("https://api.example.com/", "http://api.example.com:443/")).toBe(false);
    expect(matches("https://api.example.com", "https://api.example.com:8443/")).toBe(false);
    expect(matches("http://127.0.0.1:8787", "http://127.0.0.1:8787/")).toBe(true);
  });

  test("*: any host; *:port: any host on that port", () => {
    expect(matches("*", "https://anything.test/")).toBe(true);
    expect(matches("*:8080", "http://anything.test:8080/")).toBe(true);
    expect(matches("*:8080", "http://anything.test/")).toBe(false);
  });

  test("internationalised names are compared in their ASCII (punycode) form, as the URL parser serialises them", () => {
    expect(parseAllowEntry("bücher.example").host).toEqual({ kind: "name", name: "xn--bcher-kva.example" });
    expect(matches("bücher.example", "https://bücher.example/")).toBe(true);
  });

  test("numeric host forms the URL parser reads as IPv4 become IP entries", () => {
    expect(parseAllowEntry("0x7f.1").host).toMatchObject({ kind: "ip", address: { address: "127.0.0.1" } });
  });

  test.each([
    ["", /empty/],
    ["ftp://example.com", /only http:\/\/ and https:\/\//],
    ["example.com/path", /without path/],
    ["user@example.com", /credentials/],
    ["example.com:0", /port must be 1-65535/],
    ["example.com:65536", /port must be 1-65535/],
    ["example.com:http", /port must be 1-65535/],
    ["a.*.example.com", /wildcard/],
    ["*.", /must be followed by a domain/],
    ["*.127.0.0.1", /must be followed by a domain/],
    ["[::1", /unclosed/],
    ["[example.com]", /not an IPv6 address/],
    ["exa mple.com", /without path/],
  ])("invalid entry %j is a TypeError", (entry, why) => {
    expect(() => parseAllowEntry(entry)).toThrow(TypeError);
    expect(() => parseAllowEntry(entry)).toThrow(why);
  });
});
