import { describe, expect, test } from "vitest";
import { NetworkPolicy } from "../../../host/net/policy.js";
import { HostResolver } from "../../../host/net/resolver.js";

// A fake DNS: names map to address lists; everything else is NXDOMAIN.
function resolver(table: Record<string, string[]>, calls: string[] = []) {
  return new HostResolver({
    lookup: async (hostname) => {
      calls.push(hostname);
      const answer = table[hostname];
      if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
      return answer;
    },
  });
}

const DNS = {
  "api.example.com": ["93.184.216.34"],
  "a.example.com": ["93.184.216.35"],
  "internal.example.com": ["10.0.0.5"],
  "rebind.example.com": ["127.0.0.1"],
  "metadata.example.com": ["169.254.169.254"],
  "mixed.example.com": ["10.0.0.7", "93.184.216.36"],
  "mapped.example.com": ["::ffff:127.0.0.1"],
};

async function refusal(policy: NetworkPolicy, url: string): Promise<string> {
  try {
    await policy.check(new URL(url));
  } catch (error) {
    expect((error as { type: string }).type).toBe("network-policy");
    return (error as Error).message;
  }
  throw new Error(`${url} was allowed`);
}

describe("network policy: deny by default", () => {
  test("an empty net.allow refuses everything and says so", async () => {
    const policy = new NetworkPolicy([], resolver(DNS));
    expect(await refusal(policy, "https://api.example.com/")).toBe(
      'network policy: api.example.com:443 is not in net.allow (net.allow is empty: no network access); add "api.example.com" to net.allow',
    );
  });

  test("a host not in net.allow is refused, naming host:port and the entry to add", async () => {
    const policy = new NetworkPolicy(["api.example.com"], resolver(DNS));
    expect(await refusal(policy, "http://other.example.com:8080/")).toBe(
      'network policy: other.example.com:8080 is not in net.allow; add "other.example.com:8080" to net.allow',
    );
  });

  test("an allowed host resolves once and yields the checked address to connect to", async () => {
    const calls: string[] = [];
    const policy = new NetworkPolicy(["api.example.com"], resolver(DNS, calls));
    const target = await policy.check(new URL("https://api.example.com/x"));
    expect(target).toMatchObject({ scheme: "https:", hostname: "api.example.com", port: 443, hostHeader: "api.example.com" });
    expect(target.addresses.map((a) => a.address)).toEqual(["93.184.216.34"]);
    expect(calls).toEqual(["api.example.com"]);
  });

  test.each(["ftp://api.example.com/", "file:///etc/passwd", "ws://api.example.com/", "data:text/plain,hi", "javascript:alert(1)"])(
    "the scheme of %s is refused: only http: and https:",
    async (url) => {
      const policy = new NetworkPolicy(["*"], resolver(DNS));
      expect(await refusal(policy, url)).toMatch(/^network policy: the "[a-z]+:" scheme is not allowed; only http: and https: URLs can be fetched$/);
    },
  );

  test("a port not in a host:port entry is refused", async () => {
    const policy = new NetworkPolicy(["api.example.com:8443"], resolver(DNS));
    expect(await refusal(policy, "https://api.example.com/")).toMatch(/api\.example\.com:443 is not in net\.allow/);
    await expect(policy.check(new URL("https://api.example.com:8443/"))).resolves.toBeTruthy();
  });

  test("*.domain allows subdomains but not the domain itself", async () => {
    const policy = new NetworkPolicy(["*.example.com"], resolver({ ...DNS, "example.com": ["93.184.216.1"] }));
    await expect(policy.check(new URL("https://a.example.com/"))).resolves.toBeTruthy();
    expect(await refusal(policy, "https://example.com/")).toMatch(/example\.com:443 is not in net\.allow/);
  });
});

