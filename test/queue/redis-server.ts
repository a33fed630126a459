// A real redis-server for the queue tests: its own temp dir, a free loopback port, stopped
// at the end. Without redis-server the tests are skipped with one line saying how to
// install it, except under CI=true, where a missing Redis is a failure.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const INSTALL_HINT = "apt-get install -y redis-server";

function findRedisServer(): string | null {
  const found = spawnSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" });
  return found.status === 0 ? found.stdout.trim() : null;
}

export const redisServerPath = findRedisServer();

/** For describe.skipIf: true when the queue tests cannot run here (never under CI=true). */
export function redisMissing(): boolean {
  if (redisServerPath !== null) return false;
  if (process.env.CI === "true") throw new Error(`redis-server is not installed and CI=true: install it (${INSTALL_HINT})`);
  process.stderr.write(`SKIPPED: the queue tests need redis-server (install it with: ${INSTALL_HINT})\n`);
  return true;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

export interface RedisServer {
  url: string;
  port: number;
  /** Stops the server (SHUTDOWN; with AOF its data survives) and starts it again on the same port and files. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
  /** redis-cli-like command through a fresh connection: for scans and INFO. */
  cli(...args: string[]): string;
}

async function waitForReady(port: number, process_: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (process_.exitCode !== null) throw new Error(`redis-server exited with ${process_.exitCode}`);
    const ping = spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" });
    if (ping.stdout.trim() === "PONG") return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("redis-server did not start within 10 s");
}

/** Starts redis-server. `persistent`: AOF with fsync on every write (a restart loses nothing). */
export async function startRedis({ persistent = false } = {}): Promise<RedisServer> {
  if (redisServerPath === null) throw new Error(`redis-server is not installed (${INSTALL_HINT})`);
  const dir = mkdtempSync(join(tmpdir(), "scriptbox-redis-"));
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--daemonize", "no", "--loglevel", "warning"];
  if (persistent) args.push("--appendonly", "yes", "--appendfsync", "always");
  let child: ChildProcess;
  const launch = async () => {
    child = spawn(redisServerPath!, args, { stdio: "ignore" });
    await waitForReady(port, child);
  };
  const exited = () => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())));
  const shutdown = async () => {
    spawnSync("redis-cli", ["-p", String(port), "shutdown", persistent ? "save" : "nosave"]);
    child.kill("SIGTERM");
    await exited();
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart(downMs = 500) {
      await shutdown();
      await new Promise((r) => setTimeout(r, downMs));
      await launch();
    },
    async stop() {
      await shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
    cli(...cliArgs: string[]) {
      const out = spawnSync("redis-cli", ["-p", String(port), ...cliArgs], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
      if (out.status !== 0) throw new Error(`redis-cli ${cliArgs.join(" ")}: ${out.stderr}`);
      return out.stdout;
    },
  };
}
