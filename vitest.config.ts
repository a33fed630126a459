import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Tests that exercise the sandbox import "scriptbox" and get the built package in dist/
// (npm test builds first): the sandbox runs its guests in worker threads that load
// dist/host/worker.js, so testing the built artifact is testing the real thing.
export default defineConfig({
  resolve: {
    alias: {
      scriptbox: fileURLToPath(new URL("./dist/src/index.js", import.meta.url)),
    },
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
