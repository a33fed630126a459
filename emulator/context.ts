// What every route plugin shares: the one store, the clock, the auth module, and the
// server's settings. Passed to each plugin as its `ctx` option.
import type { Auth } from "./auth.js";
import type { Clock } from "./clock.js";
import type { Store } from "./store.js";

export interface EmulatorConfig {
  /** Known once the server listens (port 0 picks one); read at request time. */
  baseUrl: string;
  autoConsent: boolean;
  testClock: boolean;
  /** Device-flow polling interval, seconds (may be fractional for tests). */
  deviceIntervalSeconds: number;
  /** The seeded user, whom --auto-consent approves for when a request names nobody. */
  seedUserId: string | null;
  /** HMAC key for the consent pages' CSRF tokens; new each start. */
  csrfKey: Buffer;
  /** Wall-time budget of one GraphQL execution, ms. */
  graphqlTimeBudgetMs: number;
}

export interface EmulatorContext {
  store: Store;
  clock: Clock;
  auth: Auth;
  config: EmulatorConfig;
}

export interface PluginOptions {
  ctx: EmulatorContext;
}
