// Test helpers: a real node:http server on 127.0.0.1 that records what it saw, and a
// shorthand for transport requests.
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Agent } from "undici";
import { SandboxFetchTransport, type SandboxFetchTransportOptions, type TransportFetchOptions } from "../../../host/fetch/transport.js";
import type { TransportRequest } from "../../../host/fetch/requestRecord.js";

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

export interface TestServer {
  port: number;
  origin: string; // http://127.0.0.1:<port>
  requests: SeenRequest[];
  /** Resolves when the socket of the n-th (0-based) request closes. */
  socketClosed(index: number): Promise<void>;
  /** Most requests seen in flight at the same time. */
  maxInFlight: number;
  close(): Promise<void>;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => unknown;

export async function startServer(handler: Handler, options: { readBody?: boolean } = {}): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const closed: Promise<void>[] = [];
  const socketClosed = new WeakMap<Socket, Promise<void>>();
  let inFlight = 0;
  const state: TestServer = {
    port: 0,
    origin: "",
    requests: [],
    maxInFlight: 0,
    socketClosed: (index) => closed[index] ?? Promise.reject(new Error(`no request ${index}`)),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer(async (req, res) => {
    closed.push(socketClosed.get(req.socket)!);
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    res.once("close", () => inFlight--);
    const chunks: Buffer[] = [];
    if (options.readBody !== false) for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    state.requests.push({ method: req.method!, url: req.url!, headers: req.headers, rawHeaders: req.rawHeaders, body });
    try {
      await handler(req, res, body);
    } catch (error) {
      res.destroy(error as Error);
    }
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socketClosed.set(socket, new Promise((resolve) => socket.once("close", () => resolve())));
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.port = (server.address() as AddressInfo).port;
  state.origin = `http://127.0.0.1:${state.port}`;
  return state;
}

/** A transport allowed to reach the test server, on its own Agent so tests do not share connections. */
export function transportFor(server: TestServer | null, options: Partial<SandboxFetchTransportOptions> = {}): SandboxFetchTransport {
  const allow = [...(server ? [`127.0.0.1:${server.port}`] : []), ...(options.allow ?? [])];
  return new SandboxFetchTransport({ ...options, allow }, new Agent({ keepAliveTimeout: 1_000 }));
}

export function request(url: string, init: Partial<TransportRequest> = {}): TransportRequest {
  return { url, method: "GET", headers: [], redirect: "follow", body: null, ...init };
}

export async function fetchText(transport: SandboxFetchTransport, url: string, init: Partial<TransportRequest> = {}, options?: TransportFetchOptions) {
  const { response, body } = await transport.fetch(request(url, init), options);
  return { ...response, text: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8") };
}

/** The rejection of a transport fetch, as { type, message }. */
export async function failure(promise: Promise<unknown>): Promise<{ type: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const { type, message } = error as { type: string; message: string };
    return { type, message };
  }
  throw new Error("expected the fetch to fail");
}

export function header(headers: readonly [string, string][], name: string): string | undefined {
  return headers.find(([n]) => n.toLowerCase() === name)?.[1];
}
