// The device authorization grant (RFC 8628). A device asks at /oauth2/device/authorize;
// a person looks the request up and approves or denies it, through the PAT endpoints
// /oauth2/device/{information,approve,deny} or the /device page (the verification_uri)
// with a dashboard session. States: pending → approved | denied; approved → consumed
// (tokens issued, once); any state is expired after expires_in.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { sessionCookie } from "../../auth.js";
import type { EmulatorContext, PluginOptions } from "../../context.js";
import { HttpError, oauthError } from "../../errors.js";
import { codeEntryPage, consentPage, csrfToken, csrfValid, errorPage, messagePage, signInPage } from "../../pages.js";
import { ignoreEmptyBody } from "../../schemas.js";
import { loginFormToken, safeReturnTo } from "../../signIn.js";
import { formatScope, isSubset, parseScope, scopeInfo, unknownScopes } from "../../scopes.js";
import { displayUserCode, issueSecret, newId, newUserCode, normalizeUserCode, sha256 } from "../../secrets.js";
import type { DeviceRow, UserRow } from "../../store.js";
import { allowsGrant, clientHome, GRANT, grantableScope } from "./clients.js";
import type { FormBody } from "./index.js";
import { noStore } from "./tokens.js";

/** Device codes live 10 minutes. */
export const DEVICE_CODE_TTL_SECONDS = 600;

const formString = { type: "string", maxLength: 4096 } as const;
const deviceAuthorizeBody = {
  type: "object",
  properties: { client_id: formString, client_secret: formString, scope: formString },
} as const;
const userCodeQuery = {
  type: "object",
  required: ["user_code"],
  properties: { user_code: { type: "string", minLength: 1, maxLength: 64 }, scope: { type: "string", maxLength: 1000 } },
} as const;

interface Found {
  device: DeviceRow;
  view: ReturnType<typeof deviceView>;
}

function deviceView(ctx: EmulatorContext, device: DeviceRow) {
  const client = ctx.store.client(device.client_id)!;
  return { client, ...clientHome(ctx, client) };
}

/**
 * The request behind a user code, as `user` may see it: only people of the team that owns
 * the client's workspace (anyone else gets a 404, as for other teams' resources).
 */
function findRequest(ctx: EmulatorContext, user: UserRow, userCode: string): Found | null {
  const device = ctx.store.deviceByUserCode(sha256(normalizeUserCode(userCode)));
  if (!device) return null;
  const view = deviceView(ctx, device);
  if (!ctx.store.roleOf(view.workspace.team_id, user.id)) return null;
  return { device, view };
}

function isExpired(ctx: EmulatorContext, device: DeviceRow): boolean {
  return device.expires_at <= ctx.clock.now();
}

/** Approves (optionally with a narrower scope, which must keep the required scopes) or denies. */
function decide(ctx: EmulatorContext, user: UserRow, found: Found, userCode: string, approve: boolean, narrower?: string) {
  const { device } = found;
  if (isExpired(ctx, device)) throw oauthError("expired_token", "this device request has expired");
  if (device.status !== "pending") throw new HttpError(409, "already_decided", `this device request is already ${device.status}`);
  const requested = parseScope(device.scope);
  let granted = requested;
  if (approve && narrower !== undefined && parseScope(narrower, true).length > 0) {
    granted = parseScope(narrower, true);
    const unknown = unknownScopes(granted);
    if (unknown.length > 0) throw oauthError("invalid_scope", `unknown scope ${unknown.join(", ")}`);
    if (!isSubset(granted, requested)) throw oauthError("invalid_scope", "scope may only narrow what the device asked for");
    const dropped = requested.filter((s) => !granted.includes(s) && scopeInfo(s).requirement === "required");
    if (dropped.length > 0) throw oauthError("invalid_scope", `scope ${dropped.join(", ")} is required and cannot be dropped`);
  }
  const scope = formatScope(granted);
  ctx.store.decideDevice(device.id, approve ? "approved" : "denied", user.id, approve ? scope : null, ctx.clock.now());
  return {
    object: "device_authorization",
    user_code: displayUserCode(userCode),
    status: approve ? "approved" : "denied",
    client_id: device.client_id,
    scope: approve ? scope : device.scope,
  };
}

