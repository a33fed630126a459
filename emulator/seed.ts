// --seed: realistic data for scripts and tests. A team (Acme Robotics) with an owner
// (admin, holding a seat), a few members (one nameless bot), a pending invitation, a
// subscription with 5 seats of which 2 are taken, a workspace, an instance registration
// key, a voucher, and a PAT and dashboard session for the owner; and a second team
// (Globex, no subscription) whose resources the first team's PAT must not reach.
//
// The records are created once per database; seeding a database again (a restart with
// --db and --seed) reuses them and issues fresh secrets (PAT, sessions, key, voucher
// code), since the old ones are only stored as hashes and cannot be printed again. The
// previous seed's PAT, sessions and key are deleted and its voucher gets the new code
// (claims kept), so restarts never pile up credentials; the old secrets stop working.
import type { Clock } from "./clock.js";
import { issueSecret, newId, newVoucherCode, normalizeVoucherCode, sha256 } from "./secrets.js";
import { INVITATION_TTL_SECONDS } from "./routes/team.js";
import { PAT_DEFAULT_TTL_SECONDS } from "./routes/dashboard.js";
import type { Store } from "./store.js";
import type { EmulatorSeed, Role, SeededUser } from "./seed-types.js";

export type { EmulatorSeed, SeededUser } from "./seed-types.js";

export interface SeedResult {
  seed: Omit<EmulatorSeed, "CLOUD_BASE_URL">;
  users: SeededUser[];
  /** The team owner: --auto-consent approves for them. */
  ownerId: string;
  /** The second team, for "other team's resources" checks. */
  otherTeamId: string;
  otherWorkspaceId: string;
}

/** What the last seeding issued, to be replaced by the next one. */
interface SeedCredentials {
  sessions: string[];
  pat: string;
  instanceKey: string;
  voucher: string;
}

interface SeedIds {
  credentials?: SeedCredentials;
  teamId: string;
  workspaceId: string;
  otherTeamId: string;
  otherWorkspaceId: string;
  users: { id: string; teamId: string; role: Role; useSeat: boolean }[];
}

const DAY = 24 * 3600;
const SESSION_TTL_SECONDS = 30 * DAY;

const PEOPLE: { name: string | null; email: string; team: "acme" | "globex"; role: Role; useSeat: boolean }[] = [
  { name: "Ada Lovelace", email: "ada@acme.example", team: "acme", role: "admin", useSeat: true },
  { name: "Grace Hopper", email: "grace@acme.example", team: "acme", role: "member", useSeat: true },
  { name: "Alan Turing", email: "alan@acme.example", team: "acme", role: "member", useSeat: false },
  { name: "Katherine Johnson", email: "katherine@acme.example", team: "acme", role: "member", useSeat: false },
  { name: null, email: "ci-bot@acme.example", team: "acme", role: "member", useSeat: false },
  { name: "Hank Scorpio", email: "hank@globex.example", team: "globex", role: "admin", useSeat: false },
];

