// The fastify application: one plugin per area of the API, each with its schemas, all
// sharing the store, clock and auth module of the context.
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

export function buildServer(ctx: EmulatorContext): FastifyInstance {
  const app = Fastify({
    // Only server faults are logged (to stderr: stdout carries the seed lines).
    logger: { level: "error", stream: process.stderr },
    bodyLimit: BODY_LIMIT_BYTES,
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    forceCloseConnections: true,
    // Unknown fields are errors (not silently dropped), and a "1" is not a number.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
    // Malformed URLs (bad percent-encoding) get the same error bodies as everything else.
    frameworkErrors: (error, request, reply) => {
      const area = areaOf(request.url);
      return sendError(reply, area, classify(error, area) ?? new HttpError(400, "bad_request", "malformed request"));
    },
  });
  app.decorateRequest("principal", null);
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
