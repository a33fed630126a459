// One error type for every client mistake, and the three ways the API areas write it:
// /api/v1 answers `{ code, error, message }` (DESIGN.md), the OAuth endpoints answer
// RFC 6749 §5.2 `{ error, error_description }` with Cache-Control: no-store, and
// /dashboard/graphql answers a GraphQL `errors` array, and the pages a person's browser
// opens answer an HTML error page. Fastify's own errors (validation, body parsing, body
// limit) are translated here, so a client's mistake is never a 500.
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { drainRequest } from "./drain.js";
import { errorPageFor } from "./pages.js";

export class HttpError extends Error {
  constructor(
    readonly status: number,
    /** snake_case code: DESIGN's `error` on /api/v1, the RFC error code on /oauth2. */
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export type ErrorArea = "api" | "oauth" | "graphql" | "page";

/** Paths a browser opens as a page: their errors are HTML, never JSON. */
const PAGE_PATHS = new Set(["/device", "/dashboard", "/dashboard/login", "/oauth2/authorize"]);
export function isPagePath(url: string): boolean {
  const path = url.split("?")[0]!;
  return PAGE_PATHS.has(path) || path.startsWith("/oauth2/consent/");
}

export function areaOf(url: string): ErrorArea {
  if (isPagePath(url)) return "page";
  if (url.startsWith("/oauth2") || url.startsWith("/.well-known") || url.startsWith("/device")) return "oauth";
  if (url.startsWith("/dashboard/graphql")) return "graphql";
  return "api";
}

/** The HttpError a thrown value stands for, or null for a server fault (a real 500). */
export function classify(error: unknown, area: ErrorArea, validationCode = "invalid_request"): HttpError | null {
  if (error instanceof HttpError) return error;
  // Anything can be thrown (a string, null, a frozen object): only objects are looked into.
  if (error === null || typeof error !== "object") return null;
  const err = error as FastifyError & { validationContext?: string };
  if (err.validation) {
    if (area === "api" && err.validationContext === "params") return new HttpError(404, "not_found", "no such resource");
    if (area === "oauth" || area === "page") return new HttpError(400, validationCode, err.message);
    if (area === "graphql") return new HttpError(400, "bad_request", err.message);
    return new HttpError(422, "validation_failed", err.message);
  }
  // Another emulator process on the same --db file held the lock through every retry.
  if (typeof err.code === "string" && err.code.startsWith("SQLITE_BUSY")) {
    return new HttpError(503, "database_busy", "the database is busy (another process holds it); retry shortly", { "retry-after": "1" });
  }
  switch (err.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new HttpError(400, area === "oauth" ? "invalid_request" : "invalid_json", "the body is not valid JSON");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return area === "oauth" || area === "page"
        ? new HttpError(400, "invalid_request", "unsupported Content-Type for this endpoint")
        : new HttpError(415, "unsupported_media_type", "unsupported Content-Type for this endpoint");
    case "FST_ERR_MAX_PARAM_LENGTH": // an id longer than any id: it cannot exist
      return area === "oauth" ? new HttpError(400, "invalid_request", "path parameter too long") : new HttpError(404, "not_found", "no such resource");
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new HttpError(413, area === "oauth" ? "invalid_request" : "payload_too_large", "the request body is too large");
  }
  const status = typeof err.statusCode === "number" ? err.statusCode : 500;
  if (status >= 400 && status < 500) return new HttpError(status, area === "oauth" ? "invalid_request" : "bad_request", err.message);
  return null;
}

export function sendError(reply: FastifyReply, area: ErrorArea, error: HttpError): FastifyReply {
  if (area === "page") return errorPageFor(reply.headers(error.headers), error.status, error.message);
  reply.status(error.status).headers(error.headers);
  if (area === "oauth") {
    reply.header("cache-control", "no-store").header("pragma", "no-cache");
    return reply.send({ error: error.code, error_description: error.message });
  }
  if (area === "graphql") {
    return reply.send({ errors: [{ message: error.message, extensions: { code: error.code.toUpperCase() } }] });
  }
  return reply.send({ code: error.status, error: error.code, message: error.message });
}

const INTERNAL = new HttpError(500, "server_error", "internal error");

/** A fastify error handler for one area of the API (`validationCode`: the OAuth error for a schema failure). */
export function errorHandler(area: ErrorArea, validationCode?: string) {
  return async (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const where = isPagePath(request.url) ? "page" : area;
    const known = classify(error, where, validationCode);
    if (!known) request.log.error({ err: error }, "unhandled error");
    // A refused body is read to its end first, so the client sees the 413, not EPIPE.
    if (known?.status === 413) await drainRequest(request.raw);
    return sendError(reply, where, known ?? INTERNAL);
  };
}

// Small constructors for the errors routes raise most.
export const notFound = (what = "resource") => new HttpError(404, "not_found", `no such ${what}`);
export const forbidden = (message: string) => new HttpError(403, "forbidden", message);
export const conflict = (code: string, message: string) => new HttpError(409, code, message);
export const oauthError = (code: string, description: string, status = 400) => new HttpError(status, code, description);
