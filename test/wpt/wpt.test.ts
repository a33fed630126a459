// Runs the vendored web-platform-tests inside real sandboxes (see README.md).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { runScript } from "scriptbox";
import { afterAll, describe, expect, test } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
const vendor = join(here, "vendor");
const shim = readFileSync(join(here, "testharness-shim.js"), "utf8");

const RESPONSE_TYPE = 'spec: ResponseType is "basic" or "error", so constructed responses are "basic", not "default"';
const NEEDS_SERVER = "needs a WPT server (and network access the sandbox does not give)";

/** Subtests we do not pass, per file, with the reason. Everything else must pass. */
const EXPECTED_FAILURES: Record<string, Record<string, string>> = {
  "FileAPI/blob/Blob-constructor.any.js": {
    "Passing a FrozenArray as the blobParts array should work (FrozenArray<MessagePort>).":
      "needs MessageChannel, which the sandbox does not provide (one realm, no workers or frames to message; docs/http.md)",
  },
  "FileAPI/file/File-constructor.any.js": {
    "Using type in File constructor: text/plain;charset=UTF-8":
      "File API §4.1 lower-cases the whole type (as Node does); this WPT revision expects the parameter's case kept",
  },
  "fetch/api/request/request-bad-port.any.js": {
    "Request on a port that is not bad should succeed through the proxy.": NEEDS_SERVER,
  },
  "fetch/api/request/request-consume.any.js": {
    "Consume blob response's body as bytes": "spec: Response has no bytes()",
  },
  "fetch/api/request/request-structure.any.js": {
    "Check mode attribute": 'spec: Request.mode is always "navigate"',
    "Check cache attribute": 'spec: Request.cache is always "no-cache"',
  },
  "fetch/api/response/json.any.js": {
    "Ensure UTF-16 results in an error": NEEDS_SERVER,
  },
  "fetch/api/response/response-static-json.any.js": Object.fromEntries(
    ['undefined', '{"status":400}', '{"statusText":"foo"}', '{"headers":{}}', '{"headers":{"content-type":"foo/bar"}}', '{"headers":{"x-foo":"bar"}}'].map(
      (init) => [`Check response returned by static json() with init ${init}`, RESPONSE_TYPE],
    ),
  ),
  "fetch/api/response/response-static-redirect.any.js": Object.fromEntries(
    ["Check default redirect response", ...[301, 302, 303, 307, 308].map((s) => `Check response returned by static method redirect(), status = ${s}`)].map(
      (name) => [name, RESPONSE_TYPE],
    ),
  ),
};

interface Result {
  name: string;
  status: string;
  message: string;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return testFiles(path);
      return name.endsWith(".any.js") ? [path] : [];
    });
}

/** The test file with its `// META: script=` dependencies in front, and its title. */
function loadTest(path: string): { code: string; title: string } {
  const source = readFileSync(path, "utf8");
  let code = "";
  for (const match of source.matchAll(/^\/\/ META: script=(.*)$/gm)) code += `${readFileSync(join(dirname(path), match[1].trim()), "utf8")}\n`;
  const title = /^\/\/ META: title=(.*)$/m.exec(source)?.[1] ?? relative(vendor, path);
  return { code: code + source, title };
}

const summary: string[] = [];

describe("web-platform-tests in the sandbox", () => {
  for (const path of testFiles(vendor)) {
    const file = relative(vendor, path);
    test(`WPT ${file}`, async () => {
      const { code, title } = loadTest(path);
      const script = `${shim}\nexport default async () => __wpt.run(${JSON.stringify(code)}, ${JSON.stringify(title)});\n`;
      const run = await runScript(script, { filename: `wpt/${file}`, location: `http://web-platform.test:8000/${file}` });
      if (!run.ok) expect.fail(`sandbox run failed: ${JSON.stringify(run.error)}`);
      const { results, harnessError } = run.value as { results: Result[]; harnessError: string | null };
      expect(harnessError).toBeNull();
      const expected = EXPECTED_FAILURES[file] ?? {};
      const passed = results.filter((r) => r.status === "PASS").length;
      summary.push(`${file}: ${passed}/${results.length} pass`);
      const unexpected = results
        .filter((r) => (r.status === "PASS") === r.name in expected)
        .map((r) => `${r.status} ${r.name}${r.message ? ` (${r.message})` : ""}`);
      expect(unexpected).toEqual([]);
      // Every expected failure names a subtest that exists.
      for (const name of Object.keys(expected)) expect(results.map((r) => r.name)).toContain(name);
    }, 60_000);
  }
});

afterAll(() => {
  console.log(`WPT pass counts:\n  ${summary.sort().join("\n  ")}`);
});
