// Worker thread entry: adopts the precompiled engine module(s) from the embedder's thread
// and serves sandbox requests (host/worker/worker-host.ts).
import { workerData } from "node:worker_threads";
import { adoptCompiledEngineModule, type EngineVariantName } from "../engine/wasm-binary.js";
import type { WorkerInit, WorkerRequest } from "../protocol.js";
import { WorkerHost } from "./worker-host.js";
import { HostCallChannel } from "./host-calls/channel.js";

const init = workerData as WorkerInit;
for (const [variant, module] of Object.entries(init.wasmModules)) adoptCompiledEngineModule(variant as EngineVariantName, module);

const port = init.port;
const host = new WorkerHost(init, port);
HostCallChannel.install(port);
port.on("message", (message: { id: number; request: WorkerRequest }) => host.handle(message.id, message.request));
host.start();
