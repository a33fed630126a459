// /api/v1/team: the team of the caller's PAT, its invitations, users, seats and
// subscription. Members read; admins change. The team always keeps an admin, and seats
// (members holding one plus pending invitations that will take one) never exceed the
// subscription's.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { teamMember, type PatPrincipal } from "../auth.js";
import type { EmulatorContext, PluginOptions } from "../context.js";
import { conflict, forbidden, notFound } from "../errors.js";
import { bodiless, deletion, deletionSchema, idParams, noQuery, timestamp } from "../schemas.js";
import { newId } from "../secrets.js";
import type { InvitationRow, MemberRow, SubscriptionRow, TeamRow } from "../store.js";

/** Invitations expire after 7 days; expired ones are no longer pending. */
export const INVITATION_TTL_SECONDS = 7 * 24 * 3600;

const teamSchema = {
  type: "object",
  required: ["id", "object", "name", "email", "created_at", "updated_at"],
  properties: {
    id: { type: "string" }, object: { type: "string" }, name: { type: "string" }, email: { type: "string" },
    created_at: timestamp, updated_at: timestamp,
  },
} as const;

const invitationSchema = {
  type: "object",
  required: ["id", "object", "email", "role", "use_seat", "expires_at", "created_at", "updated_at"],
  properties: {
    id: { type: "string" }, object: { type: "string" }, email: { type: "string" }, role: { type: "string" },
    use_seat: { type: "boolean" }, expires_at: timestamp, created_at: timestamp, updated_at: timestamp,
  },
} as const;

const teamUserSchema = {
  type: "object",
  required: ["id", "object", "name", "email", "role", "use_seat", "created_at", "updated_at"],
  properties: {
    id: { type: "string" }, object: { type: "string" }, name: { type: ["string", "null"] }, email: { type: "string" },
    role: { type: "string" }, use_seat: { type: "boolean" }, created_at: timestamp, updated_at: timestamp,
  },
} as const;

const subscriptionSchema = {
  type: ["object", "null"],
  required: ["object", "id", "plan", "seats", "seats_used", "status", "starts_at", "ends_at", "created_at", "updated_at"],
  properties: {
    object: { type: "string" }, id: { type: "string" },
    plan: {
      type: "object", required: ["object", "id", "name"],
      properties: { object: { type: "string" }, id: { type: "string" }, name: { type: "string" } },
    },
    seats: { type: "integer" }, seats_used: { type: "integer" }, status: { type: "string" },
    starts_at: timestamp, ends_at: timestamp, created_at: timestamp, updated_at: timestamp,
  },
} as const;

const createInvitationBody = {
  type: "object",
  additionalProperties: false,
  required: ["email", "role", "use_seat"],
  properties: {
    email: { type: "string", format: "email", maxLength: 254 },
    role: { type: "string", enum: ["admin", "member"] },
    use_seat: { type: "boolean" },
  },
} as const;

export function teamRecord(row: TeamRow) {
  return { id: row.id, object: "team", name: row.name, email: row.email, created_at: row.created_at, updated_at: row.updated_at };
}
export function invitationRecord(row: InvitationRow) {
  return {
    id: row.id, object: "invitation", email: row.email, role: row.role, use_seat: row.use_seat === 1,
    expires_at: row.expires_at, created_at: row.created_at, updated_at: row.updated_at,
  };
}
export function teamUserRecord(row: MemberRow) {
  return {
    id: row.user_id, object: "team_user", name: row.name, email: row.email, role: row.role, use_seat: row.use_seat === 1,
    created_at: row.created_at, updated_at: row.updated_at,
  };
}
export function subscriptionRecord(row: SubscriptionRow, seatsUsed: number, now: number) {
  return {
    object: "subscription", id: row.id, plan: { object: "plan", id: row.plan_id, name: row.plan_name },
    seats: row.seats, seats_used: seatsUsed, status: subscriptionStatus(row, now),
    starts_at: row.starts_at, ends_at: row.ends_at, created_at: row.created_at, updated_at: row.updated_at,
  };
}
function subscriptionStatus(row: SubscriptionRow, now: number): "scheduled" | "active" | "expired" {
  if (now < row.starts_at) return "scheduled";
  return now < row.ends_at ? "active" : "expired";
}

const member = teamMember;
function admin(request: FastifyRequest): PatPrincipal {
  const principal = teamMember(request);
  if (principal.role !== "admin") throw forbidden("only team admins can change the team");
  return principal;
}

/** 409 unless the team's subscription is active and has a free seat. */
function assertSeatFree(ctx: EmulatorContext, teamId: string): void {
  const now = ctx.clock.now();
  const subscription = ctx.store.subscription(teamId);
  if (!subscription) throw conflict("no_subscription", "the team has no subscription, so no seats");
  if (subscriptionStatus(subscription, now) !== "active") throw conflict("subscription_inactive", "the team's subscription is not active");
  if (ctx.store.seatsUsed(teamId, now) >= subscription.seats) {
    throw conflict("seats_exhausted", `all ${subscription.seats} seats of the subscription are taken`);
  }
}

