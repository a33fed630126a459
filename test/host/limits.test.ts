// Issue 2 §6: every limit has a safe default, is configurable and is enforced for real; a
// limit ends the run with error.kind cpu / memory / timeout / limit and a message naming
// the limit and its value; afterwards the sandbox keeps serving, or (when the engine
// instance cannot go on) says it was disposed, and the next createSandbox works.
import { describe, expect, it } from "vitest";
import { configurePool, createSandbox, DEFAULT_LIMITS, runScript, SandboxDisposedError, type RunResult, type Sandbox } from "scriptbox";
import { createEngineInstance } from "../../dist/host/engine/instance.js";

function failure(result: RunResult) {
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error("expected a failure");
  return result.error;
}

async function withSandbox<T>(options: Parameters<typeof createSandbox>[0], use: (sandbox: Sandbox) => Promise<T>): Promise<T> {
  const sandbox = await createSandbox(options);
  try {
    return await use(sandbox);
  } finally {
    await sandbox.dispose();
  }
}

const stillServes = async (sandbox: Sandbox) => expect(await sandbox.run("export default () => 'alive'")).toMatchObject({ ok: true, value: "alive" });

describe("defaults", () => {
  it("has a safe default for every limit", () => {
    expect(DEFAULT_LIMITS).toEqual({
      memoryBytes: 64 * 1024 * 1024,
      stackBytes: 256 * 1024,
      cpuTimeMs: 5000,
      wallTimeMs: 30000,
      maxFetches: 50,
      maxConcurrentFetches: 6,
      maxRequestBytes: 10 * 1024 * 1024,
      maxResponseBytes: 16 * 1024 * 1024,
      fetchTimeoutMs: 15000,
      maxRequestHeaders: 128,
      maxRequestHeaderBytes: 64 * 1024,
      maxTimers: 1000,
      maxLogBytes: 1024 * 1024,
      maxHostCalls: 100_000,
      maxHostCallBytes: 8 * 1024 * 1024,
    });
  });

  it("refuses unknown limits and out-of-range values at createSandbox", async () => {
    await expect(createSandbox({ limits: { cpuTime: 5 } as never })).rejects.toThrow("limits.cpuTime is not a known limit");
    await expect(createSandbox({ limits: { memoryBytes: 1024 } })).rejects.toThrow(RangeError);
    await expect(createSandbox({ limits: { cpuTimeMs: Number.NaN } })).rejects.toThrow("limits.cpuTimeMs must be a number");
    // A value of the wrong type is a TypeError that shows it as it is (the string "5" is not 5).
    await expect(createSandbox({ limits: { maxHostCalls: "5" } as never })).rejects.toThrow(TypeError);
    await expect(createSandbox({ limits: { maxHostCalls: "5" } as never })).rejects.toThrow('limits.maxHostCalls must be a number from 0 to 100000000, got the string "5"');
    await expect(createSandbox({ limits: { cpuTimeMs: null } as never })).rejects.toThrow("got null");
    await expect(runScript("export default () => 1", { queueTimeoutMs: "100" } as never)).rejects.toThrow('queueTimeoutMs must be a number from 0 to 86400000, got the string "100"');
    expect(() => configurePool({ sharedWorkers: "2" } as never)).toThrow(new TypeError('pool option sharedWorkers must be an integer from 1 to 64, got the string "2"'));
  });

  it("memoryBytes goes up to the engine's 2 GiB, and a sandbox at that cap runs", async () => {
    // Above 2 GiB a sandbox used to be accepted and then disposed at its first run (the
    // engine's wasm module declares at most 32,768 pages).
    await expect(createSandbox({ limits: { memoryBytes: 2048 * 1024 * 1024 + 65536 } })).rejects.toThrow(RangeError);
    await expect(createSandbox({ limits: { memoryBytes: 3 * 1024 * 1024 * 1024 } })).rejects.toThrow("limits.memoryBytes must be a number from 25165824 to 2147483648");
    const largest = await createSandbox({ limits: { memoryBytes: 2048 * 1024 * 1024 } });
    try {
      expect(await largest.run("export default () => new Uint8Array(64 << 20).length")).toMatchObject({ ok: true, value: 64 << 20 });
    } finally {
      await largest.dispose();
    }
  });
});

