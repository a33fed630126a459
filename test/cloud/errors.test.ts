// Bad input and bad answers: wrong argument types are TypeErrors before any request;
// garbage answers (HTML, truncated JSON, a 500, a dropped connection) are CloudErrors with
// the status and a short excerpt, never a hang or a host error.
import { createSandbox, runScript } from "scriptbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CAUGHT, json, script, startServer, value, type Sandbox, type TestServer } from "./helpers.js";

let server: TestServer;
let sandbox: Sandbox;

// The answer is chosen by the request path.
function answer(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): void {
  const path = req.url!.replace(/\?.*/, "");
  switch (path) {
    case "/html/api/v1/team":
      res.writeHead(200, { "content-type": "text/html" });
      return void res.end(`<!DOCTYPE html>\n<html>\n  <body><h1>Welcome to nginx!</h1>${"<p>filler</p>".repeat(50)}</body>\n</html>`);
    case "/html500/api/v1/team":
      res.writeHead(500, { "content-type": "text/html" });
      return void res.end("<html><body><h1>500 Internal Server Error</h1></body></html>");
    case "/json500/api/v1/team":
      return json(res, 500, { code: 500, error: "server_error", message: "boom" });
    case "/truncated/api/v1/team":
      // A complete HTTP answer whose JSON stops half-way.
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end('{"id":"team_1","object":"team","na');
    case "/dropped/api/v1/team":
      // Promises 1000 bytes, sends 20, then the connection dies.
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write('{"id":"team_1","obj');
      return void setTimeout(() => res.socket?.destroy(), 20);
    case "/empty/api/v1/team":
      res.writeHead(502, { "content-type": "text/plain" });
      return void res.end();
    case "/hang/api/v1/team":
      return; // never answers
    default:
      json(res, 404, { code: 404, error: "not_found", message: "no such endpoint" });
  }
}

beforeAll(async () => {
  server = await startServer((req, res) => answer(req, res));
  sandbox = await createSandbox({ net: { allow: [`127.0.0.1:${server.port}`] }, limits: { fetchTimeoutMs: 1500 } });
});
afterAll(async () => {
  await sandbox?.dispose();
  await server?.close();
});

