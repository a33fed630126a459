// The one error type the transport rejects with. `type` and `message` are exactly what
// crosses the bridge as a TransportErrorRecord (guest-lib/types/bridge.d.ts).
import type { TransportErrorRecord } from "../../guest-lib/types/bridge.js";

export type TransportErrorType = TransportErrorRecord["type"];

export class TransportError extends Error {
  readonly type: TransportErrorType;

  constructor(type: TransportErrorType, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransportError";
    this.type = type;
  }

  toRecord(): TransportErrorRecord {
    return { type: this.type, message: this.message };
  }
}

/** "limit: " errors: the message names the limit and its value. */
export function limitError(message: string): TransportError {
  return new TransportError("limit", `limit: ${message}`);
}

/** A network failure or a request the transport will not put on the wire. */
export function networkError(message: string, cause?: unknown): TransportError {
  return new TransportError("network", `fetch failed: ${message}`, cause === undefined ? undefined : { cause });
}

const TYPES = new Set<string>(["network-policy", "limit", "abort", "network", "timeout"]);

/** Anything thrown inside the transport, as a TransportError (unknown errors become "network"). */
export function asTransportError(error: unknown): TransportError {
  if (error instanceof TransportError) return error;
  const type = (error as { type?: unknown } | null)?.type;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof type === "string" && TYPES.has(type)) return new TransportError(type as TransportErrorType, message, { cause: error });
  return networkError(describeNetworkFailure(error), error);
}

function describeNetworkFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  // undici's socket errors say little ("other side closed"); the code helps more.
  return typeof code === "string" && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
}
