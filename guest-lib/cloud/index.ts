// `import { cloud, CloudClient, CloudError } from "cloud"`: the cloud API client (docs/cloud.md).
// `cloud` is configured from the sandbox's `cloud` option: its token and session are
// secret placeholders, which the host swaps for the values on the way to the cloud origin.
/// <reference path="../../types/guest.d.ts" />
import { CloudClient, FROM_CONFIG } from "./client";

export { CloudClient };
export { CloudError } from "./errors";
export const cloud = new CloudClient(FROM_CONFIG as never);