describe("wrong argument types", () => {
  test("every method checks its arguments and throws a TypeError before any request", async () => {
    const before = server.requests.length;
    const result = await value(
      sandbox,
      `${CAUGHT}
       const c = new CloudClient({ baseUrl: input.origin, token: "t", session: "s" });
       const calls = {
         "team.invitations.create()": () => c.team.invitations.create(),
         "team.invitations.create(email: 1)": () => c.team.invitations.create({ email: 1 }),
         "team.invitations.create(useSeat: 'true')": () => c.team.invitations.create({ email: "a@b.c", useSeat: "true" }),
         "team.invitations.create(role: null)": () => c.team.invitations.create({ email: "a@b.c", role: null }),
         "team.invitations.delete(42)": () => c.team.invitations.delete(42),
         "team.invitations.delete('')": () => c.team.invitations.delete(""),
         "team.users.remove({})": () => c.team.users.remove({}),
         "team.users.assignSeat()": () => c.team.users.assignSeat(),
         "team.users.revokeSeat(null)": () => c.team.users.revokeSeat(null),
         "user.claimVoucher(123)": () => c.user.claimVoucher(123),
         "workspaces.get([])": () => c.workspaces.get([]),
         "oauth.register('key')": () => c.oauth.register("key"),
         "oauth.register(grantTypes: 'x')": () => c.oauth.register({ instanceRegistrationKey: "k", grantTypes: "client_credentials" }),
         "oauth.updateClient(no secret)": () => c.oauth.updateClient({ clientId: "cli_1" }),
         "oauth.authorizeUrl(no scope)": () => c.oauth.authorizeUrl({ clientId: "cli_1", redirectUri: "http://x/cb" }),
         "oauth.pkce.challenge(short)": () => c.oauth.pkce.challenge("abc"),
         "oauth.pkce.challenge(non-ASCII)": () => c.oauth.pkce.challenge("é".repeat(43)),
         "oauth.token.clientCredentials(no secret)": () => c.oauth.token.clientCredentials({ clientId: "cli_1" }),
         "oauth.token.authorizationCode(no code)": () => c.oauth.token.authorizationCode({ clientId: "cli_1", redirectUri: "http://x/cb" }),
         "oauth.token.refresh(refreshToken: 1)": () => c.oauth.token.refresh({ clientId: "cli_1", refreshToken: 1 }),
         "oauth.token.deviceCode()": () => c.oauth.token.deviceCode(),
         "oauth.device.authorize(clientId: 5)": () => c.oauth.device.authorize({ clientId: 5 }),
         "oauth.device.poll(interval: -1)": () => c.oauth.device.poll({ clientId: "c", deviceCode: "d", interval: -1 }),
         "oauth.device.poll(signal: {})": () => c.oauth.device.poll({ clientId: "c", deviceCode: "d", signal: { aborted: false } }),
         "oauth.device.information(undefined)": () => c.oauth.device.information(),
         "oauth.device.approve(code, scope: 1)": () => c.oauth.device.approve("ABCD-EFGH", { scope: 1 }),
         "oauth.device.deny(1)": () => c.oauth.device.deny(1),
         "oauth.introspect(token, no client)": () => c.oauth.introspect("sbat_x"),
         "pats.create(teamId missing)": () => c.pats.create({ name: "x" }),
         "pats.create(expiresAt: 5)": () => c.pats.create({ name: "x", teamId: "team_1", expiresAt: 5 }),
         "pats.create(expiresAt: Invalid Date)": () => c.pats.create({ name: "x", teamId: "team_1", expiresAt: new Date(NaN) }),
         "pats.revoke()": () => c.pats.revoke(),
       };
       const out = {};
       for (const [name, fn] of Object.entries(calls)) out[name] = await caught(fn);
       return out;`,
      { origin: server.origin },
    );
    for (const [call, error] of Object.entries(result as Record<string, { name: string; message: string }>)) {
      expect(error.name, `${call}: ${error.message}`).toBe("TypeError");
    }
    expect(result["team.invitations.create(email: 1)"].message).toBe("team.invitations.create: email must be a non-empty string, got number");
    expect(result["oauth.device.poll(signal: {})"].message).toBe("oauth.device.poll: signal must be an AbortSignal, got object");
    expect(server.requests.length).toBe(before);
  });

  test("new CloudClient checks its options", async () => {
    const result = await value(
      sandbox,
      `const names = [];
       for (const options of [undefined, {}, { baseUrl: 1 }, { baseUrl: "ftp://x.example" }, { baseUrl: "https://x.example/?q=1" }, { baseUrl: "x.example" },
                              { baseUrl: "https://x.example", token: 5 }, { baseUrl: "https://x.example", maxRetries: -1 },
                              { baseUrl: "https://x.example", maxRetries: 1.5 }, { baseUrl: "https://x.example", maxRetries: 11 }, { baseUrl: "https://x.example", maxRetryDelayMs: "1" }]) {
         try { new CloudClient(options); names.push("no error"); } catch (e) { names.push(e.name); }
       }
       const ok = new CloudClient({ baseUrl: "https://cloud.example/prefix///" });
       return { names, baseUrl: ok.baseUrl };`,
    );
    expect(result.names).toEqual(Array(11).fill("TypeError"));
    expect(result.baseUrl).toBe("https://cloud.example/prefix");
  });
});

describe("configuration", () => {
  test("without a cloud option, importing works and the first use is a CloudError not_configured", async () => {
    const result = await value(
      sandbox,
      `${CAUGHT} return { baseUrl: cloud.baseUrl, get: await caught(cloud.team.get()), url: await caught(() => cloud.oauth.authorizeUrl({ clientId: "c", redirectUri: "http://x/cb", scope: "user:read" })),
                          pkce: cloud.oauth.pkce.challenge(cloud.oauth.pkce.verifier()).length };`,
    );
    expect(result.baseUrl).toBe("");
    expect(result.get).toMatchObject({ name: "CloudError", status: 0, code: "not_configured", method: "GET", path: "/api/v1/team" });
    expect(result.get.message).toMatch(/no cloud API is configured for this sandbox.*--cloud-url/);
    expect(result.url).toMatchObject({ code: "not_configured" });
    expect(result.pkce).toBe(43);
  });

  test("a client without a token (or session) says so before any request", async () => {
    const before = server.requests.length;
    const result = await value(
      sandbox,
      `${CAUGHT} const c = new CloudClient({ baseUrl: input.origin });
       return [await caught(c.team.get()), await caught(c.pats.list())];`,
      { origin: server.origin },
    );
    expect(result[0]).toMatchObject({ name: "CloudError", status: 0, code: "not_configured" });
    expect(result[0].message).toMatch(/needs a token/);
    expect(result[1].message).toMatch(/needs a dashboard session/);
    expect(server.requests.length).toBe(before);
  });
});