export async function deviceRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  const { store, clock, config } = ctx;

  app.post<{ Body: FormBody }>("/oauth2/device/authorize", { schema: { body: deviceAuthorizeBody } }, async (request, reply) => {
    const client = ctx.auth.client(request, request.body);
    if (!allowsGrant(client, GRANT.deviceCode)) throw oauthError("unauthorized_client", "this client is not registered for the device_code grant");
    const scope = formatScope(grantableScope(request.body.scope, parseScope(client.scope)));
    const secret = issueSecret("deviceCode");
    let userCode = newUserCode();
    while (store.userCodeTaken(sha256(normalizeUserCode(userCode)))) userCode = newUserCode();
    const now = clock.now();
    store.insertDeviceRequest({
      id: newId("dev"), selector: secret.selector, secret_hash: secret.hash, user_code_hash: sha256(normalizeUserCode(userCode)),
      client_id: client.id, scope, status: "pending", user_id: null, granted_scope: null, ip: request.ip,
      interval_ms: Math.round(config.deviceIntervalSeconds * 1000), last_poll_ms: null,
      expires_at: now + DEVICE_CODE_TTL_SECONDS, created_at: now, decided_at: null,
    });
    return noStore(reply).send({
      device_code: secret.value,
      user_code: userCode,
      verification_uri: `${config.baseUrl}/device`,
      verification_uri_complete: `${config.baseUrl}/device?user_code=${userCode}`,
      expires_in: DEVICE_CODE_TTL_SECONDS,
      interval: Math.max(1, Math.ceil(config.deviceIntervalSeconds)),
    });
  });

  // The PAT endpoints. Their errors are OAuth-shaped, like every /oauth2 answer.
  app.register(async (pat) => {
    pat.addHook("onRequest", async (request) => {
      request.principal = ctx.auth.pat(request);
    });
    const lookup = (request: FastifyRequest<{ Querystring: { user_code: string } }>) => {
      const user = request.principal!.user!;
      const found = findRequest(ctx, user, request.query.user_code);
      if (!found) throw new HttpError(404, "not_found", "no device request has this user code");
      return { user, found };
    };

    pat.get<{ Querystring: { user_code: string } }>("/oauth2/device/information", { schema: { querystring: userCodeQuery } }, async (request, reply) => {
      const { found } = lookup(request);
      const { device, view } = found;
      if (isExpired(ctx, device)) throw oauthError("expired_token", "this device request has expired");
      const scopes = parseScope(device.scope);
      return noStore(reply).send({
        client: {
          id: view.client.id,
          ip: device.ip,
          registered_at: view.client.issued_at,
          instance: { id: view.instance.id, name: view.instance.name, registered_at: view.instance.registered_at },
        },
        current_ip: request.ip,
        scope: device.scope,
        scopes: scopes.map((name) => ({ name, requirement: scopeInfo(name).requirement })),
      });
    });

    pat.post<{ Querystring: { user_code: string; scope?: string } }>("/oauth2/device/approve", { schema: { querystring: userCodeQuery }, preParsing: ignoreEmptyBody }, async (request, reply) => {
      const { user, found } = lookup(request);
      return noStore(reply).send(decide(ctx, user, found, request.query.user_code, true, request.query.scope));
    });

    pat.post<{ Querystring: { user_code: string } }>("/oauth2/device/deny", { schema: { querystring: userCodeQuery }, preParsing: ignoreEmptyBody }, async (request, reply) => {
      const { user, found } = lookup(request);
      return noStore(reply).send(decide(ctx, user, found, request.query.user_code, false));
    });
  });

  // The verification_uri, for a person with a browser and a dashboard session.
  app.get<{ Querystring: { user_code?: string } }>("/device", {
    schema: { querystring: { type: "object", properties: { user_code: { type: "string", maxLength: 64 } } } },
  }, async (request, reply) => {
    const user = ctx.auth.sessionUser(request);
    if (!user) return signInPage(reply, { returnTo: safeReturnTo(request.url), loginToken: loginFormToken(config.csrfKey, request, reply) });
    const userCode = request.query.user_code;
    if (!userCode) return codeEntryPage(reply);
    const found = findRequest(ctx, user, userCode);
    if (!found) return unknownCode(reply);
    if (isExpired(ctx, found.device)) return expiredCode(reply);
    if (found.device.status !== "pending") return alreadyDecided(reply, found.device.status);
    const created = new Date(found.device.created_at * 1000).toISOString().replace(".000Z", "Z");
    return consentPage(reply, {
      action: "/device",
      csrfToken: csrfToken(config.csrfKey, sessionCookie(request.headers.cookie)!, found.device.id),
      userEmail: user.email,
      clientName: found.view.client.name,
      clientId: found.view.client.id,
      instanceName: found.view.instance.name,
      workspaceName: found.view.workspace.name,
      scopes: parseScope(found.device.scope),
      scopeChoice: true,
      hidden: { user_code: userCode },
      notes: [
        `Check that your device shows the code ${displayUserCode(userCode)}.`,
        `The device asked from IP address ${found.device.ip} at ${created}; you are at ${request.ip}. If you do not recognise the device, deny.`,
      ],
    });
  });

  const scopeField = { anyOf: [formString, { type: "array", maxItems: 20, items: formString }] } as const;
  app.post<{ Body: { user_code?: string; decision?: string; csrf_token?: string; scope_choice?: string; scope?: string | string[] } }>("/device", {
    schema: {
      body: {
        type: "object",
        required: ["user_code", "decision"],
        properties: { user_code: formString, decision: formString, csrf_token: formString, scope_choice: formString, scope: scopeField },
      },
    },
  }, async (request, reply) => {
    const user = ctx.auth.sessionUser(request);
    if (!user) {
      return signInPage(reply, {
        returnTo: "/device", loginToken: loginFormToken(config.csrfKey, request, reply), status: 401, error: "Your session has ended; sign in again.",
      });
    }
    const body = request.body;
    const found = findRequest(ctx, user, body.user_code!);
    if (!found) return unknownCode(reply);
    if (!csrfValid(config.csrfKey, sessionCookie(request.headers.cookie)!, found.device.id, body.csrf_token)) {
      return errorPage(reply, 403, "Form refused", "This form was not sent from the emulator's own page, or it belongs to another sign-in.");
    }
    const approve = body.decision === "approve";
    // The page's boxes: what is ticked is the scope granted (none ticked is a mistake, not "everything").
    const ticked = body.scope === undefined ? [] : [body.scope].flat();
    if (approve && body.scope_choice !== undefined && ticked.length === 0) {
      return errorPage(reply, 400, "No scope chosen", "Approving needs at least one scope ticked.", "Go back, tick a scope and approve, or deny.");
    }
    try {
      decide(ctx, user, found, body.user_code!, approve, body.scope_choice !== undefined ? ticked.join(" ") : undefined);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      if (error.code === "expired_token") return expiredCode(reply);
      if (error.code === "already_decided") return alreadyDecided(reply, found.device.status);
      return errorPage(reply, 400, "Not possible", error.message);
    }
    return messagePage(reply, 200, approve ? "Device approved" : "Device denied",
      approve ? "You can return to your device; it will be signed in shortly." : "The device will not be signed in.");
  });
}

const unknownCode = (reply: FastifyReply) =>
  errorPage(reply, 404, "Unknown code", "No device request of your team has this code.", "Check the code your device shows and type it again.");
const expiredCode = (reply: FastifyReply) =>
  errorPage(reply, 400, "Code expired", "This device request has expired (codes last 10 minutes).", "Start again on your device to get a new code.");
const alreadyDecided = (reply: FastifyReply, status: string) =>
  errorPage(reply, 409, "Already decided", `This device request is already ${status}.`);
