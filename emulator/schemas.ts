// JSON schemas shared by the /api/v1 plugins (each plugin keeps its own beside it). They
// validate requests (additionalProperties: false: an unknown field is a 422, never
// ignored) and serialize responses through fast-json-stringify.
import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "./errors.js";
import { idPattern } from "./secrets.js";

export const timestamp = { type: "integer" } as const;

/** Query strings of endpoints that take none: anything present is a mistake. */
export const noQuery = { type: "object", additionalProperties: false, properties: {} } as const;

export function idParams(name: string, prefix: string) {
  return {
    type: "object",
    additionalProperties: false,
    required: [name],
    properties: { [name]: { type: "string", pattern: idPattern(prefix) } },
  } as const;
}

export const apiErrorSchema = {
  type: "object",
  required: ["code", "error", "message"],
  properties: { code: { type: "integer" }, error: { type: "string" }, message: { type: "string" } },
} as const;

export const deletionSchema = {
  type: "object",
  required: ["deleted", "id", "object"],
  properties: { deleted: { type: "boolean" }, id: { type: "string" }, object: { type: "string" } },
} as const;

export function deletion(object: string, id: string) {
  return { deleted: true, id, object };
}

/**
 * preValidation for endpoints whose spec lists no body: an empty body or `{}` is fine,
 * anything else is a 422 (and nothing is written).
 */
export async function noBody(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (body === undefined || body === null) return;
  if (typeof body === "object" && !Array.isArray(body) && Object.keys(body).length === 0) return;
  throw new HttpError(422, "validation_failed", "this endpoint takes no request body");
}

/** Bodies this short are looked at by ignoreEmptyBody; anything longer is parsed as sent. */
const SLOPPY_BODY_BYTES = 64;

/**
 * preParsing for endpoints that take no body (their input is the path or query): an empty
 * body or `{}` (whitespace allowed) is dropped whatever its Content-Type says, as if none
 * was sent. Generated SDKs send `Content-Type: application/json` on every call; that is no
 * reason to refuse a DELETE. Other bodies go on to the parsers unchanged.
 */
export async function ignoreEmptyBody(request: FastifyRequest, _reply: FastifyReply, payload: Readable): Promise<Readable> {
  const chunks: Buffer[] = [];
  let length = 0;
  let ended = true;
  for await (const chunk of payload.iterator({ destroyOnReturn: false })) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
    if (length > SLOPPY_BODY_BYTES) {
      ended = false;
      break;
    }
  }
  const head = Buffer.concat(chunks);
  if (ended && /^\s*(\{\s*\})?\s*$/.test(head.toString("utf8"))) {
    const headers = request.raw.headers;
    delete headers["content-type"];
    delete headers["transfer-encoding"];
    headers["content-length"] = "0";
    return Readable.from([]);
  }
  // Hand on what was read, then the rest (the early break left the stream open).
  return Readable.from((async function* () {
    yield head;
    if (!ended) yield* payload;
  })());
}

/** Route options of an endpoint that takes no body (see ignoreEmptyBody and noBody). */
export const bodiless = { preParsing: ignoreEmptyBody, preValidation: noBody } as const;
