// Errors the library API throws (as opposed to script failures, which are results).
import type { ErrorKind, SandboxError } from "./types.js";

/** The sandbox can no longer be used: it was disposed, or its engine or worker failed. */
export class SandboxDisposedError extends Error {
  constructor(reason: string) {
    super(`the sandbox was disposed: ${reason}`);
    this.name = "SandboxDisposedError";
  }
}

/** A plugin load or call failed in the guest (exception or limit); carries the guest error. */
export class ScriptError extends Error implements SandboxError {
  readonly kind: ErrorKind;
  readonly guestName: string;
  override readonly stack: string;
  constructor(error: SandboxError) {
    super(error.message);
    this.name = "ScriptError";
    this.kind = error.kind;
    this.guestName = error.name;
    this.stack = `${error.name}: ${error.message}\n${error.stack}`;
  }
  /** The guest error as plain data (what a RunResult carries). */
  toJSON(): SandboxError {
    return { kind: this.kind, name: this.guestName, message: this.message, stack: this.stack };
  }
}
