// The team at a glance: the team, its subscription, the members with their roles and
// seats, and the pending invitations, as tables in the logs and as one JSON result.
//
//   scriptbox run examples/team-report.ts --cloud-url "$CLOUD_BASE_URL" \
//     --secret CLOUD_PAT=CLOUD_PAT@"$CLOUD_BASE_URL" --cloud-token-secret CLOUD_PAT
//
// (`scriptbox emulator --seed > .env` prints CLOUD_BASE_URL and CLOUD_PAT for a local try.)
import { cloud } from "cloud";

const day = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);

export default async function teamReport() {
  const [team, subscription, users, invitations] = await Promise.all([
    cloud.team.get(),
    cloud.team.subscription(),
    cloud.team.users.list(),
    cloud.team.invitations.list(),
  ]);

  console.log(`${team.name} <${team.email}>`);
  if (subscription) {
    const free = subscription.seats - subscription.seatsUsed;
    console.log(`Plan ${subscription.plan.name} (${subscription.status} until ${day(subscription.endsAt)}): ${subscription.seatsUsed} of ${subscription.seats} seats used, ${free} free`);
  } else {
    console.log("No subscription: members cannot hold seats");
  }

  const members = users.map((user) => ({ name: user.name, email: user.email, role: user.role, seat: user.useSeat, joined: day(user.createdAt) }));
  console.log(`\nMembers (${members.length})`);
  console.table(members.map((m) => ({ ...m, name: m.name ?? "(no name)", seat: m.seat ? "yes" : "-" })));

  const pending = invitations.map((invitation) => ({ email: invitation.email, role: invitation.role, seat: invitation.useSeat, expires: day(invitation.expiresAt) }));
  console.log(`\nPending invitations (${pending.length})`);
  if (pending.length > 0) console.table(pending.map((p) => ({ ...p, seat: p.seat ? "reserved" : "-" })));

  return {
    team: { id: team.id, name: team.name, email: team.email },
    subscription: subscription && {
      plan: subscription.plan.name,
      status: subscription.status,
      seats: subscription.seats,
      seatsUsed: subscription.seatsUsed,
      endsAt: day(subscription.endsAt),
    },
    members,
    pendingInvitations: pending,
  };
}
