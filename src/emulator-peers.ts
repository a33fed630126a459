// The emulator's server stack (fastify, @fastify/formbody, graphql and better-sqlite3, a
// native module) is an optional peer dependency: an app that only embeds sandboxes does
// not install or compile it. `scriptbox emulator`, `scriptbox demo` and startEmulator()
// load it on first use and, when it is missing, say in one line how to get it.
import { UsageError } from "./usage.js";

export const EMULATOR_PACKAGES = ["better-sqlite3", "fastify", "@fastify/formbody", "graphql"] as const;

export const EMULATOR_INSTALL_HINT = `npm install --save-dev ${EMULATOR_PACKAGES.join(" ")}`;

/** The emulator could not load its server packages. A UsageError: the CLI prints its one line and exits 2. */
export class EmulatorUnavailableError extends UsageError {
  constructor(missing: string, cause: unknown) {
    super(`the cloud API emulator needs ${missing}, which is not installed (an optional peer dependency of scriptbox); install the emulator's packages with: ${EMULATOR_INSTALL_HINT}`);
    this.name = "EmulatorUnavailableError";
    this.cause = cause;
  }
}

/** Which emulator package an error says could not be loaded, if any. */
function missingPackage(error: unknown): string | null {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  const text = String(message ?? "");
  const loadFailure = code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND" || code === "ERR_DLOPEN_FAILED" || /bindings file|better_sqlite3\.node/.test(text);
  if (!loadFailure) return null;
  return EMULATOR_PACKAGES.find((name) => text.includes(`'${name}'`) || text.includes(`"${name}"`) || text.includes(`/${name}/`) || text.includes(name.replace("-", "_"))) ?? null;
}

/** Runs `use` (which imports or starts the emulator), turning a missing server package into EmulatorUnavailableError. */
export async function withEmulatorPackages<T>(use: () => Promise<T>): Promise<T> {
  try {
    return await use();
  } catch (error) {
    const missing = missingPackage(error);
    if (missing !== null) throw new EmulatorUnavailableError(missing, error);
    throw error;
  }
}
