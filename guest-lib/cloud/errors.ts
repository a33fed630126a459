// CloudError: the API answered a failure, answered something unreadable, or could not be
// reached. One class for every endpoint family; `code` carries the machine-readable part
// (the /api/v1 `error`, the OAuth RFC `error`, the GraphQL `extensions.code`).
export interface GraphQLErrorSummary {
  message: string;
  code?: string;
}

export class CloudError extends Error {
  declare readonly name: "CloudError";
  readonly status: number;
  readonly code: string;
  readonly method: string;
  readonly path: string;
  // Own properties only when they apply (declared, so that no field is emitted).
  declare readonly excerpt?: string;
  declare readonly errors?: GraphQLErrorSummary[];

  constructor(
    status: number,
    code: string,
    message: string,
    method: string,
    path: string,
    extra?: { excerpt?: string; errors?: GraphQLErrorSummary[]; cause?: unknown },
  ) {
    super(`${message} (${status ? `${status} ` : ""}${code}, ${method} ${path})`, extra && "cause" in extra ? { cause: extra.cause } : undefined);
    this.status = status;
    this.code = code;
    this.method = method;
    this.path = path;
    if (extra?.excerpt !== undefined) this.excerpt = extra.excerpt;
    if (extra?.errors !== undefined) this.errors = extra.errors;
  }
}
Object.defineProperty(CloudError.prototype, "name", { value: "CloudError", writable: true, configurable: true, enumerable: false });

/** Gives `error` the stack of `site` (a guest Error made where the script called), minus library frames. */
export function atCallSite(error: CloudError, site: Error): CloudError {
  const frames = `${site.stack ?? ""}`.split("\n");
  let stack = `${error.name}: ${error.message}`;
  for (let i = 0; i < frames.length; i++) if (frames[i]!.indexOf("(scriptbox:") === -1 && frames[i]!.trim() !== "") stack += `\n${frames[i]}`;
  Object.defineProperty(error, "stack", { value: stack, writable: true, configurable: true, enumerable: false });
  return error;
}
