// A script using zod from the repository's node_modules (a devDependency).
import { z } from "zod";

const User = z.object({ name: z.string().min(1), age: z.number().int().nonnegative() });

export default (input: unknown) => {
  const parsed = User.safeParse(input);
  return parsed.success ? { ok: true, user: parsed.data } : { ok: false, issues: parsed.error.issues.map((i) => i.path.join(".")) };
};
