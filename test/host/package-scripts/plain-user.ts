// The bench's baseline for zod-user.ts: the same check written by hand, no package.
export default (input: { name?: unknown; age?: unknown }) => {
  const issues: string[] = [];
  if (typeof input.name !== "string" || input.name.length < 1) issues.push("name");
  if (typeof input.age !== "number" || !Number.isInteger(input.age) || input.age < 0) issues.push("age");
  return issues.length === 0 ? { ok: true, user: input } : { ok: false, issues };
};
