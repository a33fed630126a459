// Test helpers for the cloud guest library: a seeded emulator on 127.0.0.1, sandboxes whose
// `cloud` option holds the seeded PAT and session as secrets, and small node:http servers
// for answers the emulator never gives (429, garbage, echoes).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createSandbox, startEmulator, type RunResult, type SandboxOptions } from "scriptbox";
import { expect } from "vitest";

export type Emulator = Awaited<ReturnType<typeof startEmulator>> & { seed: NonNullable<Awaited<ReturnType<typeof startEmulator>>["seed"]> };
export type Sandbox = Awaited<ReturnType<typeof createSandbox>>;

export async function startSeededEmulator(options: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  const emulator = await startEmulator({ port: 0, seed: true, testClock: true, deviceInterval: 0.2, ...options });
  return emulator as Emulator;
}

/** Sandbox options that configure `cloud` with the seeded PAT and session, as secrets for the emulator's origin. */
export function cloudOptions(emulator: Emulator, extra: SandboxOptions = {}): SandboxOptions {
  return {
    ...extra,
    secrets: {
      CLOUD_PAT: { value: emulator.seed.CLOUD_PAT, origins: [emulator.baseUrl] },
      CLOUD_SESSION: { value: emulator.seed.CLOUD_SESSION, origins: [emulator.baseUrl] },
      ...extra.secrets,
    },
    cloud: { baseUrl: emulator.baseUrl, token: { secret: "CLOUD_PAT" }, session: { secret: "CLOUD_SESSION" } },
  };
}

/** The body of an async default export, with the cloud and runtime modules imported. */
export function script(body: string): string {
  return `import { cloud, CloudClient, CloudError } from "cloud";\nimport { secret, env } from "runtime";\nexport default async (input) => {\n${body}\n};\n`;
}

export async function run<T = any>(sandbox: Sandbox, body: string, input?: unknown): Promise<RunResult<T>> {
  return sandbox.run<T>(script(body), { filename: "cloud-test.js", input });
}

/** Runs and expects success: the script's value. */
export async function value<T = any>(sandbox: Sandbox, body: string, input?: unknown): Promise<T> {
  const result = await run<T>(sandbox, body, input);
  if (!result.ok) expect.fail(`sandbox run failed: ${result.error.stack || result.error.message}\nlogs: ${JSON.stringify(result.logs)}`);
  return result.value;
}

/** Guest helper: what a promise rejects with, as a plain record. */
export const CAUGHT = `const caught = async (promiseOrFn) => {
  try { await (typeof promiseOrFn === "function" ? promiseOrFn() : promiseOrFn); return { name: "no error" }; }
  catch (e) { return { name: e.name, message: e.message, status: e.status, code: e.code, method: e.method, path: e.path, excerpt: e.excerpt, errors: e.errors, isCloudError: e instanceof CloudError }; }
};`;

export interface TestServer {
  origin: string;
  port: number;
  requests: { method: string; url: string; headers: IncomingMessage["headers"]; body: string; time: number }[];
  close(): Promise<void>;
}

/** A node:http server on 127.0.0.1 that records every request and answers with `handler`. */
export async function startServer(handler: (req: IncomingMessage, res: ServerResponse, body: string, index: number) => void): Promise<TestServer> {
  const requests: TestServer["requests"] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, body, time: Date.now() });
      handler(req, res, body, requests.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends a JSON answer. */
export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** A direct call to the emulator from the test (not the sandbox). */
export async function emulatorCall(emulator: Emulator, method: string, path: string, token = emulator.seed.CLOUD_PAT): Promise<{ status: number; body: any }> {
  const response = await fetch(emulator.baseUrl + path, { method, headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
