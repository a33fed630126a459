// The short forms of the plugin-call hot path (host/protocol.ts): a call without host calls
// crosses to the worker as a flat array, and an answer without logs or failure comes back
// as one; everything else keeps its envelope. End to end, test/host/plugins.test.ts checks
// the values and stats such answers carry.
import { describe, expect, it } from "vitest";
import { callAnswerMessage, readCallAnswerMessage, readRequestMessage, requestMessage, type ActivationOutcome, type WorkerRequest } from "../../dist/host/protocol.js";

const stats = { cpuTimeMs: 0.25, wallTimeMs: 0.5, memoryBytes: 16_777_216, fetches: 2 };

describe("plugin-call messages", () => {
  it("a call without host calls crosses as an array and reads back the same, with whether its reply is polled", () => {
    for (const replyPolled of [true, false]) {
      const request: WorkerRequest = { op: "call", sandboxId: 7, slot: 3, pluginId: 12, name: "onEvent", args: [1, { a: [null] }], replyPolled };
      const message = requestMessage(41, { ...request, replyPolled: undefined }, replyPolled);
      expect(Array.isArray(message)).toBe(true);
      expect(readRequestMessage(structuredClone(message))).toEqual({ id: 41, request });
    }
  });

  it("other requests, and calls with host calls, keep the envelope", () => {
    const run: WorkerRequest = { op: "run", sandboxId: 1, slot: 0, code: "export default 1", filename: "a.js", input: null };
    expect(requestMessage(1, run)).toEqual({ id: 1, request: run });
    const withHostCalls = { op: "call", sandboxId: 1, slot: 0, pluginId: 2, name: "f", args: [], hostCalls: { channel: 1 } } as unknown as WorkerRequest;
    // The poll flag travels inside the envelope.
    expect(requestMessage(2, withHostCalls, true)).toEqual({ id: 2, request: { ...withHostCalls, replyPolled: true } });
    expect(readRequestMessage({ id: 2, request: withHostCalls })).toEqual({ id: 2, request: withHostCalls });
  });

  it("a successful answer without logs crosses as an array and reads back as the whole reply", () => {
    const outcome: ActivationOutcome = { ok: true, value: { n: [1, 2] }, logs: [], stats };
    const message = callAnswerMessage(9, outcome)!;
    expect(Array.isArray(message)).toBe(true);
    expect(readCallAnswerMessage(structuredClone(message))).toEqual({ type: "reply", id: 9, ok: true, value: outcome });
    const none = readCallAnswerMessage(callAnswerMessage(10, { ok: true, value: undefined, logs: [], stats })!);
    expect(none.ok && "value" in (none.value as object) && (none.value as ActivationOutcome).value).toBe(undefined);
    expect(Object.keys(none.ok ? (none.value as object) : {})).toContain("value");
  });

  it("failures, logs, disposals, load results and skipped activations keep the envelope", () => {
    const error = { kind: "script", message: "boom", name: "Error" } as ActivationOutcome["error"];
    expect(callAnswerMessage(1, { ok: false, error, logs: [], stats })).toBeNull();
    expect(callAnswerMessage(1, { ok: true, value: 1, logs: [{ level: "log", message: "x" }], stats } as ActivationOutcome)).toBeNull();
    expect(callAnswerMessage(1, { ok: true, value: 1, logs: [], stats, sandboxDisposed: "gone" })).toBeNull();
    expect(callAnswerMessage(1, { ok: true, value: 1, logs: [], stats, exports: ["f"] })).toBeNull();
    expect(callAnswerMessage(1, null)).toBeNull();
  });
});
