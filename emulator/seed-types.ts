// The seed's public types, in a module of their own: the library's types (`import type …
// from "scriptbox"`) reach them, and must not reach the store's, which import better-sqlite3
// (an optional peer: an app without it, or compiled without esModuleInterop, failed to
// type-check scriptbox's own declarations).

/** A member's role in a team. */
export type Role = "admin" | "member";

/** The KEY=value lines `--seed` prints, and `startEmulator` returns. */
export interface EmulatorSeed {
  CLOUD_BASE_URL: string;
  CLOUD_PAT: string;
  CLOUD_SESSION: string;
  CLOUD_TEAM_ID: string;
  CLOUD_WORKSPACE_ID: string;
  CLOUD_INSTANCE_REGISTRATION_KEY: string;
  CLOUD_VOUCHER_CODE: string;
}

/** A seeded person, with a dashboard session (to create PATs through GraphQL in tests). */
export interface SeededUser {
  id: string;
  email: string;
  name: string | null;
  teamId: string;
  role: Role;
  useSeat: boolean;
  session: string;
}