describe("memoryBytes", () => {
  it("the engine counts a growth as failed only when all of emscripten's attempts were refused, and not in the host's probes", async () => {
    const engine = await createEngineInstance(32 * 1024 * 1024);
    const tooMany = 1024; // pages: 64 MiB more than the cap
    const refused = () => expect(() => engine.memory.grow(tooMany)).toThrow(RangeError);
    // One refused attempt, then one that works: what emscripten does near the cap (1.2x, then 1.1x).
    refused();
    engine.memory.grow(1);
    refused();
    refused();
    engine.memory.grow(1);
    expect(engine.failedGrowths()).toBe(0);
    refused();
    refused();
    refused();
    expect(engine.failedGrowths()).toBe(1);
    engine.probe(() => {
      refused();
      refused();
      refused();
    });
    expect(engine.failedGrowths()).toBe(1);
  });

  it("small allocations that fill the heap end with kind memory, not 'Uncaught null', however the heap filled", async () => {
    // At the cap QuickJS throws null (no room for its error); by the time the host looks,
    // the unwound frames have freed the heap. Found by two hostile reviews.
    await withSandbox({ limits: { memoryBytes: 32 * 1024 * 1024 } }, async (sandbox) => {
      for (const source of [
        "export default () => { const a = []; for (;;) a.push({}) }",
        "export default () => Array.from({ length: 3e6 }, () => ({}))",
        "export default () => { const f = () => Promise.resolve().then(f); f(); return new Promise(() => {}) }",
      ]) {
        const error = failure(await sandbox.run(source));
        expect(error, source).toMatchObject({ kind: "memory", message: "memoryBytes limit (32 MiB) exceeded: out of memory" });
        await stillServes(sandbox);
      }
      // A script's own `throw null` stays the script's.
      expect(failure(await sandbox.run("export default () => { throw null }"))).toMatchObject({ kind: "script", message: "Uncaught null" });
    });
  });

  it("caps the engine's memory: allocation past it ends the run with kind memory", async () => {
    await withSandbox({ limits: { memoryBytes: 32 * 1024 * 1024 } }, async (sandbox) => {
      const error = failure(await sandbox.run("const keep = []; for (;;) keep.push(new Uint8Array(1024 * 1024)); "));
      expect(error).toMatchObject({ kind: "memory", name: "LimitError", message: "memoryBytes limit (32 MiB) exceeded: out of memory" });
      await stillServes(sandbox);
    });
  });

  it("is a catchable InternalError inside the script, and the memory stays capped", async () => {
    await withSandbox({ limits: { memoryBytes: 32 * 1024 * 1024 } }, async (sandbox) => {
      const result = await sandbox.run(`export default () => {
        let keep = [];
        try { for (;;) keep.push("x".repeat(1 << 20) + keep.length) } catch (e) { keep = null; return [e.name, e.message] }
      }`);
      expect(result).toMatchObject({ ok: true, value: ["InternalError", "out of memory"] });
      expect(result.stats.memoryBytes).toBeLessThanOrEqual(32 * 1024 * 1024);
    });
  });

  it("refuses an input that would not fit instead of corrupting the engine", async () => {
    await withSandbox({ limits: { memoryBytes: 24 * 1024 * 1024 } }, async (sandbox) => {
      const error = failure(await sandbox.run("export default (s) => s.length", { input: "x".repeat(40 * 1024 * 1024) }));
      expect(error.kind).toBe("memory");
      expect(error.message).toContain("memoryBytes limit (24 MiB)");
      await stillServes(sandbox);
    });
  });
});

describe("stackBytes", () => {
  it("deep recursion ends the run with kind limit, naming stackBytes", async () => {
    await withSandbox({ limits: { stackBytes: 64 * 1024 } }, async (sandbox) => {
      const error = failure(await sandbox.run("function down(n) { return down(n + 1) + 1 } down(0)"));
      expect(error).toMatchObject({ kind: "limit", message: "stackBytes limit (65536 bytes) exceeded: stack overflow" });
      await stillServes(sandbox);
    });
  });

  it("deep recursion, nested JSON.parse and deep JSON.stringify are catchable guest errors", async () => {
    await withSandbox({}, async (sandbox) => {
      const result = await sandbox.run(`export default () => {
        const caught = [];
        const attempt = (f) => { try { f(); caught.push("no error") } catch (e) { caught.push(e.message) } };
        attempt(() => { const f = (n) => f(n + 1); f(0) });
        attempt(() => JSON.parse("[".repeat(200000)));
        attempt(() => { let o = {}; for (let i = 0; i < 100000; i++) o = { o }; JSON.stringify(o) });
        attempt(() => eval("(".repeat(100000)));
        return caught;
      }`);
      expect(result.ok).toBe(true);
      if (result.ok) for (const message of result.value as string[]) expect(message).toMatch(/stack overflow/);
      await stillServes(sandbox);
    });
  });
});

