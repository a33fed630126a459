// Shared by the test/tenancy/guest-*.test.ts files: a hostile sandbox among bystanders.
// The shared pool has at most min(4, cores) workers and places sandboxes round-robin, so
// with that many bystanders at least one shares the hostile sandbox's worker.
import { availableParallelism } from "node:os";
import { expect } from "vitest";
import { createSandbox, type Sandbox, type SandboxOptions } from "scriptbox";

export const BYSTANDERS = Math.max(2, Math.min(4, availableParallelism()) + 1);

/** Creates the hostile sandbox first, then the bystanders (so they spread over every worker). */
export async function hostileAmongBystanders(options: SandboxOptions): Promise<{ hostile: Sandbox; bystanders: Sandbox[]; dispose(): Promise<void> }> {
  const hostile = await createSandbox(options);
  const bystanders: Sandbox[] = [];
  for (let i = 0; i < BYSTANDERS; i++) bystanders.push(await createSandbox());
  return {
    hostile,
    bystanders,
    async dispose() {
      await Promise.all([hostile, ...bystanders].map((sandbox) => sandbox.dispose()));
    },
  };
}

/** Every bystander runs an ordinary script (while the hostile case is in flight) and succeeds. */
export async function bystandersAnswer(bystanders: Sandbox[]): Promise<void> {
  const results = await Promise.all(bystanders.map((sandbox, i) => sandbox.run(`export default (n) => n * 2`, { input: i })));
  results.forEach((result, i) => expect(result).toMatchObject({ ok: true, value: i * 2 }));
}
