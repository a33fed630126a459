// Shared by the host-module tests: a run's value or failure, with a message that says what went wrong.
import type { RunResult } from "scriptbox";

export function value<T>(result: RunResult<T>): T {
  if (!result.ok) throw new Error(`run failed: ${result.error.kind} ${result.error.name}: ${result.error.message}\n${result.error.stack}`);
  return result.value;
}

export function failure(result: RunResult) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return result.error;
}