function createRecords(store: Store, now: number): SeedIds {
  const team = (name: string, email: string) => {
    const id = newId("team");
    store.insertTeam({ id, name, email, created_at: now - 90 * DAY, updated_at: now - 90 * DAY });
    return id;
  };
  const workspace = (teamId: string, name: string) => {
    const id = newId("ws");
    store.insertWorkspace({ id, team_id: teamId, name, created_at: now - 90 * DAY, updated_at: now - 90 * DAY });
    return id;
  };
  const teamId = team("Acme Robotics", "billing@acme.example");
  const otherTeamId = team("Globex", "it@globex.example");
  const users = PEOPLE.map((person, index) => {
    const id = newId("usr");
    const joined = now - (80 - index * 10) * DAY;
    store.insertUser({ id, email: person.email, name: person.name, created_at: joined, updated_at: joined });
    const memberTeam = person.team === "acme" ? teamId : otherTeamId;
    store.insertMember({ team_id: memberTeam, user_id: id, role: person.role, use_seat: person.useSeat ? 1 : 0, created_at: joined, updated_at: joined });
    return { id, teamId: memberTeam, role: person.role, useSeat: person.useSeat };
  });
  store.insertSubscription({
    id: newId("sub"), team_id: teamId, plan_id: "plan_team", plan_name: "Team", seats: 5,
    starts_at: now - 30 * DAY, ends_at: now + 335 * DAY, created_at: now - 30 * DAY, updated_at: now - 30 * DAY,
  });
  store.insertInvitation({
    id: newId("inv"), team_id: teamId, email: "margaret@acme.example", role: "member", use_seat: 0,
    expires_at: now - 2 * DAY + INVITATION_TTL_SECONDS, created_at: now - 2 * DAY, updated_at: now - 2 * DAY,
  });
  return {
    teamId, otherTeamId, users,
    workspaceId: workspace(teamId, "Acme Production"),
    otherWorkspaceId: workspace(otherTeamId, "Globex Main"),
  };
}

export function seed(store: Store, clock: Clock): SeedResult {
  return store.transaction(() => {
    const now = clock.now();
    const saved = store.getMeta("seed");
    const ids: SeedIds = saved ? (JSON.parse(saved) as SeedIds) : createRecords(store, now);
    const owner = ids.users[0]!;
    const previous = ids.credentials;
    if (previous) store.deleteSeedCredentials({ sessions: previous.sessions, pat: previous.pat, instanceKey: previous.instanceKey });
    const issued: SeedCredentials = { sessions: [], pat: newId("pat"), instanceKey: newId("irk"), voucher: previous?.voucher ?? newId("vch") };

    const users: SeededUser[] = ids.users.map((u) => {
      const session = issueSecret("session");
      const sessionId = newId("sess");
      issued.sessions.push(sessionId);
      store.insertSession({ id: sessionId, selector: session.selector, secret_hash: session.hash, user_id: u.id, expires_at: now + SESSION_TTL_SECONDS, created_at: now });
      const row = store.user(u.id)!;
      return { id: u.id, email: row.email, name: row.name, teamId: u.teamId, role: u.role, useSeat: u.useSeat, session: session.value };
    });

    const pat = issueSecret("pat");
    store.insertPat({
      id: issued.pat, selector: pat.selector, secret_hash: pat.hash, user_id: owner.id, team_id: ids.teamId,
      name: "seed", expires_at: now + PAT_DEFAULT_TTL_SECONDS, revoked_at: null, created_at: now,
    });

    // The instance "acme-ci" is created by the first registration with a key naming it.
    const key = issueSecret("instanceRegistrationKey");
    store.insertInstanceKey({
      id: issued.instanceKey, selector: key.selector, secret_hash: key.hash, workspace_id: ids.workspaceId,
      instance_name: "acme-ci", instance_id: null, created_at: now,
    });

    const voucher = newVoucherCode();
    const voucherHash = sha256(normalizeVoucherCode(voucher));
    if (!store.renewVoucher(issued.voucher, voucherHash, now + 365 * DAY)) {
      store.insertVoucher({
        id: issued.voucher, code_hash: voucherHash, amount: 5000, currency: "usd",
        max_claims: 100, expires_at: now + 365 * DAY, created_at: now,
      });
    }

    store.setMeta("seed", JSON.stringify({ ...ids, credentials: issued }));
    return {
      seed: {
        CLOUD_PAT: pat.value,
        CLOUD_SESSION: users[0]!.session,
        CLOUD_TEAM_ID: ids.teamId,
        CLOUD_WORKSPACE_ID: ids.workspaceId,
        CLOUD_INSTANCE_REGISTRATION_KEY: key.value,
        CLOUD_VOUCHER_CODE: voucher,
      },
      users,
      ownerId: owner.id,
      otherTeamId: ids.otherTeamId,
      otherWorkspaceId: ids.otherWorkspaceId,
    };
  });
}
