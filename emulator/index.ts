// The cloud API emulator, programmatically: startEmulator() opens the store, serves the
// API on host:port (port 0 picks a free one), optionally seeds it, and returns the base
// URL, the seeded credentials and close().
import { Auth } from "./auth.js";
import { Clock } from "./clock.js";
import type { EmulatorContext } from "./context.js";
import { randomKey } from "./secrets.js";
import { seed as seedStore } from "./seed.js";
import type { EmulatorSeed, SeededUser } from "./seed-types.js";
import { GRAPHQL_LIMITS } from "./graphqlLimits.js";
import { buildServer } from "./server.js";
import { Store } from "./store.js";

export type { EmulatorSeed, SeededUser } from "./seed-types.js";
export { TOKEN_PREFIXES } from "./secrets.js";

export interface EmulatorOptions {
  /** Default 0: an ephemeral port (the CLI's default is 8787). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** SQLite file to persist to; without it a private in-memory database. */
  dbPath?: string;
  /** Create (or, on an existing file, reuse) the seed records and issue fresh credentials. */
  seed?: boolean;
  /** /oauth2/authorize approves at once for the session's / PAT's / seeded user. */
  autoConsent?: boolean;
  /** Enable POST /__emulator/clock. */
  testClock?: boolean;
  /** Device-flow polling interval in seconds (default 5; fractions allowed for tests). */
  deviceInterval?: number;
  /** Wall-time budget of one /dashboard/graphql execution in ms (default 250). */
  graphqlTimeBudgetMs?: number;
  /** close() lets requests in flight finish for at most this long, then cuts them (default 10000 ms). */
  shutdownGraceMs?: number;
}

export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

export interface RunningEmulator {
  /** e.g. http://127.0.0.1:41873 (no trailing slash); also the OAuth issuer. */
  baseUrl: string;
  port: number;
  /** The seeded credentials (what `--seed` prints), or null without seed. */
  seed: EmulatorSeed | null;
  /** Every seeded person with a dashboard session (empty without seed); [0] is the owner. */
  seedUsers: SeededUser[];
  /** Stops accepting connections, lets requests in flight finish (bounded grace), closes the database. Safe to call twice. */
  close(): Promise<void>;
}

function urlHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const host = options.host ?? "127.0.0.1";
  const deviceInterval = options.deviceInterval ?? 5;
  if (!(Number.isFinite(deviceInterval) && deviceInterval > 0)) throw new RangeError("deviceInterval must be a positive number of seconds");
  const port = options.port ?? 0;
  if (!(Number.isInteger(port) && port >= 0 && port <= 65535)) throw new RangeError("port must be an integer 0-65535");

  const store = new Store(options.dbPath);
  const clock = new Clock();
  const ctx: EmulatorContext = {
    store,
    clock,
    auth: new Auth(store, clock),
    config: {
      baseUrl: "",
      autoConsent: options.autoConsent ?? false,
      testClock: options.testClock ?? false,
      deviceIntervalSeconds: deviceInterval,
      seedUserId: null,
      csrfKey: randomKey(),
      graphqlTimeBudgetMs: options.graphqlTimeBudgetMs ?? GRAPHQL_LIMITS.timeBudgetMs,
    },
  };
  const app = buildServer(ctx);
  try {
    const seeded = options.seed ? seedStore(store, clock) : null;
    ctx.config.seedUserId = seeded?.ownerId ?? null;
    await app.listen({ port, host });
    const address = app.server.address();
    const actualPort = typeof address === "object" && address ? address.port : port;
    ctx.config.baseUrl = `http://${urlHost(host)}:${actualPort}`;

    let closed: Promise<void> | undefined;
    return {
      baseUrl: ctx.config.baseUrl,
      port: actualPort,
      seed: seeded ? { CLOUD_BASE_URL: ctx.config.baseUrl, ...seeded.seed } : null,
      seedUsers: seeded?.users ?? [],
      close() {
        closed ??= (async () => {
          // Requests in flight may finish within the grace; then every connection is cut.
          const cut = setTimeout(() => app.server.closeAllConnections(), options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS);
          try {
            await app.close();
          } finally {
            clearTimeout(cut);
            store.close();
          }
        })();
        return closed;
      },
    };
  } catch (error) {
    await app.close().catch(() => {});
    store.close();
    throw error;
  }
}
