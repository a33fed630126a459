// The edges of HTTP as sloppy and hostile clients use it: requests Node's parser refuses
// (400, 431) and a request without Host get the documented error shape; endpoints that
// take no body ignore an empty or `{}` body of any media type; a body over the limit gets
// its 413 even when the client writes all of it before reading; re-seeding a file does
// not pile up credentials; close() lets requests in flight finish within a bounded grace.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator } from "../../emulator/index.js";
import { DRAIN_TIMEOUT_MS } from "../../emulator/drain.js";
import { BODY_LIMIT_BYTES } from "../../emulator/server.js";
import { call, client, readDatabase, seededUser, startTestEmulator, type TestEmulator } from "./helpers.js";

let emu: TestEmulator;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  emu = await startTestEmulator();
  api = client(emu);
});
afterAll(() => emu.close());

/** Writes raw bytes on a fresh connection and returns everything the server sent back before closing. */
function raw(port: number, head: string, body?: Buffer): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    let error: string | undefined;
    socket.on("data", (chunk) => (text += chunk));
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code));
    socket.on("close", () => resolve({ text, error }));
    socket.write(head);
    if (body) {
      // Like most clients: the whole body first, and only then look at the answer.
      const chunk = 64 * 1024;
      let offset = 0;
      const pump = () => {
        while (offset < body.length) {
          const ok = socket.write(body.subarray(offset, offset + chunk));
          offset += chunk;
          if (!ok) return void socket.once("drain", pump);
        }
        socket.end();
      };
      pump();
    } else {
      socket.end();
    }
  });
}

function jsonBodyOf(response: string): unknown {
  return JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4));
}

