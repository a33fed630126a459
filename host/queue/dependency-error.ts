// The error of a missing bullmq, in a module of its own: the public types re-export it, and
// they must not mention bullmq's types (an embedder without bullmq type-checks too).
export const BULLMQ_RANGE = "^5.81.5";

export class QueueDependencyError extends Error {
  constructor() {
    super(`the script queue needs bullmq, an optional dependency: npm install bullmq@${BULLMQ_RANGE}`);
    this.name = "QueueDependencyError";
  }
}
