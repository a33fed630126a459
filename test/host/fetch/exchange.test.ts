// The exchange against a scripted dispatcher: exactly when the body limit cancels and what is kept.
import type { Dispatcher } from "undici";
import { describe, expect, test } from "vitest";
import { Cancellation } from "../../../host/fetch/cancellation.js";
import { exchange, type ExchangeRequest } from "../../../host/fetch/exchange.js";
import { limitError } from "../../../host/fetch/transportError.js";

/** A dispatcher that hands the handler to the test, with a controller that records aborts. */
function scripted() {
  const aborts: unknown[] = [];
  let handler!: Dispatcher.DispatchHandler;
  const controller = {
    aborted: false,
    paused: false,
    reason: null as Error | null,
    rawHeaders: [] as Buffer[],
    abort(reason: Error) {
      this.aborted = true;
      this.reason = reason;
      aborts.push(reason);
    },
    pause() {},
    resume() {},
  };
  const dispatcher = {
    dispatch(_options: Dispatcher.DispatchOptions, h: Dispatcher.DispatchHandler) {
      handler = h;
      return true;
    },
  } as unknown as Dispatcher;
  const respond = (headers: [string, string][]) => {
    controller.rawHeaders = headers.flat().map((s) => Buffer.from(s, "latin1"));
    handler.onRequestStart!(controller, {});
    handler.onResponseStart!(controller, 200, {}, "OK");
  };
  const data = (bytes: number) => handler.onResponseData!(controller, Buffer.alloc(bytes, 0x61));
  const end = () => handler.onResponseEnd!(controller, {});
  return { dispatcher, controller, aborts, respond, data, end };
}

const REQUEST: ExchangeRequest = { origin: "http://127.0.0.1:1", path: "/", method: "GET", headers: ["host", "x"], body: null, strictCodings: false, wantsBody: () => true };
const MAX = 1000;
const limit = (bytes: number) => (bytes > MAX ? limitError(`test limit (${MAX} bytes) exceeded`) : null);

describe("the body limit cancels the moment it is passed and keeps nothing beyond it", () => {
  test("the chunk that crosses the limit aborts the request at once; later chunks are ignored", async () => {
    const s = scripted();
    const result = exchange(s.dispatcher, REQUEST, new Cancellation(), limit);
    s.respond([]);
    s.data(600);
    expect(s.aborts).toEqual([]);
    s.data(600); // 1200 > 1000
    expect(s.aborts).toHaveLength(1);
    s.data(10_000); // arrives after the abort: dropped
    await expect(result).rejects.toThrow("limit: test limit (1000 bytes) exceeded");
  });

  test("a Content-Length over the limit aborts before any body byte", async () => {
    const s = scripted();
    const result = exchange(s.dispatcher, REQUEST, new Cancellation(), limit);
    s.respond([["Content-Length", "5000"]]);
    expect(s.aborts).toHaveLength(1);
    await expect(result).rejects.toThrow(/limit/);
  });

  test("a body at the limit is kept whole, in one buffer that owns its ArrayBuffer", async () => {
    const s = scripted();
    const result = exchange(s.dispatcher, REQUEST, new Cancellation(), limit);
    s.respond([["Content-Length", "1000"]]);
    s.data(400);
    s.data(600);
    s.end();
    const { body, status, statusText, headers } = await result;
    expect([status, statusText, headers]).toEqual([200, "OK", [["Content-Length", "1000"]]]);
    expect(body.byteLength).toBe(1000);
    expect(body.byteOffset).toBe(0);
    expect(body.buffer.byteLength).toBe(1000);
    expect(s.aborts).toEqual([]);
  });

  test("cancellation while the body streams aborts the request with the cancellation's reason", async () => {
    const s = scripted();
    const cancellation = new Cancellation();
    const result = exchange(s.dispatcher, REQUEST, cancellation, () => null);
    s.respond([]);
    s.data(10);
    cancellation.cancel(limitError("stop"));
    expect(s.aborts).toHaveLength(1);
    await expect(result).rejects.toThrow("limit: stop");
  });
});
