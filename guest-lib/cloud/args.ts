// Argument checks: a wrong type is a TypeError before any request is made, with the
// method and the argument named ("team.invitations.create: email must be a non-empty
// string, got number").
const describe = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "an array" : typeof value);

export type Fields = Record<string, unknown>;

export function fail(where: string, what: string, expected: string, value: unknown): never {
  throw new TypeError(`${where}: ${what} must be ${expected}, got ${describe(value)}`);
}

export function object(where: string, value: unknown, what = "the argument"): Fields {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(where, what, "an object", value);
  return value as Fields;
}

export function string(where: string, value: unknown, what: string): string {
  if (typeof value !== "string" || value === "") fail(where, what, "a non-empty string", value);
  return value;
}

export function optionalString(where: string, value: unknown, what: string): string | undefined {
  return value === undefined ? undefined : string(where, value, what);
}

export function optionalBoolean(where: string, value: unknown, what: string): boolean | undefined {
  if (value !== undefined && typeof value !== "boolean") fail(where, what, "a boolean", value);
  return value as boolean | undefined;
}

export function optionalNumber(where: string, value: unknown, what: string, min = 0): number | undefined {
  if (value !== undefined && !(typeof value === "number" && value >= min && value < Infinity)) fail(where, what, `a number >= ${min}`, value);
  return value as number | undefined;
}

export function optionalStrings(where: string, value: unknown, what: string): string[] | undefined {
  if (value !== undefined && !(Array.isArray(value) && value.every((item) => typeof item === "string"))) fail(where, what, "an array of strings", value);
  return value as string[] | undefined;
}
