export const label = (s: string): string => `[${s}]`;
