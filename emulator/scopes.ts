// The OAuth scopes the emulator knows (the spec leaves them out). A scope is needed by
// the two endpoints that accept OAuth access tokens; `required` scopes cannot be dropped
// by the person who approves a device request with a narrower scope.
export interface ScopeInfo {
  name: string;
  description: string;
  requirement: "required" | "optional";
}

export const SCOPES: readonly ScopeInfo[] = [
  { name: "user:read", description: "Read your name and email address", requirement: "required" },
  { name: "billing:write", description: "Claim vouchers on your account", requirement: "optional" },
];
export const SCOPE_NAMES = SCOPES.map((s) => s.name);
export const DEFAULT_CLIENT_SCOPE = "user:read";

/** Splits a scope string: RFC 6749 §3.3 separates with spaces; the approve endpoint also takes commas. */
export function parseScope(value: string, allowCommas = false): string[] {
  const parts = value.split(allowCommas ? /[\s,]+/ : / +/).filter((s) => s.length > 0);
  return [...new Set(parts)];
}

export function formatScope(scopes: readonly string[]): string {
  // Catalogue order, so equal sets always print the same.
  return SCOPE_NAMES.filter((name) => scopes.includes(name)).join(" ");
}

export function unknownScopes(scopes: readonly string[]): string[] {
  return scopes.filter((s) => !SCOPE_NAMES.includes(s));
}

export function isSubset(scopes: readonly string[], of: readonly string[]): boolean {
  return scopes.every((s) => of.includes(s));
}

export function scopeInfo(name: string): ScopeInfo {
  return SCOPES.find((s) => s.name === name)!;
}
