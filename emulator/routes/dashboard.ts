// The dashboard: POST /dashboard/graphql (graphql-js) with the SERVICE_SESSION cookie,
// where PATs are created and revoked (the spec has no public endpoint for them), and the
// sign-in page that sets that cookie for the OAuth consent pages.
import formbody from "@fastify/formbody";
import type { FastifyInstance } from "fastify";
import {
  GraphQLError, GraphQLID, GraphQLInputObjectType, GraphQLList, GraphQLNonNull, GraphQLObjectType,
  GraphQLScalarType, GraphQLSchema, GraphQLString, Kind, executeSync, getOperationAST, parse, validate,
  type DocumentNode, type ExecutionResult, type GraphQLNullableType,
} from "graphql";
import { SESSION_COOKIE } from "../auth.js";
import type { EmulatorContext, PluginOptions } from "../context.js";
import { errorHandler, HttpError } from "../errors.js";
import { checkDocumentCost, checkMergeWork, checkQueryText, enforceTimeBudget, GraphQLLimitError, parseOptions, type Deadline } from "../graphqlLimits.js";
import { messagePage, signInPage } from "../pages.js";
import { crossOriginRequest, loginFormToken, loginFormValid, safeReturnTo } from "../signIn.js";
import { issueSecret, newId } from "../secrets.js";
import type { PatRow, UserRow } from "../store.js";

/** A PAT created without expiresAt lives 90 days. */
export const PAT_DEFAULT_TTL_SECONDS = 90 * 24 * 3600;

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const RFC3339_PARTS = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})/;

/** Whether the date and time fields name a real instant (Date.parse rolls 2030-02-30 over to March 2). */
function realDateTime(value: string): boolean {
  const [, y, mo, d, h, mi, s] = RFC3339_PARTS.exec(value)!.map(Number);
  const daysInMonth = new Date(Date.UTC(y!, mo!, 0)).getUTCDate();
  return mo! >= 1 && mo! <= 12 && d! >= 1 && d! <= daysInMonth && h! <= 23 && mi! <= 59 && s! <= 60;
}

function parseDateTime(value: unknown): number {
  const ms = typeof value === "string" && RFC3339.test(value) && realDateTime(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw new GraphQLError("DateTime must be an RFC 3339 date-time of a real date, e.g. 2030-01-31T12:00:00Z");
  return Math.floor(ms / 1000);
}

/** RFC 3339 date-times outside, Unix seconds inside. */
const DateTime = new GraphQLScalarType<number, string>({
  name: "DateTime",
  description: "An RFC 3339 date-time, e.g. 2030-01-31T12:00:00Z",
  serialize: (seconds) => new Date((seconds as number) * 1000).toISOString().replace(".000Z", "Z"),
  parseValue: parseDateTime,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError("DateTime must be a string");
    return parseDateTime(ast.value);
  },
});

interface GraphQLContext extends Deadline {
  ctx: EmulatorContext;
  user: UserRow;
}
interface PatSource {
  row: PatRow;
  token?: string;
}

