// Rotate a personal access token: create a new PAT (dashboard GraphQL, with the session
// cookie), prove it works with GET /api/v1/user, and only then revoke the old one.
//
// Which PAT is old: input.oldPatId when given; otherwise every active PAT of the session's
// user with the same name as the new one (the emulator's GraphQL has a `pats` query; the
// seeded PAT is named "seed").
//
//   scriptbox run examples/rotate-pat.ts --input '{"name":"seed"}' --cloud-url "$CLOUD_BASE_URL" \
//     --secret CLOUD_PAT=CLOUD_PAT@"$CLOUD_BASE_URL" --cloud-token-secret CLOUD_PAT \
//     --secret CLOUD_SESSION=CLOUD_SESSION@"$CLOUD_BASE_URL" --cloud-session-secret CLOUD_SESSION
//
// The new token is the result (result.value.pat.token): the host, not the script, keeps it.
import { cloud, CloudClient } from "cloud";

interface Input {
  name?: string;
  oldPatId?: string;
  /** Lifetime of the new PAT (default 90). */
  days?: number;
}

export default async function rotatePat(input: Input = {}) {
  const name = input.name ?? "automation";
  const days = input.days ?? 90;
  const team = await cloud.team.get();
  const old = input.oldPatId ? [input.oldPatId] : (await cloud.pats.list()).filter((p) => p.name === name && p.revokedAt === null).map((p) => p.id);

  const pat = await cloud.pats.create({ name, teamId: team.id, expiresAt: new Date(Date.now() + days * 86_400_000) });
  console.log(`created ${pat.id} "${name}" for ${team.name}, expires ${pat.expiresAt}`);

  // Prove the new token before giving up the old one.
  const me = await new CloudClient({ baseUrl: cloud.baseUrl, token: pat.token }).user.get();
  console.log(`the new PAT works: /api/v1/user answers ${me.email}`);

  for (const id of old) {
    await cloud.pats.revoke(id);
    console.log(`revoked ${id}`);
  }
  return { pat: { id: pat.id, name: pat.name, expiresAt: pat.expiresAt, token: pat.token }, user: me.email, revoked: old };
}
