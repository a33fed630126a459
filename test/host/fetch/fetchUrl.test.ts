// The URL rules the host applies to every guest fetch before the transport sees it
// (host/fetch/fetchUrl.ts), and the response "head" the guest reads back
// (host/worker/bridge/fetch.ts). The guest-visible behaviour is tested end to end in
// test/guest-lib/fetch-server.test.ts.
import { describe, expect, test } from "vitest";
import { FetchUrlError, fetchTarget } from "../../../host/fetch/fetchUrl.js";
import { responseHead } from "../../../host/worker/bridge/fetch.js";

const href = (input: string, location: string | null = null) => {
  const target = fetchTarget(input, location);
  return target.scheme === "data" ? `data ${target.href}` : target.url.href;
};
const refusal = (input: string, location: string | null = null) => {
  try {
    fetchTarget(input, location);
  } catch (error) {
    expect(error).toBeInstanceOf(FetchUrlError);
    expect(error).toBeInstanceOf(TypeError);
    return (error as Error).message;
  }
  throw new Error(`${input} was accepted`);
};

describe("Fetch §5.4 Request constructor URL rules, applied on the host", () => {
  test("absolute URLs are parsed and serialized by the URL standard, fragment removed", () => {
    expect(href("HTTPS://API.Example.COM:443/a/./b/../c?q=1#frag")).toBe("https://api.example.com/a/c?q=1");
    expect(href("  http://127.0.0.1:8080  ")).toBe("http://127.0.0.1:8080/");
    expect(href("http://[0:0::1]:80/x")).toBe("http://[::1]/x");
  });

  test("relative URLs resolve against the location option, and are a TypeError without one", () => {
    expect(href("../x?y#z", "https://app.example.test/base/page.html")).toBe("https://app.example.test/x?y");
    expect(refusal("/x")).toBe(`Request: relative URL "/x" needs the sandbox's location option`);
    expect(refusal("http://[::1")).toBe('Request: invalid URL "http://[::1"');
    expect(refusal("http://[::1", "https://app.example.test/")).toBe('Request: invalid URL "http://[::1"');
  });

  test("a URL with credentials is a TypeError (step 5.3)", () => {
    expect(refusal("https://user:secret@api.example.test/")).toBe('Request: the URL "https://user:secret@api.example.test/" includes credentials');
    expect(refusal("https://user@api.example.test/")).toMatch(/includes credentials$/);
  });
});

describe("Fetch §4.1 main fetch: schemes, and §2.9 bad ports", () => {
  test("data: URLs come back to be answered in the guest, fragment removed", () => {
    expect(href("DATA:text/plain,hi#frag")).toBe("data data:text/plain,hi");
  });

  test.each(["about:blank", "blob:https://a.test/x", "file:///etc/passwd", "ftp://a.test/", "javascript:1", "ws://a.test/"])("%s is refused", (input) => {
    const scheme = input.slice(0, input.indexOf(":") + 1);
    expect(refusal(input)).toBe(`fetch: the ${scheme} scheme is not supported (only http:, https: and data:)`);
  });

  test("bad ports are refused, default and other ports are not", () => {
    for (const port of [0, 1, 22, 25, 6000, 6665, 10080]) {
      expect(refusal(`http://a.test:${port}/`)).toBe(`fetch: port ${port} is blocked (Fetch §2.9 bad ports)`);
    }
    expect(href("https://a.test:443/")).toBe("https://a.test/");
    expect(href("http://a.test:8080/")).toBe("http://a.test:8080/");
    expect(href("https://a.test:22000/")).toBe("https://a.test:22000/");
  });
});

describe("the response head handed to the guest", () => {
  const record = {
    status: 201,
    statusText: "Created",
    url: "https://api.example.test/teams/1",
    redirected: true,
    headers: [
      ["Content-Type", "application/json"],
      ["Set-Cookie", "a=1"],
      ["set-cookie", "b=2"],
    ] as [string, string][],
  };

  test("lines of status, statusText, redirected, url, then lower-case name and value lines", () => {
    expect(responseHead(record).split("\n")).toEqual([
      "201", "Created", "1", "https://api.example.test/teams/1",
      "content-type", "application/json", "set-cookie", "a=1", "set-cookie", "b=2",
    ]);
    expect(responseHead({ ...record, redirected: false, statusText: "", headers: [] })).toBe("201\n\n0\nhttps://api.example.test/teams/1");
  });

  test("nothing with a line break gets through: such a header is dropped, such a statusText is empty", () => {
    const head = responseHead({
      ...record,
      statusText: "OK\nx-injected: 1",
      headers: [["x-a", "1\r\nx-injected: 2"], ["x-b\n", "v"], ["x-c", "fine"]],
    });
    expect(head.split("\n")).toEqual(["201", "", "1", "https://api.example.test/teams/1", "x-c", "fine"]);
  });
});