export async function teamRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  const { store, clock } = ctx;
  app.addHook("onRequest", async (request) => {
    request.principal = ctx.auth.pat(request);
  });

  app.get("/team", { schema: { querystring: noQuery, response: { 200: teamSchema } } }, async (request) => {
    const team = store.team(member(request).teamId);
    if (!team) throw notFound("team");
    return teamRecord(team);
  });

  app.get("/team/invitations", {
    schema: { querystring: noQuery, response: { 200: { type: "array", items: invitationSchema } } },
  }, async (request) => store.pendingInvitations(member(request).teamId, clock.now()).map(invitationRecord));

  app.post<{ Body: { email: string; role: "admin" | "member"; use_seat: boolean } }>("/team/invitations", {
    schema: { querystring: noQuery, body: createInvitationBody, response: { 201: invitationSchema } },
  }, async (request, reply) => {
    const { teamId } = admin(request);
    const email = request.body.email.toLowerCase();
    const invitation = store.transaction(() => {
      const now = clock.now();
      if (store.memberByEmail(teamId, email)) throw conflict("already_member", `${email} is already a member of the team`);
      if (store.pendingInvitationFor(teamId, email, now)) throw conflict("invitation_pending", `${email} already has a pending invitation`);
      if (request.body.use_seat) assertSeatFree(ctx, teamId);
      store.deleteExpiredInvitationsFor(teamId, email, now);
      const row: InvitationRow = {
        id: newId("inv"), team_id: teamId, email, role: request.body.role, use_seat: request.body.use_seat ? 1 : 0,
        expires_at: now + INVITATION_TTL_SECONDS, created_at: now, updated_at: now,
      };
      store.insertInvitation(row);
      return row;
    });
    return reply.status(201).send(invitationRecord(invitation));
  });

  app.delete<{ Params: { invitation_id: string } }>("/team/invitations/:invitation_id", {
    schema: { querystring: noQuery, params: idParams("invitation_id", "inv"), response: { 200: deletionSchema } },
    ...bodiless,
  }, async (request) => {
    const { teamId } = admin(request);
    const invitation = store.invitation(teamId, request.params.invitation_id);
    if (!invitation) throw notFound("invitation");
    store.deleteInvitation(invitation.id);
    return deletion("invitation", invitation.id);
  });

  app.get("/team/subscription", { schema: { querystring: noQuery, response: { 200: subscriptionSchema } } }, async (request) => {
    const { teamId } = member(request);
    const subscription = store.subscription(teamId);
    const now = clock.now();
    return subscription ? subscriptionRecord(subscription, store.seatsUsed(teamId, now), now) : null;
  });

  app.get("/team/users", {
    schema: { querystring: noQuery, response: { 200: { type: "array", items: teamUserSchema } } },
  }, async (request) => store.members(member(request).teamId).map(teamUserRecord));

  const userParams = idParams("user_id", "usr");

  app.delete<{ Params: { user_id: string } }>("/team/users/:user_id", {
    schema: { querystring: noQuery, params: userParams, response: { 200: deletionSchema } },
    ...bodiless,
  }, async (request) => {
    const { teamId } = admin(request);
    store.transaction(() => {
      const target = store.member(teamId, request.params.user_id);
      if (!target) throw notFound("team user");
      if (target.role === "admin" && store.countAdmins(teamId) <= 1) {
        throw conflict("last_admin", "the team's last admin cannot be removed");
      }
      store.deleteMember(teamId, target.user_id);
    });
    return deletion("team_user", request.params.user_id);
  });

  /** Gives or takes a member's seat; asking for the state they are in changes nothing. */
  const changeSeat = (request: FastifyRequest<{ Params: { user_id: string } }>, useSeat: boolean) => {
    const { teamId } = admin(request);
    return teamUserRecord(store.transaction(() => {
      const target = store.member(teamId, request.params.user_id);
      if (!target) throw notFound("team user");
      if ((target.use_seat === 1) === useSeat) return target;
      if (useSeat) assertSeatFree(ctx, teamId);
      store.setSeat(teamId, target.user_id, useSeat, clock.now());
      return store.member(teamId, target.user_id)!;
    }));
  };
  const seatRoute = { schema: { querystring: noQuery, params: userParams, response: { 200: teamUserSchema } }, ...bodiless };
  app.put<{ Params: { user_id: string } }>("/team/users/:user_id/seat", seatRoute, async (request) => changeSeat(request, true));
  app.delete<{ Params: { user_id: string } }>("/team/users/:user_id/seat", seatRoute, async (request) => changeSeat(request, false));
}