describe("remembered decisions (the host check is cached per scheme, host and port)", () => {
  test("a repeated refusal and a repeated allowance give the same answers; other ports and schemes are judged apart", async () => {
    const policy = new NetworkPolicy(["127.0.0.1:8080"], resolver(DNS));
    const refused = 'network policy: 127.0.0.1:8081 is a loopback address; add "127.0.0.1:8081" to net.allow';
    for (let i = 0; i < 3; i++) {
      expect(await refusal(policy, "http://127.0.0.1:8081/a")).toBe(refused);
      const target = await policy.check(new URL(`http://127.0.0.1:8080/path${i}`));
      expect(target).toMatchObject({ scheme: "http:", hostname: "127.0.0.1", port: 8080, hostHeader: "127.0.0.1:8080" });
      expect(target.addresses.map((a) => a.address)).toEqual(["127.0.0.1"]);
    }
    expect((await policy.check(new URL("https://127.0.0.1:8080/"))).scheme).toBe("https:");
    expect(await refusal(policy, "ftp://127.0.0.1:8080/")).toMatch(/^network policy: the "ftp:" scheme is not allowed/);
  });

  test("checkWithoutDns answers IP literals at once and leaves names to check()", () => {
    const policy = new NetworkPolicy(["127.0.0.1:8080", "api.example.com"], resolver(DNS));
    expect(policy.checkWithoutDns(new URL("http://127.0.0.1:8080/x"))).toMatchObject({ hostname: "127.0.0.1", port: 8080, hostHeader: "127.0.0.1:8080" });
    expect(policy.checkWithoutDns(new URL("https://api.example.com/"))).toBeNull();
    expect(() => policy.checkWithoutDns(new URL("http://10.0.0.1/"))).toThrow(/^network policy: 10\.0\.0\.1:80 is a private address/);
    expect(() => policy.checkWithoutDns(new URL("https://other.example.com/"))).toThrow(/^network policy: other\.example\.com:443 is not in net\.allow/);
  });

  test("a remembered target cannot be changed by a caller", () => {
    const policy = new NetworkPolicy(["api.example.com"], resolver(DNS));
    const target = policy.target(new URL("https://api.example.com/"));
    expect(() => {
      (target as { hostname: string }).hostname = "evil.example.com";
    }).toThrow(TypeError);
    expect(policy.target(new URL("https://api.example.com/")).hostname).toBe("api.example.com");
  });
});

