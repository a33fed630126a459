// Worker thread entry: adopts the precompiled engine module(s) from the embedder's thread
// (the port's first message: see WorkerModules) and serves sandbox requests
// (host/worker/worker-host.ts).
import { workerData } from "node:worker_threads";
import { constants, setPriority } from "node:os";
import { adoptCompiledEngineModule, type EngineVariantName } from "../engine/wasm-binary.js";
import type { RequestMessage, WorkerInit, WorkerModules } from "../protocol.js";
import { WorkerHost } from "./worker-host.js";
import { HostCallChannel } from "./host-calls/channel.js";

const init = workerData as WorkerInit;
if (init.lowPriority) lowerThreadPriority();
const port = init.port;
let host: WorkerHost | null = null;
port.on("message", (message: RequestMessage | WorkerModules) => {
  if (host) return host.receive(message as RequestMessage);
  for (const [variant, module] of Object.entries((message as WorkerModules).wasmModules)) adoptCompiledEngineModule(variant as EngineVariantName, module);
  host = new WorkerHost(init, port);
  HostCallChannel.install(port);
  host.start();
});

/**
 * A demoted worker (WorkerPool.acquireDemoted) takes only the CPU no other thread wants.
 * setpriority(2) on process 0 changes the calling thread alone on Linux (so the embedder's
 * and the other workers' threads keep theirs); on other systems it may lower the whole
 * process, so it is done on Linux only. Best effort: a refusal leaves the priority as it is.
 */
function lowerThreadPriority(): void {
  if (process.platform !== "linux") return;
  try {
    setPriority(constants.priority.PRIORITY_LOW);
  } catch {
    // Not allowed here: the worker runs at normal priority, still apart from ordinary runs.
  }
}
