// The database schema, as an ordered list of migrations kept in the code. PRAGMA
// user_version records how many have run; a database opened by this code is brought up
// to date in one transaction per step. Append new steps; never edit a shipped one.
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

  CREATE TABLE users (
    id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);

  CREATE TABLE teams (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);

  CREATE TABLE team_members (
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    use_seat INTEGER NOT NULL CHECK (use_seat IN (0, 1)),
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    PRIMARY KEY (team_id, user_id));

  CREATE TABLE invitations (
    id TEXT PRIMARY KEY, team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    email TEXT NOT NULL, role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    use_seat INTEGER NOT NULL CHECK (use_seat IN (0, 1)), expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
  CREATE INDEX invitations_by_team ON invitations (team_id, email);

  CREATE TABLE subscriptions (
    id TEXT PRIMARY KEY, team_id TEXT NOT NULL UNIQUE REFERENCES teams(id) ON DELETE CASCADE,
    plan_id TEXT NOT NULL, plan_name TEXT NOT NULL, seats INTEGER NOT NULL CHECK (seats >= 0),
    starts_at INTEGER NOT NULL, ends_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);

  CREATE TABLE workspaces (
    id TEXT PRIMARY KEY, team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);

  CREATE TABLE sessions (
    id TEXT PRIMARY KEY, selector TEXT NOT NULL UNIQUE, secret_hash BLOB NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL);

  CREATE TABLE pats (
    id TEXT PRIMARY KEY, selector TEXT NOT NULL UNIQUE, secret_hash BLOB NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    name TEXT NOT NULL, expires_at INTEGER NOT NULL, revoked_at INTEGER, created_at INTEGER NOT NULL);
  CREATE INDEX pats_by_user ON pats (user_id);

  CREATE TABLE instances (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL, registered_at INTEGER NOT NULL);

  CREATE TABLE instance_keys (
    id TEXT PRIMARY KEY, selector TEXT NOT NULL UNIQUE, secret_hash BLOB NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    instance_name TEXT NOT NULL, instance_id TEXT REFERENCES instances(id),
    created_at INTEGER NOT NULL);

  CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY, secret_hash BLOB, instance_id TEXT NOT NULL REFERENCES instances(id),
    auth_method TEXT NOT NULL, grant_types TEXT NOT NULL, scope TEXT NOT NULL,
    redirect_uris TEXT NOT NULL, ip TEXT NOT NULL,
    issued_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);

  CREATE TABLE device_requests (
    id TEXT PRIMARY KEY, selector TEXT NOT NULL UNIQUE, secret_hash BLOB NOT NULL,
    user_code_hash BLOB NOT NULL UNIQUE,
    client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
    user_id TEXT REFERENCES users(id), granted_scope TEXT, ip TEXT NOT NULL,
    interval_ms INTEGER NOT NULL, last_poll_ms INTEGER,
    expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL, decided_at INTEGER);

  CREATE TABLE authorization_requests (
    id TEXT PRIMARY KEY, client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id), redirect_uri TEXT NOT NULL, scope TEXT NOT NULL,
    state TEXT, code_challenge TEXT, expires_at INTEGER NOT NULL, created_at INTEGER NOT NULL);

  CREATE TABLE authorization_codes (
    id TEXT PRIMARY KEY, selector TEXT NOT NULL UNIQUE, secret_hash BLOB NOT NULL,
    client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id), redirect_uri TEXT NOT NULL, scope TEXT NOT NULL,
    code_challenge TEXT, expires_at INTEGER NOT NULL, used_at INTEGER, created_at INTEGER NOT NULL);

  CREATE TABLE oauth_tokens (
    id TEXT PRIMARY KEY, selector TEXT NOT NULL UNIQUE, secret_hash BLOB NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('access', 'refresh')),
    client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
    user_id TEXT REFERENCES users(id), scope TEXT NOT NULL,
    family_id TEXT NOT NULL, code_id TEXT,
    expires_at INTEGER NOT NULL, used_at INTEGER, revoked_at INTEGER, created_at INTEGER NOT NULL);
  CREATE INDEX oauth_tokens_by_family ON oauth_tokens (family_id);

  CREATE TABLE vouchers (
    id TEXT PRIMARY KEY, code_hash BLOB NOT NULL UNIQUE, amount INTEGER NOT NULL,
    currency TEXT NOT NULL, max_claims INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL);

  CREATE TABLE voucher_claims (
    id TEXT PRIMARY KEY, voucher_id TEXT NOT NULL REFERENCES vouchers(id),
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    amount INTEGER NOT NULL, currency TEXT NOT NULL, created_at INTEGER NOT NULL,
    UNIQUE (voucher_id, user_id));
  `,
  // 2: RFC 7591 client_name, shown on the consent pages.
  `ALTER TABLE oauth_clients ADD COLUMN name TEXT;`,
];
