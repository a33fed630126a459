// A mistake on the command line: reported as one line, exit code 2, never a stack trace.
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