describe("garbage answers", () => {
  const get = (prefix: string) => `${CAUGHT} return caught(new CloudClient({ baseUrl: input.origin + "${prefix}", token: "t" }).team.get());`;

  test("HTML with status 200 is a CloudError invalid_response with the status and a short excerpt", async () => {
    const error = await value(sandbox, get("/html"), { origin: server.origin });
    expect(error).toMatchObject({ name: "CloudError", status: 200, code: "invalid_response", method: "GET", path: "/api/v1/team" });
    expect(error.excerpt.startsWith("<!DOCTYPE html> <html> <body><h1>Welcome to nginx!</h1>")).toBe(true);
    expect(error.excerpt.length).toBeLessThanOrEqual(201);
    expect(error.message).toMatch(/^the API answered 200 OK with an unreadable body \(text\/html\): "<!DOCTYPE html>/);
  });

  test("an HTML 500 is a CloudError with status 500 and the excerpt; a JSON 500 keeps the API's code", async () => {
    const html = await value(sandbox, get("/html500"), { origin: server.origin });
    expect(html).toMatchObject({ status: 500, code: "invalid_response", excerpt: "<html><body><h1>500 Internal Server Error</h1></body></html>" });
    const api = await value(sandbox, get("/json500"), { origin: server.origin });
    expect(api).toMatchObject({ status: 500, code: "server_error", message: "boom (500 server_error, GET /api/v1/team)" });
  });

  test("truncated JSON is invalid_response; an empty error body says so", async () => {
    const truncated = await value(sandbox, get("/truncated"), { origin: server.origin });
    expect(truncated).toMatchObject({ status: 200, code: "invalid_response", excerpt: '{"id":"team_1","object":"team","na' });
    const empty = await value(sandbox, get("/empty"), { origin: server.origin });
    expect(empty).toMatchObject({ status: 502, code: "invalid_response", excerpt: "" });
    expect(empty.message).toMatch(/answered 502 Bad Gateway with an empty body/);
  });

  test("a connection dropped mid-body is a CloudError network_error (status 0)", async () => {
    const error = await value(sandbox, get("/dropped"), { origin: server.origin });
    expect(error).toMatchObject({ name: "CloudError", status: 0, code: "network_error", path: "/api/v1/team" });
    expect(error.message).toMatch(/^fetch failed: \S/);
    expect(error.message).not.toMatch(/fetch failed: fetch failed/);
  });

  test("a refused connection names its cause once: fetch failed: connect ECONNREFUSED …", async () => {
    // A port that was just free: nothing listens on it.
    const probe = await startServer((_req, res) => res.end());
    const closedPort = probe.port;
    await probe.close();
    const result = await runScript(
      `import { CloudClient } from "cloud";
       export default async () => {
         try { await new CloudClient({ baseUrl: "http://127.0.0.1:${closedPort}", token: "t" }).team.get(); }
         catch (e) { return { name: e.name, code: e.code, message: e.message, cause: e.cause.message, causeCause: e.cause.cause.message, stack: e.stack }; }
       };`,
      { filename: "cloud-refused.js", net: { allow: [`127.0.0.1:${closedPort}`] } },
    );
    // The stack points at the script's call (line 3), not into the cloud library.
    expect((result as { value: { stack: string } }).value.stack).toMatch(/^CloudError: fetch failed: connect ECONNREFUSED [^\n]*\n\s+at [^\n]*cloud-refused\.js:3:\d+/);
    expect((result as { value: { stack: string } }).value.stack).not.toContain("scriptbox:");
    expect(result).toMatchObject({
      ok: true,
      value: {
        name: "CloudError",
        code: "network_error",
        message: `fetch failed: connect ECONNREFUSED 127.0.0.1:${closedPort} (network_error, GET /api/v1/team)`,
        cause: `fetch failed: connect ECONNREFUSED 127.0.0.1:${closedPort}`,
        causeCause: `connect ECONNREFUSED 127.0.0.1:${closedPort}`,
      },
    });
  });

  test("a server that never answers ends at the sandbox's fetch timeout, not in a hang", async () => {
    const error = await value(sandbox, get("/hang"), { origin: server.origin });
    expect(error).toMatchObject({ name: "TimeoutError" });
  });

  test("an unknown endpoint's JSON error is a CloudError with its code", async () => {
    const error = await value(sandbox, get("/nothing-here"), { origin: server.origin });
    expect(error).toMatchObject({ status: 404, code: "not_found", isCloudError: true });
  });
});

test("an uncaught CloudError fails the run with a readable message and stack", async () => {
  const result = await runScript(script(`await new CloudClient({ baseUrl: input.origin + "/json500", token: "t" }).team.get();`), {
    filename: "job.js",
    input: { origin: server.origin },
    net: { allow: [`127.0.0.1:${server.port}`] },
  });
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect(result.error).toMatchObject({ kind: "script", name: "CloudError", message: "boom (500 server_error, GET /api/v1/team)" });
  expect(result.error.stack).toMatch(/^CloudError: boom/);
});
