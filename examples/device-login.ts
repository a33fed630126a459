// A device-flow login (RFC 8628): show a code to a person, wait while they approve it in
// their browser, and sign in with the token. Registers its own OAuth client when given
// the instance registration key instead of a client.
//
//   scriptbox run examples/device-login.ts --cloud-url "$CLOUD_BASE_URL" --timeout 600000 \
//     --env CLOUD_INSTANCE_REGISTRATION_KEY="$CLOUD_INSTANCE_REGISTRATION_KEY"
//
// input: { clientId?, clientSecret?, registrationKey?, scope? (default "user:read") }
import { cloud, CloudClient } from "cloud";
import { env } from "runtime";

interface Input {
  clientId?: string;
  clientSecret?: string;
  registrationKey?: string;
  scope?: string;
}

export default async function deviceLogin(input: Input = {}) {
  const scope = input.scope ?? "user:read";
  let { clientId, clientSecret } = input;
  if (!clientId) {
    const key = input.registrationKey ?? env.CLOUD_INSTANCE_REGISTRATION_KEY;
    if (!key) throw new TypeError("give { clientId, clientSecret } or { registrationKey } as input, or the env value CLOUD_INSTANCE_REGISTRATION_KEY");
    const client = await cloud.oauth.register({ instanceRegistrationKey: key, grantTypes: ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"], scope });
    ({ clientId, clientSecret } = client);
    console.log(`registered the OAuth client ${clientId}`);
  }

  const device = await cloud.oauth.device.authorize({ clientId, clientSecret, scope });
  console.log(`To sign in, open ${device.verificationUri} and enter the code ${device.userCode}`);
  console.log(`(or open ${device.verificationUriComplete}); the code expires in ${Math.round(device.expiresIn / 60)} minutes`);

  // Polls every device.interval seconds until the person approves or denies, or the code expires.
  const tokens = await cloud.oauth.device.poll({ ...device, clientId, clientSecret });
  const me = await new CloudClient({ baseUrl: cloud.baseUrl, token: tokens.accessToken }).user.get();
  console.log(`Signed in as ${me.name ?? me.email} (scope "${tokens.scope}")`);
  return { user: { id: me.id, name: me.name, email: me.email }, scope: tokens.scope, expiresIn: tokens.expiresIn, refreshable: tokens.refreshToken !== undefined };
}
