// Spare realms load the guest modules recent runs in the worker used (host/worker/
// module-usage.ts), never the ones that read the sandbox's configuration when they load.
// (What it saves is a benchmark figure, not a test: docs/performance.md.)
import { describe, expect, it } from "vitest";
import { createSandbox } from "scriptbox";

describe("preloading guest modules into spare realms", () => {
  it("does not change what repeated runs see (a fresh realm each time, this sandbox's env)", async () => {
    const sandbox = await createSandbox({ isolate: true, env: { WHO: "first" } });
    try {
      const code = `import { env } from "runtime";
        export default async () => [await (await fetch("data:,hi")).text(), env.WHO, typeof globalThis.leftover];`;
      for (let i = 0; i < 8; i++) {
        const result = await sandbox.run(code);
        expect(result).toMatchObject({ ok: true, value: ["hi", "first", "undefined"] });
        await sandbox.run("globalThis.leftover = 1; export default () => 0"); // a different script in between
        await new Promise((resolve) => setTimeout(resolve, 50)); // idle time for the spare realm
      }
    } finally {
      await sandbox.dispose();
    }
  });

  it("never carries one sandbox's env into another through a pooled realm", async () => {
    const read = `import { env } from "runtime"; export default () => env.WHO`;
    for (const who of ["a", "b", "c", "d"]) {
      const sandbox = await createSandbox({ env: { WHO: who } });
      try {
        for (let i = 0; i < 3; i++) expect(await sandbox.run(read)).toMatchObject({ ok: true, value: who });
      } finally {
        await sandbox.dispose();
      }
    }
  });
});
