// The fastify application: one plugin per area of the API, each with its schemas, all
// sharing the store, clock and auth module of the context.
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import Fastify, { type FastifyInstance } from "fastify";
import type { EmulatorContext } from "./context.js";
import { areaOf, classify, errorHandler, HttpError, sendError } from "./errors.js";
import { dashboardRoutes } from "./routes/dashboard.js";
import { oauthRoutes } from "./routes/oauth/index.js";
import { teamRoutes } from "./routes/team.js";
import { testClockRoutes } from "./routes/testClock.js";
import { userRoutes } from "./routes/user.js";
import { workspaceRoutes } from "./routes/workspace.js";

/** Request bodies above 64 KiB are refused (413): no call of this API needs more. */
export const BODY_LIMIT_BYTES = 64 * 1024;

const PARSER_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, "request_header_fields_too_large", "the request's headers are too large"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "request_timeout", "the request took too long to arrive"],
};

/**
 * Requests Node's HTTP parser rejects never reach a route: answer them in the /api/v1
 * shape too (the URL, which would pick the area, is what could not be parsed).
 */
function answerParserError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, message] = PARSER_ERRORS[error.code ?? ""] ?? [400, "bad_request", "the request is not valid HTTP/1.1"];
  const body = JSON.stringify({ code: status, error: code, message });
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

export function buildServer(ctx: EmulatorContext): FastifyInstance {
  const app = Fastify({
    // Only server faults are logged (to stderr: stdout carries the seed lines).
    logger: { level: "error", stream: process.stderr },
    bodyLimit: BODY_LIMIT_BYTES,
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    // Shutdown: idle keep-alive connections close at once, requests in flight finish
    // (startEmulator's close() bounds the wait), and a request that arrives meanwhile on an
    // open connection is served rather than answered with fastify's own 503 body.
    forceCloseConnections: "idle",
    return503OnClosing: false,
    // Unknown fields are errors (not silently dropped), and a "1" is not a number.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
    // Node answers a request without Host with an empty 400; the hook below answers it in shape.
    http: { requireHostHeader: false },
    clientErrorHandler: answerParserError,
    // Malformed URLs (bad percent-encoding) get the same error bodies as everything else.
    frameworkErrors: (error, request, reply) => {
      const area = areaOf(request.url);
      return sendError(reply, area, classify(error, area) ?? new HttpError(400, "bad_request", "malformed request"));
    },
  });
  app.decorateRequest("principal", null);
  // While closing, answers end their keep-alive connection, so the shutdown waits only
  // for requests in flight, not for clients to hang up.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onSend", async (_request, reply) => {
    if (closing) reply.header("connection", "close");
  });
  app.addHook("onRequest", async (request) => {
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400.
    if (request.headers.host === undefined && request.raw.httpVersion === "1.1") {
      throw new HttpError(400, "bad_request", "the Host header is required (RFC 9112 §3.2)");
    }
  });
  app.setErrorHandler(errorHandler("api"));
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0];
    return sendError(reply, areaOf(request.url), new HttpError(404, "not_found", `no endpoint ${request.method} ${path}`));
  });

  app.register(async (api) => {
    // JSON only (fastify also parses text/plain by default): anything else is a 415.
    api.removeContentTypeParser("text/plain");
    await api.register(teamRoutes, { prefix: "/api/v1", ctx });
    await api.register(userRoutes, { prefix: "/api/v1", ctx });
    await api.register(workspaceRoutes, { prefix: "/api/v1", ctx });
    if (ctx.config.testClock) await api.register(testClockRoutes, { ctx });
  });
  app.register(oauthRoutes, { ctx });
  app.register(dashboardRoutes, { ctx });
  return app;
}
