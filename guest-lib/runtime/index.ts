// `import { env, secret } from "runtime"`: the sandbox's plain env values, and
// placeholders for secrets. A secret's value never enters the sandbox: the host swaps the
// placeholder for the value in request headers bound for the secret's allowed origins.
import bridge from "scriptbox:bridge";

export const env: Readonly<Record<string, string>> = Object.freeze(JSON.parse(bridge.env()) as Record<string, string>);

export function secret(name: string): string {
  if (typeof name !== "string") throw new TypeError(`secret(name): name must be a string, got ${typeof name}`);
  return bridge.secret(name);
}
