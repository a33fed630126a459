// Where Redis is: a redis:// or rediss:// URL, or host/port options. Kept to our own small
// type so that scriptbox's public types do not depend on bullmq's or ioredis's.
import { loadIORedis } from "./bullmq-loader.js";

export type RedisConnection =
  | string
  | { host?: string; port?: number; username?: string; password?: string; db?: number; tls?: boolean };

export interface RedisOptions {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db?: number;
  tls?: Record<string, never>;
}

/** A connection URL as messages may show it: without its password. */
function withoutPassword(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@]*?:)[^/]*@/i, "$1***@");
}

export function redisOptions(connection: RedisConnection | undefined): RedisOptions {
  if (connection === undefined) return { host: "127.0.0.1", port: 6379 };
  if (typeof connection === "string") {
    let url: URL;
    try {
      url = new URL(connection);
    } catch {
      throw new TypeError(`connection must be a redis:// URL, got ${JSON.stringify(withoutPassword(connection))}`);
    }
    if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new TypeError(`connection must be a redis:// or rediss:// URL, got ${url.protocol}`);
    const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : undefined;
    if (db !== undefined && !Number.isInteger(db)) throw new TypeError(`the database in ${withoutPassword(connection)} must be a number`);
    return {
      host: url.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1",
      port: url.port ? Number(url.port) : 6379,
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      ...(db !== undefined ? { db } : {}),
      ...(url.protocol === "rediss:" ? { tls: {} } : {}),
    };
  }
  if (typeof connection !== "object" || connection === null) throw new TypeError("connection must be a redis:// URL or { host, port }");
  const { host = "127.0.0.1", port = 6379, username, password, db, tls } = connection;
  if (typeof host !== "string" || !Number.isInteger(port)) throw new TypeError("connection.host must be a string and connection.port an integer");
  return { host, port, ...(username ? { username } : {}), ...(password ? { password } : {}), ...(db !== undefined ? { db } : {}), ...(tls ? { tls: {} } : {}) };
}

export function describeConnection(options: RedisOptions): string {
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return `${options.tls ? "rediss" : "redis"}://${host}:${options.port}${options.db ? `/${options.db}` : ""}`;
}

export class RedisUnreachableError extends Error {
  constructor(where: string, reason: string) {
    super(`cannot reach Redis at ${where}: ${reason}`);
    this.name = "RedisUnreachableError";
  }
}

/**
 * One attempt to connect and PING, within `timeoutMs`. bullmq's own connections retry
 * forever (right for a worker riding out a Redis restart); a command line wants to know now.
 */
export async function checkRedis(options: RedisOptions, timeoutMs = 3_000): Promise<void> {
  const Redis = await loadIORedis();
  const client = new Redis({ ...options, lazyConnect: true, connectTimeout: timeoutMs, disconnectTimeout: 0, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  // The socket's own error (ECONNREFUSED, ENOTFOUND, …) says more than connect()'s rejection.
  let socketError: Error | null = null;
  client.on("error", (error: Error) => (socketError ??= error));
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    const err = (socketError ?? error) as NodeJS.ErrnoException;
    throw new RedisUnreachableError(describeConnection(options), err.code && !err.message.includes(err.code) ? `${err.code} ${err.message}` : err.message);
  } finally {
    client.disconnect();
  }
}
