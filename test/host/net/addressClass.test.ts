import { describe, expect, test } from "vitest";
import { parseIpLiteral } from "../../../host/net/addressClass.js";

describe("address classes the policy refuses unless named", () => {
  test.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.1.2.3", "private"], // RFC 1918
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["fc00::1", "uniqueLocal"], // RFC 4193 fc00::/7
    ["fd12:3456::1", "uniqueLocal"],
    ["169.254.169.254", "linkLocal"], // cloud metadata
    ["169.254.0.1", "linkLocal"],
    ["fe80::1", "linkLocal"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["100.100.100.200", "carrierGradeNat"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["::7f00:1", "ipv4Compatible"],
    ["64:ff9b::7f00:1", "rfc6052"],
    ["fec0::1", "deprecatedSiteLocal"],
  ])("%s is %s", (address, range) => {
    expect(parseIpLiteral(address)!.special!.range).toBe(range);
  });

  test.each(["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700:4700::1111"])("%s is public unicast", (address) => {
    expect(parseIpLiteral(address)!.special).toBeNull();
  });

  test("IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry", () => {
    expect(parseIpLiteral("::ffff:127.0.0.1")).toMatchObject({ address: "127.0.0.1", family: 4, special: { range: "loopback" } });
    expect(parseIpLiteral("[::ffff:a9fe:a9fe]")).toMatchObject({ address: "169.254.169.254", special: { range: "linkLocal" } });
    expect(parseIpLiteral("::ffff:8.8.8.8")).toMatchObject({ address: "8.8.8.8", special: null });
  });

  test("IPv6 addresses are canonical (RFC 5952)", () => {
    expect(parseIpLiteral("[0:0:0:0:0:0:0:1]")!.address).toBe("::1");
    expect(parseIpLiteral("2001:DB8:0:0:0:0:0:1")!.address).toBe("2001:db8::1");
  });

  test("non-literals and loose IPv4 forms are not IP literals (the URL parser normalises those first)", () => {
    expect(parseIpLiteral("example.com")).toBeNull();
    expect(parseIpLiteral("0x7f.1")).toBeNull();
    expect(parseIpLiteral("fe80::1%eth0")).toBeNull();
  });
});
