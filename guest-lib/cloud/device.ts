// RFC 8628 §3.4-3.5: poll the token endpoint every `interval` seconds until the person
// decides. authorization_pending: keep polling; slow_down: the interval grows by 5 s for
// this and later polls; anything else ends it. Polling stops (CloudError "expired_token")
// when the device code would expire before the next poll, and on the signal.
import { CloudError } from "./errors";
import { type Signal, sleep } from "./wire";

export async function pollDevice<T>(poll: (signal?: Signal) => Promise<T>, interval: number, expiresIn: number | undefined, signal?: Signal): Promise<T> {
  const deadline = expiresIn === undefined ? Infinity : Date.now() + expiresIn * 1000;
  for (;;) {
    if (Date.now() + interval * 1000 > deadline) {
      throw new CloudError(0, "expired_token", `the device code expires (after ${expiresIn} s) before the next poll; start again with oauth.device.authorize`, "POST", "/oauth2/token");
    }
    await sleep(interval * 1000, signal);
    try {
      return await poll(signal);
    } catch (error) {
      if (!(error instanceof CloudError) || (error.code !== "authorization_pending" && error.code !== "slow_down")) throw error;
      if (error.code === "slow_down") interval += 5;
    }
  }
}