describe("requests the HTTP parser or the server refuses, in the documented shape", () => {
  it("a malformed request line is 400 { code, error, message }", async () => {
    const answer = await raw(emu.port, "GARBAGE\r\n\r\n");
    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(jsonBodyOf(answer.text)).toEqual({ code: 400, error: "bad_request", message: expect.any(String) });
  });

  it("headers over Node's limit are 431 { code, error, message }", async () => {
    const answer = await raw(emu.port, `GET /api/v1/team HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(answer.text).toMatch(/^HTTP\/1\.1 431 /);
    expect(jsonBodyOf(answer.text)).toEqual({ code: 431, error: "request_header_fields_too_large", message: expect.any(String) });
  });

  it("an HTTP/1.1 request without Host is 400 with a body that says so (RFC 9112 §3.2)", async () => {
    const answer = await raw(emu.port, "GET /api/v1/team HTTP/1.1\r\nConnection: close\r\n\r\n");
    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(jsonBodyOf(answer.text)).toEqual({ code: 400, error: "bad_request", message: expect.stringContaining("Host") });
  });
});

describe("endpoints without a body ignore an empty or {} body of any media type", () => {
  const mediaTypes = ["application/json", "application/x-www-form-urlencoded", "text/plain", "application/octet-stream"];

  it.each(mediaTypes)("PUT/DELETE seat with an empty or {} %s body", async (contentType) => {
    const pat = emu.seed.CLOUD_PAT;
    const grace = seededUser(emu, "grace@acme.example");
    for (const body of ["", "{}", " { } "]) {
      for (const method of ["DELETE", "PUT"]) {
        const answer = await api(method, `/api/v1/team/users/${grace.id}/seat`, { token: pat, body, contentType });
        expect(answer.status, `${method} ${contentType} ${JSON.stringify(body)}`).toBe(200);
      }
    }
  });

  it("DELETE an invitation with Content-Type: application/json and an empty body", async () => {
    const created = await api("POST", "/api/v1/team/invitations", { token: emu.seed.CLOUD_PAT, json: { email: "sloppy@acme.example", role: "member", use_seat: false } });
    const answer = await api("DELETE", `/api/v1/team/invitations/${created.body.id}`, { token: emu.seed.CLOUD_PAT, body: "", contentType: "application/json" });
    expect(answer.status).toBe(200);
  });

  it("a real body on a bodiless endpoint is still refused (422), and nothing changes", async () => {
    const grace = seededUser(emu, "grace@acme.example");
    const answer = await api("PUT", `/api/v1/team/users/${grace.id}/seat`, { token: emu.seed.CLOUD_PAT, json: { use_seat: false, padding: "x".repeat(100) } });
    expect(answer.status).toBe(422);
    expect(answer.body.error).toBe("validation_failed");
  });

  it.each(mediaTypes)("device approve/deny (query-parameter endpoints) with an empty or {} %s body", async (contentType) => {
    const device = await call(emu.baseUrl, "POST", "/oauth2/register", {
      json: { instance_registration_key: emu.seed.CLOUD_INSTANCE_REGISTRATION_KEY, grant_types: ["urn:ietf:params:oauth:grant-type:device_code"], token_endpoint_auth_method: "none" },
    });
    for (const [path, body] of [["approve", ""], ["deny", "{}"]] as const) {
      const started = await call(emu.baseUrl, "POST", "/oauth2/device/authorize", { body: new URLSearchParams({ client_id: device.body.client_id }) });
      const answer = await api("POST", `/oauth2/device/${path}?user_code=${started.body.user_code}`, { token: emu.seed.CLOUD_PAT, body, contentType });
      expect(answer.status, `${path} ${contentType}`).toBe(200);
      expect(answer.body.status).toBe(path === "approve" ? "approved" : "denied");
    }
  });
});

describe("oversize bodies", () => {
  it.each([1, 4, 8])("a %i MB body written in full before reading gets the 413, never EPIPE", async (megabytes) => {
    const size = megabytes * 1024 * 1024;
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await raw(emu.port, `POST /api/v1/team/invitations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Authorization: Bearer ${emu.seed.CLOUD_PAT}\r\nContent-Length: ${size}\r\n\r\n`, Buffer.alloc(size, 0x20));
      expect(answer.error).toBeUndefined();
      expect(answer.text).toMatch(/^HTTP\/1\.1 413 /);
      expect(jsonBodyOf(answer.text)).toMatchObject({ code: 413, error: "payload_too_large" });
    }
    expect(size).toBeGreaterThan(BODY_LIMIT_BYTES);
  }, 60_000);

  // Over the drain cap the 413 goes out at once; under it, after DRAIN_TIMEOUT_MS (10 s).
  it.each([
    ["past the drain cap", 64 * 1024 * 1024],
    ["under the drain cap, past its deadline", 1024 * 1024],
  ])("a client trickling a body %s gets its 413 and loses the connection, rather than holding it", async (_case, declared) => {
    const socket = connect(emu.port, "127.0.0.1");
    socket.on("error", () => {});
    let text = "";
    let answeredAt = 0;
    socket.on("data", (chunk) => {
      text += chunk;
      answeredAt ||= Date.now();
    });
    const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(Date.now())));
    // Declares a body over the 64 KiB limit, then sends a byte every 50 ms: left open, the
    // connection would be read and discarded until Node's 300 s request timeout.
    socket.write(`POST /api/v1/team/invitations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Authorization: Bearer ${emu.seed.CLOUD_PAT}\r\nContent-Length: ${declared}\r\n\r\n`);
    const trickle = setInterval(() => socket.writable && socket.write(" "), 50);
    const timeout = new Promise<number>((resolve) => setTimeout(() => resolve(-1), DRAIN_TIMEOUT_MS + 5_000));
    const closedAt = await Promise.race([closed, timeout]);
    clearInterval(trickle);
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(closedAt, "the server kept the trickling connection open").toBeGreaterThan(0);
    expect(closedAt - answeredAt).toBeLessThan(2_000);
  }, DRAIN_TIMEOUT_MS + 10_000);
});

describe("re-seeding a database file", () => {
  it("replaces the previous seed's credentials instead of adding more, keeps the records and the voucher's claims", async () => {
    const counts = () => ({
      sessions: readDatabase<{ n: number }>(emu.dbPath, "SELECT count(*) AS n FROM sessions")[0]!.n,
      pats: readDatabase<{ n: number }>(emu.dbPath, "SELECT count(*) AS n FROM pats")[0]!.n,
      keys: readDatabase<{ n: number }>(emu.dbPath, "SELECT count(*) AS n FROM instance_keys")[0]!.n,
      vouchers: readDatabase<{ n: number }>(emu.dbPath, "SELECT count(*) AS n FROM vouchers")[0]!.n,
    });
    const claim = await api("POST", "/api/v1/user/billing/voucher-claims", { token: emu.seed.CLOUD_PAT, json: { code: emu.seed.CLOUD_VOUCHER_CODE } });
    expect(claim.status).toBe(201);
    const dbPath = emu.dbPath;
    const before = counts();
    let previous = emu.seed;
    for (let round = 0; round < 3; round++) {
      const again = await startEmulator({ dbPath, seed: true });
      try {
        expect(again.seed!.CLOUD_TEAM_ID).toBe(emu.seed.CLOUD_TEAM_ID);
        expect((await call(again.baseUrl, "GET", "/api/v1/team", { token: again.seed!.CLOUD_PAT })).status).toBe(200);
        // The previous seed's PAT is gone; a PAT a person made is not touched.
        expect((await call(again.baseUrl, "GET", "/api/v1/team", { token: previous.CLOUD_PAT })).status).toBe(401);
        expect(counts()).toEqual(before);
        // The voucher is the same one (claimed once already by Ada), under its new code.
        const reclaim = await call(again.baseUrl, "POST", "/api/v1/user/billing/voucher-claims", { token: again.seed!.CLOUD_PAT, json: { code: again.seed!.CLOUD_VOUCHER_CODE } });
        expect(reclaim.body.error).toBe("voucher_already_claimed");
        previous = { ...previous, ...again.seed! };
      } finally {
        await again.close();
      }
    }
  });
});

describe("close()", () => {
  it("lets a request in flight finish, and cuts one that stalls after the grace", async () => {
    const emulator = await startEmulator({ seed: true, shutdownGraceMs: 1500 });
    const port = emulator.port;
    const body = JSON.stringify({ email: "late@acme.example", role: "member", use_seat: false });
    // A request whose body arrives in two parts, with close() called in between.
    const socket = connect(port, "127.0.0.1");
    let response = "";
    socket.on("data", (chunk) => (response += chunk));
    const closedSocket = new Promise((resolve) => socket.on("close", resolve));
    socket.write(`POST /api/v1/team/invitations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Authorization: Bearer ${emulator.seed!.CLOUD_PAT}\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const closing = emulator.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.write(body.slice(10));
    await closing;
    await closedSocket;
    expect(response).toMatch(/^HTTP\/1\.1 201 /);

    // A stalled request does not hold the shutdown past the grace.
    const stalled = await startEmulator({ seed: true, shutdownGraceMs: 500 });
    const hung = connect(stalled.port, "127.0.0.1");
    hung.on("error", () => {});
    hung.write(`POST /api/v1/team/invitations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    await stalled.close();
    expect(Date.now() - started).toBeLessThan(10_000); // the 500 ms grace, far from forever
    hung.destroy();
  }, 30_000);
});
