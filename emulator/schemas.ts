// JSON schemas shared by the /api/v1 plugins (each plugin keeps its own beside it). They
// validate requests (additionalProperties: false: an unknown field is a 422, never
// ignored) and serialize responses through fast-json-stringify.
import type { FastifyRequest } from "fastify";
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
