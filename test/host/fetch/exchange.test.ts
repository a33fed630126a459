// The exchange against a scripted dispatcher: exactly when the body limit cancels and what is kept.
import type { Dispatcher } from "undici";
import { describe, expect, test } from "vitest";
import { Cancellation } from "../../../host/fetch/cancellation.js";
import { exchange, type BodyTarget, type ExchangeRequest } from "../../../host/fetch/exchange.js";
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
  const data = (bytes: number, fill = 0x61) => handler.onResponseData!(controller, Buffer.alloc(bytes, fill));
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

/** A BodyTarget that records what the exchange does with it (the sandbox's writes into the guest heap). */
function recordingTarget(length: number) {
  const bytes = Buffer.alloc(length);
  const writes: [number, number][] = [];
  const target = {
    length,
    released: 0,
    write(chunk: Uint8Array, offset: number) {
      writes.push([offset, chunk.byteLength]);
      bytes.set(chunk, offset);
    },
    release() {
      target.released++;
    },
  };
  return { target, bytes, writes };
}

function withTarget(asked: number[], made: ReturnType<typeof recordingTarget>[]): ExchangeRequest {
  return {
    ...REQUEST,
    bodyTarget: (length: number): BodyTarget => {
      asked.push(length);
      const made1 = recordingTarget(length);
      made.push(made1);
      return made1.target;
    },
  };
}

describe("a body with a Content-Length goes straight into the caller's target (issue 12)", () => {
  test("asked once with the declared length; every chunk written once, in order, at its offset; handed over whole", async () => {
    const s = scripted();
    const asked: number[] = [];
    const made: ReturnType<typeof recordingTarget>[] = [];
    const result = exchange(s.dispatcher, withTarget(asked, made), new Cancellation(), limit);
    s.respond([["Content-Length", "1000"]]);
    s.data(300, 0x31);
    s.data(700, 0x32);
    s.end();
    const exchanged = await result;
    expect(asked).toEqual([1000]);
    expect(made[0]!.writes).toEqual([
      [0, 300],
      [300, 700],
    ]);
    expect(made[0]!.bytes.toString("latin1")).toBe("1".repeat(300) + "2".repeat(700));
    expect(exchanged.placed).toBe(made[0]!.target);
    expect(exchanged.body.byteLength).toBe(0);
    expect(made[0]!.target.released).toBe(0); // handed over, not freed
  });

  test("not asked over the limit, for an empty body, without Content-Length, or for a coded body", async () => {
    for (const headers of [[["Content-Length", "5000"]], [["Content-Length", "0"]], [], [["Content-Length", "20"], ["Content-Encoding", "gzip"]]] as [string, string][][]) {
      const s = scripted();
      const asked: number[] = [];
      const result = exchange(s.dispatcher, withTarget(asked, []), new Cancellation(), limit);
      s.respond(headers);
      s.end();
      await result.catch(() => undefined);
      expect(asked).toEqual([]);
    }
  });

  test("cancelled mid-body: the target is released once and nothing is written after", async () => {
    const s = scripted();
    const made: ReturnType<typeof recordingTarget>[] = [];
    const cancellation = new Cancellation();
    const result = exchange(s.dispatcher, withTarget([], made), cancellation, limit);
    s.respond([["Content-Length", "1000"]]);
    s.data(100);
    cancellation.cancel(limitError("stop"));
    s.data(100);
    await expect(result).rejects.toThrow("limit: stop");
    expect(made[0]!.writes).toEqual([[0, 100]]);
    expect(made[0]!.target.released).toBe(1);
    expect(s.aborts).toHaveLength(1);
  });

  test("more bytes than Content-Length, or the end before it: the fetch fails and the target is released", async () => {
    const longer = scripted();
    const madeLonger: ReturnType<typeof recordingTarget>[] = [];
    const tooLong = exchange(longer.dispatcher, withTarget([], madeLonger), new Cancellation(), limit);
    longer.respond([["Content-Length", "100"]]);
    longer.data(60);
    longer.data(60);
    await expect(tooLong).rejects.toThrow("longer than its Content-Length");
    expect(madeLonger[0]!.writes).toEqual([[0, 60]]); // never written past its length
    expect(madeLonger[0]!.target.released).toBe(1);

    const shorter = scripted();
    const madeShorter: ReturnType<typeof recordingTarget>[] = [];
    const tooShort = exchange(shorter.dispatcher, withTarget([], madeShorter), new Cancellation(), limit);
    shorter.respond([["Content-Length", "100"]]);
    shorter.data(60);
    shorter.end();
    await expect(tooShort).rejects.toThrow("shorter than its Content-Length");
    expect(madeShorter[0]!.target.released).toBe(1);
  });

  test("a target that fails to take a chunk fails the fetch and is released", async () => {
    const s = scripted();
    const released: number[] = [];
    const request: ExchangeRequest = {
      ...REQUEST,
      bodyTarget: (length) => ({
        length,
        write() {
          throw new Error("the block was released");
        },
        release: () => released.push(1),
      }),
    };
    const result = exchange(s.dispatcher, request, new Cancellation(), limit);
    s.respond([["Content-Length", "10"]]);
    s.data(10);
    await expect(result).rejects.toThrow("cannot keep the response body: the block was released");
    expect(released).toEqual([1]);
    expect(s.aborts).toHaveLength(1);
  });
});
