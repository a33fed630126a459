// A job's net.allow is intersected with the worker's: it can narrow the list, never widen
// it (issue 14 §1). Special addresses need an entry naming them on both sides.
import { describe, expect, it } from "vitest";
import { narrowAllowList } from "../../host/queue/allow-narrowing.js";

describe("narrowAllowList", () => {
  it("keeps a job entry the worker allows as is", () => {
    expect(narrowAllowList(["api.example.com"], ["api.example.com", "other.example.com"])).toEqual(["api.example.com"]);
  });

  it("drops a job entry the worker does not allow (a job cannot widen)", () => {
    expect(narrowAllowList(["evil.example.net"], ["api.example.com"])).toEqual([]);
    expect(narrowAllowList(["*"], [])).toEqual([]);
  });

  it("narrows to the port or scheme either side names", () => {
    expect(narrowAllowList(["api.example.com"], ["api.example.com:8443"])).toEqual(["api.example.com:8443"]);
    expect(narrowAllowList(["api.example.com:8443"], ["api.example.com"])).toEqual(["api.example.com:8443"]);
    expect(narrowAllowList(["https://api.example.com"], ["api.example.com"])).toEqual(["https://api.example.com:443"]);
    expect(narrowAllowList(["api.example.com:80"], ["https://api.example.com"])).toEqual([]);
  });

  it("intersects wildcards with names and with each other", () => {
    expect(narrowAllowList(["a.example.com"], ["*.example.com"])).toEqual(["a.example.com"]);
    expect(narrowAllowList(["*.example.com"], ["a.example.com"])).toEqual(["a.example.com"]);
    expect(narrowAllowList(["*.a.example.com"], ["*.example.com"])).toEqual(["*.a.example.com"]);
    expect(narrowAllowList(["*"], ["api.example.com", "*.cdn.net"])).toEqual(["api.example.com", "*.cdn.net"]);
    expect(narrowAllowList(["example.com"], ["*.example.com"])).toEqual([]);
  });

  it("never turns a worker's wildcard into access to a loopback or private address", () => {
    expect(narrowAllowList(["127.0.0.1"], ["*"])).toEqual([]);
    expect(narrowAllowList(["10.0.0.5:8080"], ["*"])).toEqual([]);
    expect(narrowAllowList(["localhost"], ["*"])).toEqual([]);
    expect(narrowAllowList(["a.localhost"], ["*.localhost"])).toEqual([]);
    expect(narrowAllowList(["127.0.0.1:8787"], ["127.0.0.1"])).toEqual(["127.0.0.1:8787"]);
    expect(narrowAllowList(["[::1]:80"], ["::1"])).toEqual(["[::1]:80"]);
    expect(narrowAllowList(["93.184.215.14"], ["*"])).toEqual(["93.184.215.14"]);
  });

  it("rejects an invalid job entry with the allow-list's own message", () => {
    expect(() => narrowAllowList(["http://x/path"], ["*"])).toThrow(/net\.allow: invalid entry/);
  });
});