describe("cpuTimeMs", () => {
  it("stops a busy loop with kind cpu, and the sandbox runs the next script", async () => {
    await withSandbox({ limits: { cpuTimeMs: 150 } }, async (sandbox) => {
      const result = await sandbox.run("export default () => { for (;;) {} }", { filename: "spin.js" });
      const error = failure(result);
      expect(error).toMatchObject({ kind: "cpu", name: "LimitError", message: "cpuTimeMs limit (150 ms) exceeded" });
      expect(error.stack).toContain("spin.js:1:");
      expect(result.stats.cpuTimeMs).toBeGreaterThanOrEqual(150);
      await stillServes(sandbox);
    });
  });

  it("counts guest execution only, not time spent waiting", async () => {
    await withSandbox({ limits: { cpuTimeMs: 100 } }, async (sandbox) => {
      const result = await sandbox.run("export default async () => { await new Promise(r => setTimeout(r, 300)); return 'waited' }");
      expect(result).toMatchObject({ ok: true, value: "waited" });
      expect(result.stats.cpuTimeMs).toBeLessThan(100);
      expect(result.stats.wallTimeMs).toBeGreaterThanOrEqual(300);
    });
  });

  it("adds up across timer callbacks and promise jobs of one run", async () => {
    await withSandbox({ limits: { cpuTimeMs: 200 } }, async (sandbox) => {
      const result = await sandbox.run(`
        const burn = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} };
        export default async () => { for (let i = 0; i < 10; i++) { await new Promise(r => setTimeout(r, 1)); burn(50) } }`);
      expect(failure(result).kind).toBe("cpu");
    });
  });

  it("stops a flood of microtasks", async () => {
    await withSandbox({ limits: { cpuTimeMs: 200 } }, async (sandbox) => {
      expect(failure(await sandbox.run("function again() { queueMicrotask(again) } again()")).kind).toBe("cpu");
      expect(failure(await sandbox.run("Promise.resolve().then(function g() { return Promise.resolve().then(g) })")).kind).toBe("cpu");
      await stillServes(sandbox);
    });
  });

  it("stops native builtins that ignore the interrupt by terminating the worker; the sandbox says it was disposed", async () => {
    // isolate: the worker that gets terminated is this sandbox's own.
    const sandbox = await createSandbox({ isolate: true, limits: { cpuTimeMs: 100 } });
    const started = Date.now();
    const result = await sandbox.run(`const s = "a".repeat(1 << 24); export default () => { let n = 0; for (let i = 0; i < 200; i++) n += s.indexOf("b"); return n }`);
    const error = failure(result);
    expect(error.kind).toBe("cpu");
    expect(error.message).toContain("cpuTimeMs limit (100 ms) exceeded inside a native call that ignored the interrupt");
    expect(error.message).toContain("sandbox disposed");
    expect(Date.now() - started).toBeLessThan(10_000); // unchecked, these 200 calls take ~20 s
    expect(sandbox.disposed).toBe(true);
    await expect(sandbox.run("export default () => 1")).rejects.toThrow(SandboxDisposedError);
    await sandbox.dispose();
    await withSandbox({}, stillServes);
  });
});

