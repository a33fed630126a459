// Runs a script body inside a real sandbox and returns the value it returns.
import { runScript } from "scriptbox";
import { expect } from "vitest";

export const LOCATION = "https://app.example.test/base/page.html";

export async function guest<T = unknown>(body: string, options: { location?: string | null; net?: { allow: string[] } } = {}): Promise<T> {
  const location = options.location === undefined ? LOCATION : options.location;
  const result = await runScript(`export default async () => {\n${body}\n};\n`, {
    filename: "guest-test.js",
    ...(location === null ? {} : { location }),
    ...(options.net ? { net: options.net } : {}),
  });
  if (!result.ok) expect.fail(`sandbox run failed: ${JSON.stringify(result.error)}`);
  return result.value as T;
}

/** Guest helper source: `threw(fn)` gives the error's name (and message), or "no error". */
export const THREW = `const threw = (fn) => { try { fn(); return "no error"; } catch (e) { return e && e.name; } };
const rejected = async (p) => { try { await p; return "no error"; } catch (e) { return e && e.name; } };`;
