// The error an embedder throws from a host function to give the guest an `error.code`.
export class HostError extends Error {
  /** What the guest sees as `error.code`: a string or a number. */
  readonly code: string | number | undefined;

  constructor(message: string, options: { code?: string | number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "HostError";
    const { code } = options;
    if (code !== undefined && typeof code !== "string" && !(typeof code === "number" && Number.isFinite(code))) {
      throw new TypeError("HostError code must be a string or a finite number");
    }
    this.code = code;
  }
}
