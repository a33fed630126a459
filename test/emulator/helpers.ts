// Test helpers: a real emulator on 127.0.0.1 (ephemeral port) over a real SQLite file in a
// temp dir, plain fetch calls, and a read-only view of the database to prove what was (or
// was not) written.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { startEmulator, type EmulatorOptions, type EmulatorSeed, type RunningEmulator, type SeededUser } from "../../emulator/index.js";

export interface TestEmulator extends RunningEmulator {
  seed: EmulatorSeed;
  dbPath: string;
}

export async function startTestEmulator(options: EmulatorOptions = {}): Promise<TestEmulator> {
  const dir = mkdtempSync(join(tmpdir(), "scriptbox-emulator-"));
  const dbPath = join(dir, "emulator.sqlite");
  const emulator = await startEmulator({ host: "127.0.0.1", port: 0, dbPath, seed: true, testClock: true, deviceInterval: 1, ...options });
  return {
    ...emulator,
    seed: emulator.seed!,
    dbPath,
    async close() {
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export interface CallOptions {
  token?: string;
  json?: unknown;
  /** A raw body (with `contentType`). */
  body?: string | URLSearchParams;
  contentType?: string;
  cookie?: string;
  headers?: Record<string, string>;
}

export async function call(base: string, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  let body: string | undefined;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers["content-type"] = "application/json";
  } else if (options.body !== undefined) {
    body = options.body.toString();
    headers["content-type"] = options.contentType ?? (options.body instanceof URLSearchParams ? "application/x-www-form-urlencoded" : "text/plain");
  }
  if (options.contentType !== undefined) headers["content-type"] = options.contentType;
  const response = await fetch(`${base}${path}`, { method, headers, body, redirect: "manual" });
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/** A bound `call` for one emulator. */
export function client(emulator: RunningEmulator) {
  return (method: string, path: string, options?: CallOptions) => call(emulator.baseUrl, method, path, options);
}

export async function graphql(emulator: RunningEmulator, session: string | undefined, query: string, variables?: Record<string, unknown>) {
  return call(emulator.baseUrl, "POST", "/dashboard/graphql", {
    json: variables ? { query, variables } : { query },
    cookie: session === undefined ? undefined : `SERVICE_SESSION=${session}`,
  });
}

export const CREATE_PAT = `mutation Create($input: CreatePatInput!) { createPat(input: $input) { pat { id token teamId expiresAt } } }`;
export const REVOKE_PAT = `mutation Revoke($id: ID!) { revokePat(id: $id) { pat { id revokedAt } } }`;

/** A fresh PAT for a seeded person, made through the dashboard GraphQL like a user would. */
export async function patFor(emulator: RunningEmulator, user: SeededUser, expiresAt?: string): Promise<{ id: string; token: string }> {
  const answer = await graphql(emulator, user.session, CREATE_PAT, { input: { name: `test ${user.email}`, teamId: user.teamId, expiresAt } });
  if (answer.status !== 200 || !answer.body?.data) throw new Error(`createPat failed: ${answer.text}`);
  return answer.body.data.createPat.pat;
}

export function seededUser(emulator: RunningEmulator, email: string): SeededUser {
  const user = emulator.seedUsers.find((u) => u.email === email);
  if (!user) throw new Error(`no seeded user ${email}`);
  return user;
}

export async function advanceClock(emulator: RunningEmulator, seconds: number): Promise<void> {
  const answer = await call(emulator.baseUrl, "POST", "/__emulator/clock", { json: { seconds } });
  if (answer.status !== 200) throw new Error(`clock: ${answer.text}`);
}

/** Every row of every table, as one string: equal before and after means nothing was written. */
export function databaseSnapshot(dbPath: string): string {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[];
    return JSON.stringify(tables.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all()]));
  } finally {
    db.close();
  }
}

export function readDatabase<T>(dbPath: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** Registers an OAuth client with the seeded instance registration key. */
export async function registerClient(emulator: TestEmulator, metadata: Record<string, unknown>) {
  const answer = await call(emulator.baseUrl, "POST", "/oauth2/register", {
    json: { instance_registration_key: emulator.seed.CLOUD_INSTANCE_REGISTRATION_KEY, ...metadata },
  });
  if (answer.status !== 201) throw new Error(`register failed: ${answer.text}`);
  return answer.body as { client_id: string; client_secret?: string; scope: string; grant_types: string[] };
}

export function form(fields: Record<string, string>): URLSearchParams {
  return new URLSearchParams(fields);
}

export function basic(clientId: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
  return `Basic ${Buffer.from(`${enc(clientId)}:${enc(secret)}`).toString("base64")}`;
}

/** The sign-in form as a browser gets it: its login token and the nonce cookie it is bound to. */
export async function loginForm(base: string): Promise<{ token: string; cookie: string }> {
  const page = await call(base, "GET", "/dashboard/login");
  const token = /name="login_token" value="([^"]+)"/.exec(page.text)?.[1];
  const cookie = /^(SERVICE_LOGIN=[^;]+)/.exec(page.headers.get("set-cookie") ?? "")?.[1];
  if (!token || !cookie) throw new Error(`no sign-in form: ${page.status} ${page.text.slice(0, 200)}`);
  return { token, cookie };
}

/** Posts the sign-in form like the page does (same origin, with its token). */
export async function postSignIn(base: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
  const { token, cookie } = await loginForm(base);
  return call(base, "POST", "/dashboard/login", { body: new URLSearchParams({ login_token: token, ...fields }), cookie, headers });
}
