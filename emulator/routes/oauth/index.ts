// The OAuth 2.0 area: registration (JSON) and the form endpoints (token, introspection,
// device flow, authorize/consent), every error RFC-shaped with Cache-Control: no-store,
// plus the RFC 8414 metadata document.
import formbody from "@fastify/formbody";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { PluginOptions } from "../../context.js";
import { errorHandler } from "../../errors.js";
import { SCOPE_NAMES } from "../../scopes.js";
import { authorizeRoutes } from "./authorize.js";
import { clientRoutes, GRANT } from "./clients.js";
import { deviceRoutes } from "./device.js";
import { tokenRoutes } from "./tokens.js";

/** A parsed form body; the route schemas make every known field a single string. */
export type FormBody = Record<string, string | undefined>;

/**
 * RFC 6749 §3.1, §3.2: parameters sent without a value are treated as omitted. (Unknown
 * parameters are ignored by leaving them out of the schemas' `required`; a repeated
 * parameter parses to an array and fails its schema: invalid_request.)
 */
async function dropEmptyParameters(request: FastifyRequest): Promise<void> {
  for (const source of [request.body, request.query]) {
    if (!source || typeof source !== "object") continue;
    const params = source as Record<string, unknown>;
    for (const name of Object.keys(params)) if (params[name] === "") delete params[name];
  }
}

export async function oauthRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  app.setErrorHandler(errorHandler("oauth"));

  await app.register(clientRoutes, { ctx });

  await app.register(async (forms) => {
    forms.removeAllContentTypeParsers();
    await forms.register(formbody);
    forms.addHook("preValidation", dropEmptyParameters);
    await forms.register(tokenRoutes, { ctx });
    await forms.register(deviceRoutes, { ctx });
    await forms.register(authorizeRoutes, { ctx });
  });

  app.get("/.well-known/oauth-authorization-server", async (_request, reply) => {
    const base = ctx.config.baseUrl;
    return reply.header("cache-control", "public, max-age=60").send({
      issuer: base,
      authorization_endpoint: `${base}/oauth2/authorize`,
      token_endpoint: `${base}/oauth2/token`,
      device_authorization_endpoint: `${base}/oauth2/device/authorize`,
      introspection_endpoint: `${base}/oauth2/introspect`,
      registration_endpoint: `${base}/oauth2/register`,
      scopes_supported: SCOPE_NAMES,
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: Object.values(GRANT),
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      code_challenge_methods_supported: ["S256"],
      authorization_response_iss_parameter_supported: true,
    });
  });
}