function gqlError(code: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

const nonNull = <T extends GraphQLNullableType>(type: T) => new GraphQLNonNull(type);

const UserType = new GraphQLObjectType<UserRow>({
  name: "User",
  fields: {
    id: { type: nonNull(GraphQLID) },
    email: { type: nonNull(GraphQLString) },
    name: { type: GraphQLString },
  },
});

const PatType = new GraphQLObjectType<PatSource>({
  name: "Pat",
  description: "A personal access token. `token` is only returned by createPat.",
  fields: {
    id: { type: nonNull(GraphQLID), resolve: (s) => s.row.id },
    name: { type: nonNull(GraphQLString), resolve: (s) => s.row.name },
    teamId: { type: nonNull(GraphQLID), resolve: (s) => s.row.team_id },
    expiresAt: { type: nonNull(DateTime), resolve: (s) => s.row.expires_at },
    createdAt: { type: nonNull(DateTime), resolve: (s) => s.row.created_at },
    revokedAt: { type: DateTime, resolve: (s) => s.row.revoked_at },
    token: { type: GraphQLString, resolve: (s) => s.token ?? null },
  },
});

const PatPayload = (name: string) =>
  new GraphQLObjectType<PatSource>({ name, fields: { pat: { type: nonNull(PatType), resolve: (s) => s } } });

const CreatePatInput = new GraphQLInputObjectType({
  name: "CreatePatInput",
  fields: {
    name: { type: nonNull(GraphQLString) },
    teamId: { type: nonNull(GraphQLID) },
    expiresAt: { type: DateTime, description: "Default: 90 days from now" },
  },
});

export const dashboardSchema = new GraphQLSchema({
  query: new GraphQLObjectType<unknown, GraphQLContext>({
    name: "Query",
    fields: {
      viewer: { type: nonNull(UserType), resolve: (_s, _a, { user }) => user },
      pats: {
        type: nonNull(new GraphQLList(nonNull(PatType))),
        resolve: (_s, _a, { ctx, user }): PatSource[] => ctx.store.patsOf(user.id).map((row) => ({ row })),
      },
    },
  }),
  mutation: new GraphQLObjectType<unknown, GraphQLContext>({
    name: "Mutation",
    fields: {
      createPat: {
        type: nonNull(PatPayload("CreatePatPayload")),
        args: { input: { type: nonNull(CreatePatInput) } },
        resolve(_s, { input }: { input: { name: string; teamId: string; expiresAt?: number | null } }, { ctx, user }): PatSource {
          const now = ctx.clock.now();
          const name = input.name.trim();
          // Characters are code points: 100 emoji are 100 characters, not 200 UTF-16 units.
          const length = [...name].length;
          if (length === 0 || length > 100) throw gqlError("BAD_USER_INPUT", "name must be 1 to 100 characters");
          if (!ctx.store.roleOf(input.teamId, user.id)) throw gqlError("NOT_FOUND", "no such team");
          const expiresAt = input.expiresAt ?? now + PAT_DEFAULT_TTL_SECONDS;
          if (expiresAt <= now) throw gqlError("BAD_USER_INPUT", "expiresAt must be in the future");
          const secret = issueSecret("pat");
          const row: PatRow = {
            id: newId("pat"), selector: secret.selector, secret_hash: secret.hash, user_id: user.id, team_id: input.teamId,
            name, expires_at: expiresAt, revoked_at: null, created_at: now,
          };
          ctx.store.insertPat(row);
          return { row, token: secret.value };
        },
      },
      revokePat: {
        type: nonNull(PatPayload("RevokePatPayload")),
        args: { id: { type: nonNull(GraphQLID) } },
        resolve(_s, { id }: { id: string }, { ctx, user }): PatSource {
          const pat = ctx.store.pat(id);
          if (!pat || pat.user_id !== user.id) throw gqlError("NOT_FOUND", "no such personal access token");
          ctx.store.revokePat(pat.id, ctx.clock.now());
          return { row: ctx.store.pat(pat.id)! };
        },
      },
    },
  }),
});

enforceTimeBudget(dashboardSchema);

const ROLLBACK = Symbol("rollback");

/**
 * Runs a mutation in one transaction, and undoes it when the answer has no data. Every
 * Mutation field is non-null, so one failing field (NOT_FOUND, BAD_USER_INPUT, the time
 * budget) nulls the whole answer: without the rollback the fields that ran before it
 * would stay written while the client is told nothing, e.g. a PAT whose token no one
 * ever sees. The transaction takes the write lock first (waiting for another process on
 * the same --db file), and the time budget starts once it holds it, so waiting for the
 * lock cannot run a mutation out of its budget after it wrote.
 */
function runMutation(ctx: EmulatorContext, run: () => ExecutionResult): ExecutionResult {
  let result: ExecutionResult | undefined;
  try {
    ctx.store.transaction(() => {
      result = run();
      if (result.data == null) throw ROLLBACK;
    });
  } catch (error) {
    if (error !== ROLLBACK) throw error;
  }
  return result!;
}

/** A GraphQL error in the documented shape: `extensions.code` always set (`code` when the error has none). */
const withCode = (code: string) => (error: GraphQLError) => {
  const json = error.toJSON();
  return { ...json, extensions: { code, ...json.extensions } };
};

/** A parse error or a refused limit as one GraphQL error; anything else is a generic parse failure. */
function requestError(error: unknown): object {
  if (error instanceof GraphQLLimitError) return { message: error.message, extensions: { code: error.code } };
  if (error instanceof GraphQLError) return { ...error.toJSON(), extensions: { code: "GRAPHQL_PARSE_FAILED", ...error.extensions } };
  return { message: "the query could not be parsed", extensions: { code: "GRAPHQL_PARSE_FAILED" } };
}

const graphqlBody = {
  type: "object",
  additionalProperties: false,
  required: ["query"],
  properties: {
    query: { type: "string", minLength: 1 },
    variables: { type: ["object", "null"] },
    operationName: { type: ["string", "null"] },
    extensions: { type: ["object", "null"] },
  },
} as const;

interface GraphQLBody {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

export async function dashboardRoutes(app: FastifyInstance, { ctx }: PluginOptions): Promise<void> {
  app.register(async (graphql) => {
    // JSON only: a form or text/plain POST (which a browser may send cross-site without
    // a preflight) is refused before the session cookie is looked at.
    graphql.removeContentTypeParser("text/plain");
    graphql.setErrorHandler(errorHandler("graphql"));
    graphql.post<{ Body: GraphQLBody }>("/dashboard/graphql", { schema: { body: graphqlBody } }, async (request, reply) => {
      const user = ctx.auth.sessionUser(request);
      if (!user) throw new HttpError(401, "unauthenticated", `a valid ${SESSION_COOKIE} cookie is required`);
      let document: DocumentNode;
      try {
        checkQueryText(request.body.query);
        document = parse(request.body.query, parseOptions);
        checkDocumentCost(dashboardSchema, document);
        checkMergeWork(document);
      } catch (error) {
        return reply.status(400).send({ errors: [requestError(error)] });
      }
      const validationErrors = validate(dashboardSchema, document);
      if (validationErrors.length > 0) return reply.status(400).send({ errors: validationErrors.map(withCode("GRAPHQL_VALIDATION_FAILED")) });
      const operation = getOperationAST(document, request.body.operationName ?? undefined);
      if (operation?.operation === "subscription") {
        return reply.status(400).send({ errors: [{ message: "subscriptions are not supported", extensions: { code: "BAD_REQUEST" } }] });
      }
      const run = () => executeSync({
        schema: dashboardSchema,
        document,
        variableValues: request.body.variables ?? undefined,
        operationName: request.body.operationName ?? undefined,
        contextValue: { ctx, user, deadline: Date.now() + ctx.config.graphqlTimeBudgetMs } satisfies GraphQLContext,
      });
      const result = operation?.operation === "mutation" ? runMutation(ctx, run) : run();
      // GraphQL over HTTP: a request that never reached execution (bad variables, unknown
      // operation) has no `data` and is a 400; execution errors ride along with data.
      const executed = "data" in result;
      const errors = result.errors?.map(withCode(executed ? "INTERNAL_SERVER_ERROR" : "BAD_REQUEST"));
      const status = !executed || errors?.some((e) => e.extensions.code === "TIME_BUDGET_EXCEEDED") ? 400 : 200;
      return reply.status(status).send(errors ? { ...result, errors } : result);
    });
  });

  app.register(async (pages) => {
    pages.removeAllContentTypeParsers();
    await pages.register(formbody);
    const { csrfKey } = ctx.config;
    pages.get<{ Querystring: { return_to?: string } }>("/dashboard/login", {
      schema: { querystring: { type: "object", properties: { return_to: { type: "string", maxLength: 4096 } } } },
    }, async (request, reply) =>
      signInPage(reply, { returnTo: safeReturnTo(request.query.return_to), loginToken: loginFormToken(csrfKey, request, reply) }));

    pages.get("/dashboard", async (request, reply) => {
      const user = ctx.auth.sessionUser(request);
      if (!user) return reply.redirect("/dashboard/login", 302);
      return messagePage(reply, 200, "Dashboard", `Signed in as ${user.email}.`);
    });

    pages.post<{ Body: { session?: string; return_to?: string; login_token?: string } }>("/dashboard/login", {
      schema: {
        body: {
          type: "object",
          properties: {
            session: { type: "string", maxLength: 200 }, return_to: { type: "string", maxLength: 4096 }, login_token: { type: "string", maxLength: 200 },
          },
        },
      },
    }, async (request, reply) => {
      const returnTo = safeReturnTo(request.body.return_to);
      if (crossOriginRequest(request) || !loginFormValid(csrfKey, request, request.body.login_token)) {
        return signInPage(reply, {
          returnTo, loginToken: loginFormToken(csrfKey, request, reply), status: 403,
          error: "This sign-in form did not come from the emulator's own page (or it is stale). Sign in here instead.",
        });
      }
      const session = (request.body.session ?? "").trim();
      const user = ctx.auth.userOfSession(session);
      if (!user) {
        return signInPage(reply, { returnTo, loginToken: loginFormToken(csrfKey, request, reply), status: 401, error: "That session token is not valid." });
      }
      return reply
        .header("set-cookie", `${SESSION_COOKIE}=${session}; Path=/; HttpOnly; SameSite=Lax`)
        .redirect(returnTo, 303);
    });
  });
}
