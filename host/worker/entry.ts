// Worker thread entry: adopts the precompiled engine module(s) from the embedder's thread
// (the port's first message: see WorkerModules) and serves sandbox requests
// (host/worker/worker-host.ts).
import { workerData } from "node:worker_threads";
import { adoptCompiledEngineModule, type EngineVariantName } from "../engine/wasm-binary.js";
import type { WorkerInit, WorkerModules, WorkerRequest } from "../protocol.js";
import { WorkerHost } from "./worker-host.js";
import { HostCallChannel } from "./host-calls/channel.js";

const init = workerData as WorkerInit;
const port = init.port;
let host: WorkerHost | null = null;
port.on("message", (message: { id: number; request: WorkerRequest } | WorkerModules) => {
  if (host) return host.handle((message as { id: number }).id, (message as { request: WorkerRequest }).request);
  for (const [variant, module] of Object.entries((message as WorkerModules).wasmModules)) adoptCompiledEngineModule(variant as EngineVariantName, module);
  host = new WorkerHost(init, port);
  HostCallChannel.install(port);
  host.start();
});
