// --test-clock: POST /__emulator/clock {"seconds": N} moves the emulator's clock forward,
// so tests reach expiry (codes, tokens, PATs, invitations, device polling) without
// waiting. Registered only when the flag is on; otherwise these paths are 404.
import type { FastifyInstance } from "fastify";
import type { PluginOptions } from "../context.js";
import { noQuery } from "../schemas.js";

const clockSchema = {
  type: "object",
  required: ["now", "offset_seconds"],
  properties: { now: { type: "integer" }, offset_seconds: { type: "number" } },
} as const;

export async function testClockRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  const { clock } = ctx;
  const state = () => ({ now: clock.now(), offset_seconds: clock.offsetSeconds });

  app.get("/__emulator/clock", { schema: { querystring: noQuery, response: { 200: clockSchema } } }, async () => state());

  app.post<{ Body: { seconds: number } }>("/__emulator/clock", {
    schema: {
      querystring: noQuery,
      body: {
        type: "object",
        additionalProperties: false,
        required: ["seconds"],
        // Forward only (time never runs back), at most ten years per call.
        properties: { seconds: { type: "number", minimum: 0, maximum: 10 * 365 * 24 * 3600 } },
      },
      response: { 200: clockSchema },
    },
  }, async (request) => {
    clock.advance(request.body.seconds);
    return state();
  });
}