describe("wallTimeMs", () => {
  it("ends a run that waits too long with kind timeout and cancels its timers", async () => {
    const logs: string[] = [];
    await withSandbox({ limits: { wallTimeMs: 200 }, onLog: (entry) => logs.push(entry.message) }, async (sandbox) => {
      const error = failure(await sandbox.run("setTimeout(() => console.log('too late'), 400); export default () => new Promise(() => {})"));
      expect(error).toMatchObject({ kind: "timeout", name: "LimitError", message: "wallTimeMs limit (200 ms) exceeded" });
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(logs).not.toContain("too late");
      await stillServes(sandbox);
    });
  });

  it("also stops a busy loop before the CPU budget does when it is the sooner limit", async () => {
    await withSandbox({ limits: { wallTimeMs: 150, cpuTimeMs: 10_000 } }, async (sandbox) => {
      expect(failure(await sandbox.run("for (;;) {}"))).toMatchObject({ kind: "timeout", message: "wallTimeMs limit (150 ms) exceeded" });
    });
  });
});

describe("maxTimers", () => {
  it("ends a run that floods timers with kind limit, even if the script catches the error", async () => {
    await withSandbox({ limits: { maxTimers: 100 } }, async (sandbox) => {
      const error = failure(await sandbox.run("export default () => { for (let i = 0; i < 10000; i++) { try { setTimeout(() => {}, 1000) } catch {} } return 'kept going' }"));
      expect(error).toMatchObject({ kind: "limit", name: "LimitError", message: "maxTimers limit (100 pending timers) exceeded" });
      await stillServes(sandbox);
    });
  });

  it("counts pending timers only: fired and cleared ones free their slot", async () => {
    await withSandbox({ limits: { maxTimers: 5 } }, async (sandbox) => {
      const result = await sandbox.run(`export default async () => {
        for (let i = 0; i < 50; i++) { clearTimeout(setTimeout(() => {}, 1000)); await new Promise(r => setTimeout(r, 0)) }
        return 'fine';
      }`);
      expect(result).toMatchObject({ ok: true, value: "fine" });
    });
  });
});

describe("disposing", () => {
  it("a sandbox with a run in flight and pending timers is clean: the run ends, nothing fires later", async () => {
    const logs: string[] = [];
    const sandbox = await createSandbox({ onLog: (entry) => logs.push(entry.message) });
    const running = sandbox.run("setInterval(() => console.log('tick'), 5); export default () => new Promise(() => {})");
    await new Promise((resolve) => setTimeout(resolve, 50));
    await sandbox.dispose();
    const result = await running;
    expect(result).toMatchObject({ ok: false, error: { message: "the sandbox was disposed while the script was running" } });
    const ticks = logs.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(logs.length).toBe(ticks);
    await expect(sandbox.run("export default () => 1")).rejects.toThrow(SandboxDisposedError);
    await sandbox.dispose(); // twice is fine
  });
});

describe("wallTimeMs and fetches in flight", () => {
  it("cancels a pending fetch when the run's wall time runs out: the server sees its socket close", async () => {
    const { createServer } = await import("node:http");
    // Connections are counted at the socket, not at the request: on a loaded machine the
    // deadline can pass after the connect and before the request is parsed, and the host
    // must close that connection too.
    const open = new Set<import("node:net").Socket>();
    let opened = 0;
    let allClosed!: () => void;
    const connectionsClosed = new Promise<void>((resolve) => (allClosed = resolve));
    const server = createServer((request, response) => {
      if (request.url === "/warm") return void response.writeHead(200, { connection: "close" }).end("warm");
      response.writeHead(200, { "content-type": "text/plain" });
      response.write("first chunk, then nothing");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      await withSandbox({ net: { allow: [`127.0.0.1:${port}`] }, limits: { wallTimeMs: 1000, fetchTimeoutMs: 60_000 } }, async (sandbox) => {
        // The worker loads its HTTP client at the first fetch, which can take longer than the
        // wall time on a loaded machine: warm it, so the timed run's request is in flight.
        await sandbox.run(`export default async () => (await fetch("http://127.0.0.1:${port}/warm")).text()`);
        await new Promise((resolve) => setImmediate(resolve));
        server.on("connection", (socket) => {
          opened++;
          open.add(socket);
          socket.on("close", () => {
            open.delete(socket);
            if (open.size === 0) allClosed();
          });
        });
        const result = await sandbox.run(`export default async () => (await fetch("http://127.0.0.1:${port}/slow")).text()`);
        expect(result).toMatchObject({ ok: false, error: { kind: "timeout", message: "wallTimeMs limit (1000 ms) exceeded" } });
        expect(opened).toBeGreaterThan(0);
        await connectionsClosed; // resolves only when the host destroyed the connection
        await stillServes(sandbox);
      });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
