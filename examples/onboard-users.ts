// Invite a list of people, idempotently: members and people with a pending invitation are
// skipped (so running it twice invites nobody twice), and new invitations take a seat of
// the subscription while free seats last.
//
//   scriptbox run examples/onboard-users.ts --input '{"emails":["ann@acme.example","bob@acme.example"]}' \
//     --cloud-url "$CLOUD_BASE_URL" --secret CLOUD_PAT=CLOUD_PAT@"$CLOUD_BASE_URL" --cloud-token-secret CLOUD_PAT
//
// input: { emails: string[], role?: "member" | "admin" (default "member"), seats?: boolean (default true) }
import { cloud, CloudError, type Role } from "cloud";

interface Input {
  emails: string[];
  role?: Role;
  seats?: boolean;
}

export default async function onboardUsers(input: Input) {
  if (!input || !Array.isArray(input.emails) || !input.emails.every((e) => typeof e === "string")) {
    throw new TypeError('input must be { "emails": ["ann@example.com", …] }');
  }
  const role = input.role ?? "member";
  const [users, invitations, subscription] = await Promise.all([cloud.team.users.list(), cloud.team.invitations.list(), cloud.team.subscription()]);
  const members = new Set(users.map((u) => u.email.toLowerCase()));
  const pending = new Set(invitations.map((i) => i.email.toLowerCase()));
  let freeSeats = input.seats !== false && subscription?.status === "active" ? subscription.seats - subscription.seatsUsed : 0;

  const invited: { email: string; id: string; seat: boolean }[] = [];
  const skipped: { email: string; reason: string }[] = [];
  const failed: { email: string; reason: string }[] = [];
  for (const raw of input.emails) {
    const email = raw.trim().toLowerCase();
    if (members.has(email)) skipped.push({ email, reason: "already a member" });
    else if (pending.has(email)) skipped.push({ email, reason: "invitation pending" });
    if (members.has(email) || pending.has(email)) continue;

    let useSeat = freeSeats > 0;
    for (;;) {
      try {
        const invitation = await cloud.team.invitations.create({ email, role, useSeat });
        invited.push({ email, id: invitation.id, seat: useSeat });
        pending.add(email);
        if (useSeat) freeSeats--;
        console.log(`invited ${email} as ${role}, ${useSeat ? "with a seat" : "without a seat"}`);
      } catch (error) {
        if (!(error instanceof CloudError)) throw error;
        if (error.code === "seats_exhausted" && useSeat) {
          // Someone took the last seats meanwhile: invite without one.
          freeSeats = 0;
          useSeat = false;
          continue;
        }
        if (error.code === "already_member" || error.code === "invitation_pending") skipped.push({ email, reason: error.code.replace("_", " ") });
        else if (error.status === 422) failed.push({ email, reason: error.message });
        else throw error;
      }
      break;
    }
  }
  for (const { email, reason } of skipped) console.log(`skipped ${email}: ${reason}`);
  for (const { email, reason } of failed) console.warn(`could not invite ${email}: ${reason}`);
  return { invited, skipped, failed, freeSeats };
}
