// One keep-alive undici Agent per worker thread, shared by every sandbox in it. Origins are
// always IP literals (the transport connects to the address the policy checked), so the
// Agent never resolves a name; for https the Host header carries the name, and undici
// derives the TLS servername (SNI and certificate check) from it (lib/core/request.js:
// `servername || getServerName(this.host)`).
import { Agent, type Dispatcher } from "undici";

let shared: Agent | undefined;

export function sharedDispatcher(): Dispatcher {
  shared ??= new Agent({
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
