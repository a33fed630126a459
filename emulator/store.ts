// The emulator's one store: SQLite through better-sqlite3. Every statement is prepared
// with bound parameters (no SQL is ever built from request data), every multi-row change
// runs in a transaction, and a file database runs in WAL mode with synchronous=FULL, so a
// write the server has acknowledged is on disk before the response leaves (it survives
// kill -9, and power loss too). Without a path the database is private and in memory.
import Database from "better-sqlite3";
import { MIGRATIONS } from "./migrations.js";

import type { Role } from "./seed-types.js";

export type { Role } from "./seed-types.js";

export interface UserRow { id: string; email: string; name: string | null; created_at: number; updated_at: number }
export interface TeamRow { id: string; name: string; email: string; created_at: number; updated_at: number }
export interface MemberRow {
  team_id: string; user_id: string; role: Role; use_seat: number; created_at: number; updated_at: number;
  email: string; name: string | null;
}
export interface InvitationRow {
  id: string; team_id: string; email: string; role: Role; use_seat: number;
  expires_at: number; created_at: number; updated_at: number;
}
export interface SubscriptionRow {
  id: string; team_id: string; plan_id: string; plan_name: string; seats: number;
  starts_at: number; ends_at: number; created_at: number; updated_at: number;
}
export interface WorkspaceRow { id: string; team_id: string; name: string; created_at: number; updated_at: number }
export interface SessionRow { id: string; selector: string; secret_hash: Buffer; user_id: string; expires_at: number; created_at: number }
export interface PatRow {
  id: string; selector: string; secret_hash: Buffer; user_id: string; team_id: string; name: string;
  expires_at: number; revoked_at: number | null; created_at: number;
}
export interface InstanceRow { id: string; workspace_id: string; name: string; registered_at: number }
export interface InstanceKeyRow {
  id: string; selector: string; secret_hash: Buffer; workspace_id: string; instance_name: string;
  instance_id: string | null; created_at: number;
}
export interface ClientRow {
  id: string; secret_hash: Buffer | null; instance_id: string; auth_method: string;
  grant_types: string; scope: string; redirect_uris: string; ip: string; issued_at: number; updated_at: number;
  /** RFC 7591 client_name, or null. */
  name: string | null;
}
export type DeviceStatus = "pending" | "approved" | "denied" | "consumed";
export interface DeviceRow {
  id: string; selector: string; secret_hash: Buffer; user_code_hash: Buffer; client_id: string; scope: string;
  status: DeviceStatus; user_id: string | null; granted_scope: string | null; ip: string;
  interval_ms: number; last_poll_ms: number | null; expires_at: number; created_at: number; decided_at: number | null;
}
export interface AuthRequestRow {
  id: string; client_id: string; user_id: string; redirect_uri: string; scope: string;
  state: string | null; code_challenge: string | null; expires_at: number; created_at: number;
}
export interface CodeRow {
  id: string; selector: string; secret_hash: Buffer; client_id: string; user_id: string; redirect_uri: string;
  scope: string; code_challenge: string | null; expires_at: number; used_at: number | null; created_at: number;
}
export interface TokenRow {
  id: string; selector: string; secret_hash: Buffer; type: "access" | "refresh"; client_id: string;
  user_id: string | null; scope: string; family_id: string; code_id: string | null;
  expires_at: number; used_at: number | null; revoked_at: number | null; created_at: number;
}
export interface VoucherRow {
  id: string; code_hash: Buffer; amount: number; currency: string; max_claims: number; expires_at: number; created_at: number;
}
export interface ClaimRow { id: string; voucher_id: string; user_id: string; amount: number; currency: string; created_at: number }

type Params = readonly unknown[];

/** How long one statement waits for another process's lock, and how many times it tries. */
export const BUSY_TIMEOUT_MS = 5000;
const BUSY_ATTEMPTS = 3;

/** SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, …): another connection holds the lock. */
export function isBusy(error: unknown): boolean {
  return error instanceof Database.SqliteError && error.code.startsWith("SQLITE_BUSY");
}

export class Store {
  readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(path?: string) {
    this.db = new Database(path ?? ":memory:");
    if (path) {
      this.db.pragma("journal_mode = WAL");
      this.db.pragma("synchronous = FULL");
    }
    this.db.pragma("foreign_keys = ON");
    this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    this.migrate();
  }

  private migrate(): void {
    // One step per IMMEDIATE transaction that re-reads the version under the write lock,
    // so two processes opening one new file at once apply each step exactly once.
    for (;;) {
      const done = this.withBusyRetry(() => this.db.transaction(() => {
        const version = this.db.pragma("user_version", { simple: true }) as number;
        if (version > MIGRATIONS.length) {
          throw new Error(`database schema version ${version} is newer than this emulator (${MIGRATIONS.length})`);
        }
        if (version === MIGRATIONS.length) return true;
        this.db.exec(MIGRATIONS[version]!);
        this.db.pragma(`user_version = ${version + 1}`);
        return false;
      }).immediate());
      if (done) return;
    }
  }

  get schemaVersion(): number {
    return this.db.pragma("user_version", { simple: true }) as number;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /**
   * Runs `fn` in one transaction: all of its writes land, or none. IMMEDIATE: the write
   * lock is taken at BEGIN, where SQLite's busy timeout waits for another process's
   * writer. (A DEFERRED transaction that reads and then writes fails at once with
   * SQLITE_BUSY when another process wrote in between; the busy handler cannot help it.)
   */
  transaction<T>(fn: () => T): T {
    return this.withBusyRetry(() => this.db.transaction(fn).immediate());
  }

  /**
   * Runs `work`, again when another process held the database past the busy timeout.
   * Each attempt already waited BUSY_TIMEOUT_MS; after the last one the SQLITE_BUSY error
   * goes on (the API answers it with 503 database_busy).
   */
  private withBusyRetry<T>(work: () => T): T {
    for (let attempt = 1; ; attempt++) {
      try {
        return work();
      } catch (error) {
        if (!isBusy(error) || attempt >= BUSY_ATTEMPTS) throw error;
      }
    }
  }

  private prepare(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
  private get<T>(sql: string, ...params: Params): T | undefined {
    return this.prepare(sql).get(...params) as T | undefined;
  }
  private all<T>(sql: string, ...params: Params): T[] {
    return this.prepare(sql).all(...params) as T[];
  }
  private run(sql: string, ...params: Params): number {
    // Outside a transaction a write is its own transaction: retried like one. Inside one,
    // the lock is already held, and a retry must be of the whole transaction.
    if (this.db.inTransaction) return this.prepare(sql).run(...params).changes;
    return this.withBusyRetry(() => this.prepare(sql).run(...params).changes);
  }
  /** Inserts one row from an object whose keys are column names. */
  private insert(table: string, row: object): void {
    const columns = Object.keys(row);
    this.run(
      `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
      ...Object.values(row),
    );
  }

  // --- emulator metadata -------------------------------------------------------------
  getMeta(key: string): string | undefined {
    return this.get<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)?.value;
  }
  setMeta(key: string, value: string): void {
    this.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }

  // --- users, teams, members ---------------------------------------------------------
  insertUser(row: UserRow): void { this.insert("users", row); }
  insertTeam(row: TeamRow): void { this.insert("teams", row); }
  insertMember(row: Omit<MemberRow, "email" | "name">): void { this.insert("team_members", row); }
  insertSubscription(row: SubscriptionRow): void { this.insert("subscriptions", row); }
  insertWorkspace(row: WorkspaceRow): void { this.insert("workspaces", row); }

  user(id: string): UserRow | undefined {
    return this.get("SELECT * FROM users WHERE id = ?", id);
  }
  team(id: string): TeamRow | undefined {
    return this.get("SELECT * FROM teams WHERE id = ?", id);
  }
  workspace(teamId: string, id: string): WorkspaceRow | undefined {
    return this.get("SELECT * FROM workspaces WHERE id = ? AND team_id = ?", id, teamId);
  }
  workspaceById(id: string): WorkspaceRow | undefined {
    return this.get("SELECT * FROM workspaces WHERE id = ?", id);
  }

  private static readonly MEMBER_SELECT =
    "SELECT m.*, u.email, u.name FROM team_members m JOIN users u ON u.id = m.user_id";
  members(teamId: string): MemberRow[] {
    return this.all(`${Store.MEMBER_SELECT} WHERE m.team_id = ? ORDER BY m.created_at, u.email`, teamId);
  }
  member(teamId: string, userId: string): MemberRow | undefined {
    return this.get(`${Store.MEMBER_SELECT} WHERE m.team_id = ? AND m.user_id = ?`, teamId, userId);
  }
  memberByEmail(teamId: string, email: string): MemberRow | undefined {
    return this.get(`${Store.MEMBER_SELECT} WHERE m.team_id = ? AND u.email = ?`, teamId, email);
  }
  roleOf(teamId: string, userId: string): Role | undefined {
    return this.get<{ role: Role }>("SELECT role FROM team_members WHERE team_id = ? AND user_id = ?", teamId, userId)?.role;
  }
  countAdmins(teamId: string): number {
    return this.get<{ n: number }>("SELECT count(*) AS n FROM team_members WHERE team_id = ? AND role = 'admin'", teamId)!.n;
  }
  deleteMember(teamId: string, userId: string): boolean {
    return this.run("DELETE FROM team_members WHERE team_id = ? AND user_id = ?", teamId, userId) === 1;
  }
  setSeat(teamId: string, userId: string, useSeat: boolean, now: number): void {
    this.run("UPDATE team_members SET use_seat = ?, updated_at = ? WHERE team_id = ? AND user_id = ?", useSeat ? 1 : 0, now, teamId, userId);
  }

  // --- seats and subscriptions -------------------------------------------------------
  subscription(teamId: string): SubscriptionRow | undefined {
    return this.get("SELECT * FROM subscriptions WHERE team_id = ?", teamId);
  }
  /** Members holding a seat plus pending invitations that will take one. */
  seatsUsed(teamId: string, now: number): number {
    return this.get<{ n: number }>(
      `SELECT (SELECT count(*) FROM team_members WHERE team_id = ? AND use_seat = 1)
            + (SELECT count(*) FROM invitations WHERE team_id = ? AND use_seat = 1 AND expires_at > ?) AS n`,
      teamId, teamId, now,
    )!.n;
  }

  // --- invitations -------------------------------------------------------------------
  insertInvitation(row: InvitationRow): void { this.insert("invitations", row); }
  pendingInvitations(teamId: string, now: number): InvitationRow[] {
    return this.all("SELECT * FROM invitations WHERE team_id = ? AND expires_at > ? ORDER BY created_at, rowid", teamId, now);
  }
  pendingInvitationFor(teamId: string, email: string, now: number): InvitationRow | undefined {
    return this.get("SELECT * FROM invitations WHERE team_id = ? AND email = ? AND expires_at > ?", teamId, email, now);
  }
  invitation(teamId: string, id: string): InvitationRow | undefined {
    return this.get("SELECT * FROM invitations WHERE id = ? AND team_id = ?", id, teamId);
  }
  deleteInvitation(id: string): void {
    this.run("DELETE FROM invitations WHERE id = ?", id);
  }
  deleteExpiredInvitationsFor(teamId: string, email: string, now: number): void {
    this.run("DELETE FROM invitations WHERE team_id = ? AND email = ? AND expires_at <= ?", teamId, email, now);
  }

  // --- dashboard sessions and PATs ---------------------------------------------------
  insertSession(row: SessionRow): void { this.insert("sessions", row); }
  sessionBySelector(selector: string): SessionRow | undefined {
    return this.get("SELECT * FROM sessions WHERE selector = ?", selector);
  }
  insertPat(row: PatRow): void { this.insert("pats", row); }
  /** A PAT with its owner and the owner's role in the PAT's team: one query per authenticated request. */
  patWithOwner(selector: string): (PatRow & { owner: string; role: Role | null }) | undefined {
    return this.get(
      `SELECT p.*, json_object('id', u.id, 'email', u.email, 'name', u.name, 'created_at', u.created_at, 'updated_at', u.updated_at) AS owner,
              m.role AS role
         FROM pats p JOIN users u ON u.id = p.user_id
         LEFT JOIN team_members m ON m.team_id = p.team_id AND m.user_id = p.user_id
        WHERE p.selector = ?`,
      selector,
    );
  }
  pat(id: string): PatRow | undefined {
    return this.get("SELECT * FROM pats WHERE id = ?", id);
  }
  patsOf(userId: string): PatRow[] {
    return this.all("SELECT * FROM pats WHERE user_id = ? ORDER BY created_at, id", userId);
  }
  revokePat(id: string, now: number): void {
    this.run("UPDATE pats SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", now, id);
  }

  // --- instances and registration keys -----------------------------------------------
  insertInstance(row: InstanceRow): void { this.insert("instances", row); }
  instance(id: string): InstanceRow | undefined {
    return this.get("SELECT * FROM instances WHERE id = ?", id);
  }
  instanceByName(workspaceId: string, name: string): InstanceRow | undefined {
    return this.get("SELECT * FROM instances WHERE workspace_id = ? AND name = ? ORDER BY registered_at LIMIT 1", workspaceId, name);
  }
  insertInstanceKey(row: InstanceKeyRow): void { this.insert("instance_keys", row); }
  instanceKeyBySelector(selector: string): InstanceKeyRow | undefined {
    return this.get("SELECT * FROM instance_keys WHERE selector = ?", selector);
  }
  bindInstanceKey(keyId: string, instanceId: string): void {
    this.run("UPDATE instance_keys SET instance_id = ? WHERE id = ?", instanceId, keyId);
  }

  // --- OAuth clients -----------------------------------------------------------------
  insertClient(row: ClientRow): void { this.insert("oauth_clients", row); }
  client(id: string): ClientRow | undefined {
    return this.get("SELECT * FROM oauth_clients WHERE id = ?", id);
  }
  updateClient(id: string, fields: Pick<ClientRow, "grant_types" | "scope" | "redirect_uris" | "name" | "updated_at">): void {
    this.run(
      "UPDATE oauth_clients SET grant_types = ?, scope = ?, redirect_uris = ?, name = ?, updated_at = ? WHERE id = ?",
      fields.grant_types, fields.scope, fields.redirect_uris, fields.name, fields.updated_at, id,
    );
  }

  // --- device authorization requests (RFC 8628) --------------------------------------
  insertDeviceRequest(row: DeviceRow): void { this.insert("device_requests", row); }
  deviceBySelector(selector: string): DeviceRow | undefined {
    return this.get("SELECT * FROM device_requests WHERE selector = ?", selector);
  }
  deviceByUserCode(userCodeHash: Buffer): DeviceRow | undefined {
    return this.get("SELECT * FROM device_requests WHERE user_code_hash = ?", userCodeHash);
  }
  userCodeTaken(userCodeHash: Buffer): boolean {
    return this.get("SELECT 1 FROM device_requests WHERE user_code_hash = ?", userCodeHash) !== undefined;
  }
  decideDevice(id: string, status: "approved" | "denied", userId: string, grantedScope: string | null, now: number): boolean {
    return this.run(
      "UPDATE device_requests SET status = ?, user_id = ?, granted_scope = ?, decided_at = ? WHERE id = ? AND status = 'pending'",
      status, userId, grantedScope, now, id,
    ) === 1;
  }
  recordDevicePoll(id: string, pollMs: number, intervalMs: number): void {
    this.run("UPDATE device_requests SET last_poll_ms = ?, interval_ms = ? WHERE id = ?", pollMs, intervalMs, id);
  }
  consumeDevice(id: string): boolean {
    return this.run("UPDATE device_requests SET status = 'consumed' WHERE id = ? AND status = 'approved'", id) === 1;
  }

  // --- authorization requests awaiting consent, and codes -----------------------------
  insertAuthRequest(row: AuthRequestRow): void { this.insert("authorization_requests", row); }
  authRequest(id: string): AuthRequestRow | undefined {
    return this.get("SELECT * FROM authorization_requests WHERE id = ?", id);
  }
  deleteAuthRequest(id: string): void {
    this.run("DELETE FROM authorization_requests WHERE id = ?", id);
  }
  insertCode(row: CodeRow): void { this.insert("authorization_codes", row); }
  codeBySelector(selector: string): CodeRow | undefined {
    return this.get("SELECT * FROM authorization_codes WHERE selector = ?", selector);
  }
  /** Marks a code used; false when it already was (a replay). */
  useCode(id: string, now: number): boolean {
    return this.run("UPDATE authorization_codes SET used_at = ? WHERE id = ? AND used_at IS NULL", now, id) === 1;
  }

  // --- access and refresh tokens -----------------------------------------------------
  insertToken(row: TokenRow): void { this.insert("oauth_tokens", row); }
  tokenBySelector(selector: string): TokenRow | undefined {
    return this.get("SELECT * FROM oauth_tokens WHERE selector = ?", selector);
  }
  /** Marks a refresh token used (rotated); false when it already was (a replay). */
  useRefreshToken(id: string, now: number): boolean {
    return this.run("UPDATE oauth_tokens SET used_at = ? WHERE id = ? AND used_at IS NULL AND revoked_at IS NULL", now, id) === 1;
  }
  revokeFamily(familyId: string, now: number): void {
    this.run("UPDATE oauth_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL", now, familyId);
  }

  // --- vouchers ----------------------------------------------------------------------
  insertVoucher(row: VoucherRow): void { this.insert("vouchers", row); }
  /** A voucher's new code and validity (re-seeding: same voucher, its claims kept). */
  renewVoucher(id: string, codeHash: Buffer, expiresAt: number): boolean {
    return this.run("UPDATE vouchers SET code_hash = ?, expires_at = ? WHERE id = ?", codeHash, expiresAt, id) > 0;
  }

  /** Removes credentials the seed issued before (re-seeding replaces them). */
  deleteSeedCredentials(ids: { sessions: readonly string[]; pat: string; instanceKey: string }): void {
    for (const id of ids.sessions) this.run("DELETE FROM sessions WHERE id = ?", id);
    this.run("DELETE FROM pats WHERE id = ?", ids.pat);
    this.run("DELETE FROM instance_keys WHERE id = ?", ids.instanceKey);
  }
  voucherByCode(codeHash: Buffer): VoucherRow | undefined {
    return this.get("SELECT * FROM vouchers WHERE code_hash = ?", codeHash);
  }
  countClaims(voucherId: string): number {
    return this.get<{ n: number }>("SELECT count(*) AS n FROM voucher_claims WHERE voucher_id = ?", voucherId)!.n;
  }
  claim(voucherId: string, userId: string): ClaimRow | undefined {
    return this.get("SELECT * FROM voucher_claims WHERE voucher_id = ? AND user_id = ?", voucherId, userId);
  }
  insertClaim(row: ClaimRow): void { this.insert("voucher_claims", row); }
  balance(userId: string): { amount: number; currency: string } {
    const row = this.get<{ amount: number | null }>("SELECT sum(amount) AS amount FROM voucher_claims WHERE user_id = ?", userId);
    return { amount: row?.amount ?? 0, currency: "usd" };
  }
}
