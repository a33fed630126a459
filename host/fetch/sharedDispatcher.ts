// One keep-alive undici Agent per worker thread, shared by every sandbox in it. Origins are
// always IP literals (the transport connects to the address the policy checked), so the
// Agent never resolves a name; for https the Host header carries the name, and undici
// derives the TLS servername (SNI and certificate check) from it (lib/core/request.js:
// `servername || getServerName(this.host)`).
//
// undici is loaded on the first fetch, not with the worker: it is most of the worker's
// module graph (~100 ms of a worker's start on a loaded machine), and most sandboxes never
// fetch. WorkerHost preloads it at idle time once a sandbox that may fetch arrives.
import { createRequire } from "node:module";
import type { Agent, Dispatcher } from "undici";

const require = createRequire(import.meta.url);
let shared: Agent | undefined;

/** Loads undici now (synchronously; a no-op once loaded). */
export function loadUndici(): typeof import("undici") {
  return require("undici") as typeof import("undici");
}

export function sharedDispatcher(): Dispatcher {
  shared ??= new (loadUndici().Agent)({
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 60_000,
    connect: { timeout: 10_000 },
  });
  return shared;
}

/** Closes the thread's Agent (worker shutdown); the next sharedDispatcher() makes a new one. */
export async function closeSharedDispatcher(): Promise<void> {
  const agent = shared;
  shared = undefined;
  await agent?.destroy();
}
