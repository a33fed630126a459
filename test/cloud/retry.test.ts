// Retries: 429 and 503 are retried after Retry-After (delay-seconds or an HTTP-date,
// RFC 9110 §10.2.3) or an exponential backoff, a bounded number of times; nothing else is.
// The test server scripts its answers per request; the times it saw prove the waits
// (lower bounds only: a loaded machine makes waits longer, never shorter).
import { createSandbox } from "scriptbox";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { CAUGHT, json, startServer, value, type Sandbox, type TestServer } from "./helpers.js";

const TEAM = { id: "team_1", object: "team", name: "Acme", email: "a@acme.example", created_at: 1, updated_at: 2 };
let plan: ((res: import("node:http").ServerResponse) => void)[] = [];
let server: TestServer;
let sandbox: Sandbox;

beforeAll(async () => {
  server = await startServer((_req, res, _body, index) => (plan[index] ?? ((r) => json(r, 200, TEAM)))(res));
  sandbox = await createSandbox({ net: { allow: [`127.0.0.1:${server.port}`] } });
});
afterEach(() => {
  server.requests.length = 0;
  plan = [];
});
afterAll(async () => {
  await sandbox?.dispose();
  await server?.close();
});

const rateLimited = (retryAfter?: string) => (res: import("node:http").ServerResponse) =>
  json(res, 429, { code: 429, error: "rate_limited", message: "slow down" }, retryAfter === undefined ? {} : { "retry-after": retryAfter });
const unavailable = (res: import("node:http").ServerResponse) => json(res, 503, { code: 503, error: "unavailable", message: "maintenance" });

function getTeam(options = "") {
  return `${CAUGHT}
    const client = new CloudClient({ baseUrl: input.origin, token: "t"${options ? `, ${options}` : ""} });
    try { return { team: await client.team.get() }; } catch (e) { return { error: await caught(Promise.reject(e)) }; }`;
}

const gaps = () => server.requests.slice(1).map((r, i) => r.time - server.requests[i]!.time);

test("429 with Retry-After in seconds, then 200: the call succeeds after waiting at least that long", async () => {
  plan = [rateLimited("1")];
  const result = await value(sandbox, getTeam(), { origin: server.origin });
  expect(result.team).toMatchObject({ id: "team_1", createdAt: 1 });
  expect(server.requests).toHaveLength(2);
  expect(gaps()[0]).toBeGreaterThanOrEqual(950);
});

test("429 with Retry-After as an HTTP-date is honoured too", async () => {
  const at = new Date(Date.now() + 2000);
  plan = [rateLimited(at.toUTCString())];
  const result = await value(sandbox, getTeam(), { origin: server.origin });
  expect(result.team).toMatchObject({ id: "team_1" });
  expect(server.requests).toHaveLength(2);
  // The date has whole seconds: the retry comes no earlier than that second.
  expect(server.requests[1]!.time).toBeGreaterThanOrEqual(Math.floor(at.getTime() / 1000) * 1000 - 50);
});

test("503 without Retry-After is retried with a growing backoff", async () => {
  plan = [unavailable, unavailable];
  const result = await value(sandbox, getTeam(), { origin: server.origin });
  expect(result.team).toMatchObject({ id: "team_1" });
  expect(server.requests).toHaveLength(3);
  const [first, second] = gaps();
  expect(first).toBeGreaterThanOrEqual(450); // 500 ms (+ up to 25 % jitter)
  expect(second).toBeGreaterThanOrEqual(950); // 1000 ms
});

test("retries are bounded: 3 by default, then the 429 is a CloudError with the API's code", async () => {
  plan = Array(10).fill(rateLimited("0"));
  const result = await value(sandbox, getTeam(), { origin: server.origin });
  expect(result.error).toMatchObject({ name: "CloudError", status: 429, code: "rate_limited", method: "GET", path: "/api/v1/team" });
  expect(server.requests).toHaveLength(4);
});

test("maxRetries bounds them per client (0: no retry at all)", async () => {
  plan = Array(10).fill(rateLimited("0"));
  expect((await value(sandbox, getTeam("maxRetries: 1"), { origin: server.origin })).error).toMatchObject({ status: 429 });
  expect(server.requests).toHaveLength(2);
  server.requests.length = 0;
  plan = Array(10).fill(unavailable);
  expect((await value(sandbox, getTeam("maxRetries: 0"), { origin: server.origin })).error).toMatchObject({ status: 503, code: "unavailable" });
  expect(server.requests).toHaveLength(1);
});

test("a Retry-After longer than maxRetryDelayMs is not waited for: the 429 is thrown at once", async () => {
  plan = [rateLimited("3600")];
  const result = await value(sandbox, getTeam("maxRetryDelayMs: 5000"), { origin: server.origin });
  expect(result.error).toMatchObject({ status: 429, code: "rate_limited" });
  expect(server.requests).toHaveLength(1);
});

test("500, 502 and 409 are not retried", async () => {
  for (const status of [500, 502, 409]) {
    server.requests.length = 0;
    plan = [(res) => json(res, status, { code: status, error: "nope", message: "no" }, { "retry-after": "0" })];
    const result = await value(sandbox, getTeam(), { origin: server.origin });
    expect(result.error).toMatchObject({ status, code: "nope" });
    expect(server.requests).toHaveLength(1);
  }
});

test("a retried POST sends the same body and credentials again", async () => {
  plan = [rateLimited("0")];
  const result = await value(
    sandbox,
    `return new CloudClient({ baseUrl: input.origin, token: "tok" }).team.invitations.create({ email: "x@acme.example", useSeat: true });`,
    { origin: server.origin },
  );
  expect(result).toMatchObject({ id: "team_1" });
  expect(server.requests).toHaveLength(2);
  const [a, b] = server.requests;
  expect(b!.body).toBe(a!.body);
  expect(JSON.parse(a!.body)).toEqual({ email: "x@acme.example", role: "member", use_seat: true });
  expect([a!.headers.authorization, b!.headers.authorization]).toEqual(["Bearer tok", "Bearer tok"]);
  expect(a!.headers["content-type"]).toBe("application/json");
});
