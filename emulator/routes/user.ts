// /api/v1/user: the current user, and voucher claims on their account. The two endpoints
// that take an OAuth access token besides a PAT (with scope user:read, billing:write).
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Principal } from "../auth.js";
import type { PluginOptions } from "../context.js";
import { conflict, forbidden, HttpError } from "../errors.js";
import { noQuery, timestamp } from "../schemas.js";
import { newId, normalizeVoucherCode, sha256 } from "../secrets.js";
import type { ClaimRow, UserRow } from "../store.js";

const userSchema = {
  type: "object",
  required: ["id", "object", "name", "email", "created_at", "updated_at"],
  properties: {
    id: { type: "string" }, object: { type: "string" }, name: { type: ["string", "null"] }, email: { type: "string" },
    created_at: timestamp, updated_at: timestamp,
  },
} as const;

const money = {
  type: "object", required: ["amount", "currency"],
  properties: { amount: { type: "integer" }, currency: { type: "string" } },
} as const;

const voucherClaimSchema = {
  type: "object",
  required: ["object", "id", "voucher_id", "credit", "balance", "created_at"],
  properties: {
    object: { type: "string" }, id: { type: "string" }, voucher_id: { type: "string" },
    credit: money, balance: money, created_at: timestamp,
  },
} as const;

const voucherClaimBody = {
  type: "object",
  additionalProperties: false,
  required: ["code"],
  properties: { code: { type: "string", minLength: 1, maxLength: 64 } },
} as const;

export function userRecord(row: UserRow) {
  return { id: row.id, object: "user", name: row.name, email: row.email, created_at: row.created_at, updated_at: row.updated_at };
}

/** The user a PAT or a user-bound access token acts for. */
function userOf(principal: Principal | null): UserRow {
  if (!principal?.user) throw forbidden("this token acts for a client, not a user");
  return principal.user;
}

export async function userRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  const { store, clock, auth } = ctx;
  const withScope = (scope: string) => async (request: FastifyRequest) => {
    request.principal = auth.patOrAccessToken(request, scope);
  };

  app.get("/user", { onRequest: withScope("user:read"), schema: { querystring: noQuery, response: { 200: userSchema } } },
    async (request) => userRecord(userOf(request.principal)));

  app.post<{ Body: { code: string } }>("/user/billing/voucher-claims", {
    onRequest: withScope("billing:write"),
    schema: { querystring: noQuery, body: voucherClaimBody, response: { 201: voucherClaimSchema } },
  }, async (request, reply) => {
    const user = userOf(request.principal);
    const claim = store.transaction(() => {
      const now = clock.now();
      const voucher = store.voucherByCode(sha256(normalizeVoucherCode(request.body.code)));
      if (!voucher) throw new HttpError(404, "voucher_not_found", "no voucher has this code");
      if (voucher.expires_at <= now) throw conflict("voucher_expired", "this voucher has expired");
      if (store.claim(voucher.id, user.id)) throw conflict("voucher_already_claimed", "you have already claimed this voucher");
      if (store.countClaims(voucher.id) >= voucher.max_claims) throw conflict("voucher_exhausted", "this voucher has been claimed as often as it allows");
      const row: ClaimRow = { id: newId("vcl"), voucher_id: voucher.id, user_id: user.id, amount: voucher.amount, currency: voucher.currency, created_at: now };
      store.insertClaim(row);
      return row;
    });
    return reply.status(201).send({
      object: "voucher_claim", id: claim.id, voucher_id: claim.voucher_id,
      credit: { amount: claim.amount, currency: claim.currency }, balance: store.balance(user.id), created_at: claim.created_at,
    });
  });
}