describe("special addresses are refused unless an entry names them", () => {
  test.each([
    ["http://127.0.0.1:8080/", 'network policy: 127.0.0.1:8080 is a loopback address; add "127.0.0.1:8080" to net.allow'],
    ["http://[::1]:8080/", 'network policy: [::1]:8080 is a loopback address; add "[::1]:8080" to net.allow'],
    ["http://10.0.0.1/", 'network policy: 10.0.0.1:80 is a private address (RFC 1918); add "10.0.0.1:80" to net.allow'],
    ["http://192.168.0.10/", 'network policy: 192.168.0.10:80 is a private address (RFC 1918); add "192.168.0.10:80" to net.allow'],
    ["http://[fd00::1]/", 'network policy: [fd00::1]:80 is a unique-local address (fc00::/7); add "[fd00::1]:80" to net.allow'],
    ["http://169.254.169.254/latest/meta-data/", 'network policy: 169.254.169.254:80 is a link-local address; add "169.254.169.254:80" to net.allow'],
    ["http://[fe80::1]/", 'network policy: [fe80::1]:80 is a link-local address; add "[fe80::1]:80" to net.allow'],
    ["http://0.0.0.0:8080/", 'network policy: 0.0.0.0:8080 is an unspecified address; add "0.0.0.0:8080" to net.allow'],
    ["http://[::]:8080/", 'network policy: [::]:8080 is an unspecified address; add "[::]:8080" to net.allow'],
    [
      "http://[::ffff:127.0.0.1]:8080/",
      'network policy: [::ffff:7f00:1]:8080 (127.0.0.1) is a loopback address; add "127.0.0.1:8080" to net.allow',
    ],
    [
      "http://[::ffff:169.254.169.254]/",
      'network policy: [::ffff:a9fe:a9fe]:80 (169.254.169.254) is a link-local address; add "169.254.169.254:80" to net.allow',
    ],
    ["http://2130706433:8080/", 'network policy: 127.0.0.1:8080 is a loopback address; add "127.0.0.1:8080" to net.allow'],
  ])("%s is refused even with net.allow [\"*\"]", async (url, message) => {
    expect(await refusal(new NetworkPolicy(["*"], resolver(DNS)), url)).toBe(message);
  });

  test("an IP entry names its address (with its port rule)", async () => {
    const policy = new NetworkPolicy(["127.0.0.1:8080", "[::1]", "169.254.169.254"], resolver(DNS));
    await expect(policy.check(new URL("http://127.0.0.1:8080/"))).resolves.toMatchObject({ addresses: [{ address: "127.0.0.1" }] });
    await expect(policy.check(new URL("http://[::ffff:127.0.0.1]:8080/"))).resolves.toMatchObject({ addresses: [{ address: "127.0.0.1" }] });
    await expect(policy.check(new URL("http://[::1]:9999/"))).resolves.toBeTruthy();
    await expect(policy.check(new URL("http://169.254.169.254/"))).resolves.toBeTruthy();
    expect(await refusal(policy, "http://127.0.0.1:8081/")).toMatch(/loopback/);
  });

  test("a hostname that resolves to 127.0.0.1 (localhost) is refused unless allowed", async () => {
    expect(await refusal(new NetworkPolicy([], resolver(DNS)), "http://localhost:8787/")).toMatch(/^network policy: localhost:8787 is not in net\.allow/);
    expect(await refusal(new NetworkPolicy(["*"], resolver(DNS)), "http://localhost:8787/")).toBe(
      'network policy: localhost:8787 resolves to 127.0.0.1, a loopback address; add "localhost:8787" to net.allow',
    );
    expect(await refusal(new NetworkPolicy(["*.localhost"], resolver(DNS)), "http://app.localhost:8787/")).toMatch(/resolves to 127\.0\.0\.1, a loopback address/);
    const allowed = await new NetworkPolicy(["localhost:8787"], resolver(DNS)).check(new URL("http://localhost:8787/"));
    expect(allowed.addresses.map((a) => a.address)).toEqual(["127.0.0.1", "::1"]); // RFC 6761: never asks DNS
    expect(allowed.hostHeader).toBe("localhost:8787");
  });

  test("DNS rebinding: an allowed name resolving to a special address is refused; wildcards never reach one", async () => {
    const policy = new NetworkPolicy(["rebind.example.com", "*.example.com"], resolver(DNS));
    expect(await refusal(policy, "http://rebind.example.com/")).toBe(
      'network policy: rebind.example.com:80 resolves to 127.0.0.1, a loopback address; add "127.0.0.1:80" to net.allow',
    );
    expect(await refusal(policy, "http://metadata.example.com/")).toBe(
      'network policy: metadata.example.com:80 resolves to 169.254.169.254, a link-local address; add "169.254.169.254:80" to net.allow',
    );
    expect(await refusal(policy, "http://internal.example.com:8080/")).toMatch(/resolves to 10\.0\.0\.5, a private address \(RFC 1918\); add "10\.0\.0\.5:8080"/);
    expect(await refusal(policy, "http://mapped.example.com/")).toMatch(/resolves to 127\.0\.0\.1, a loopback address/);
  });

  test("an internal name is reachable when both the name and its address are allowed", async () => {
    const policy = new NetworkPolicy(["internal.example.com", "10.0.0.5:443"], resolver(DNS));
    const target = await policy.check(new URL("https://internal.example.com/"));
    expect(target.addresses.map((a) => a.address)).toEqual(["10.0.0.5"]);
    expect(await refusal(policy, "http://internal.example.com/")).toMatch(/add "10\.0\.0\.5:80"/);
  });

  test("only the checked addresses of a name are kept: a special address among public ones is dropped", async () => {
    const target = await new NetworkPolicy(["mixed.example.com"], resolver(DNS)).check(new URL("http://mixed.example.com/"));
    expect(target.addresses.map((a) => a.address)).toEqual(["93.184.216.36"]);
  });

  test("a DNS failure is a network error, not a policy refusal", async () => {
    const policy = new NetworkPolicy(["nowhere.example.com"], resolver(DNS));
    await expect(policy.check(new URL("http://nowhere.example.com/"))).rejects.toMatchObject({
      type: "network",
      message: "fetch failed: cannot resolve nowhere.example.com (ENOTFOUND)",
    });
  });

  test("invalid entries are refused when the policy is created", () => {
    expect(() => new NetworkPolicy(["exa mple.com"])).toThrow(/net\.allow: invalid entry "exa mple\.com"/);
  });
});
