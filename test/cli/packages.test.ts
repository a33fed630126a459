// `scriptbox run` on scripts that import npm packages: bundled from the node_modules
// visible to the script's folder; a missing package or a Node built-in exits 1 with an
// ImportError that names the package and what to do.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const CLI = fileURLToPath(new URL("../../dist/src/cli.js", import.meta.url));
const SCRIPTS = fileURLToPath(new URL("../host/package-scripts/", import.meta.url));

function cli(args: string[]) {
  const child = spawnSync(process.execPath, [CLI, ...args], { cwd: SCRIPTS, encoding: "utf8", timeout: 60_000 });
  return { code: child.status, stdout: child.stdout, stderr: child.stderr };
}

describe("scriptbox run with packages", () => {
  it("runs a zod script from its folder's node_modules", () => {
    const out = cli(["run", "zod-user.ts", "--input", `{"name":"ann","age":3}`, "--json"]);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ ok: true, value: { ok: true, user: { name: "ann", age: 3 } } });
  });

  it("a missing package exits 1 with the install command, not a syntax error", () => {
    const out = cli(["run", "missing-package.ts"]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("scriptbox: the script failed (script)");
    expect(out.stderr).toContain('ImportError: missing-package.ts:1:21: Cannot import "left-pad-not-installed"');
    expect(out.stderr).toContain("npm install left-pad-not-installed");
    expect(out.stderr).not.toContain("SyntaxError");
  });

  it("a Node built-in exits 1 and says what to use instead", () => {
    const out = cli(["run", "node-builtin.ts"]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('Cannot import "node:fs" (imported by the script): Node built-in modules do not exist in the sandbox');
  });
});
