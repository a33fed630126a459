// Quantities as a person types them on a command line or in scriptbox.config.json:
// sizes ("64mb", "512k", "67108864"), durations ("500", "500ms", "2s", "1.5m") and counts.
// A parsed value remembers the unit it was typed in, so that an error can answer in the
// same unit ("--memory 10mb is below the 24mb minimum").

export type QuantityKind = "bytes" | "ms" | "count";

export interface Quantity {
  value: number;
  /** The unit suffix as typed, lower-cased ("" when there was none). */
  unit: string;
}

const KiB = 1024;
const SIZE_UNITS: Record<string, number> = { "": 1, b: 1, k: KiB, kb: KiB, kib: KiB, m: KiB ** 2, mb: KiB ** 2, mib: KiB ** 2, g: KiB ** 3, gb: KiB ** 3, gib: KiB ** 3 };
const DURATION_UNITS: Record<string, number> = { "": 1, ms: 1, s: 1000, sec: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

const EXAMPLES: Record<QuantityKind, string> = {
  bytes: "a size such as 67108864, 64mb or 512k",
  ms: "a duration in ms, or with a unit: 500ms, 2s, 1.5m",
  count: "a whole number",
};

/** What a value of this kind looks like, for error messages. */
export function quantityExample(kind: QuantityKind): string {
  return EXAMPLES[kind];
}

/** Parses "64mb", "2s", "200" (or a JSON number from a config file); undefined when malformed. */
export function parseQuantity(input: string | number, kind: QuantityKind): Quantity | undefined {
  if (typeof input === "number") return Number.isFinite(input) && input >= 0 ? { value: input, unit: "" } : undefined;
  const match = /^(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)$/i.exec(input.trim());
  if (!match) return undefined;
  const unit = match[2]!.toLowerCase();
  const number = Number(match[1]);
  if (kind === "count") return unit === "" && Number.isInteger(number) ? { value: number, unit } : undefined;
  const factor = (kind === "bytes" ? SIZE_UNITS : DURATION_UNITS)[unit];
  if (factor === undefined) return undefined;
  // Sizes are whole bytes; durations keep fractions of a millisecond as the library does.
  const value = number * factor;
  return { value: kind === "bytes" ? Math.floor(value) : value, unit };
}

/**
 * `value` (bytes or ms) in the unit the user typed: 25165824 with "mb" → "24mb". A bound
 * that is not a whole number of that unit is rounded towards inside the range (`round`), so
 * that the figure shown is one the user may actually give.
 */
export function formatQuantity(value: number, kind: QuantityKind, unit: string, round: "down" | "up" = "down"): string {
  if (kind === "count" || unit === "" || unit === "b" || unit === "ms") {
    // A bare number of bytes gets a readable gloss: "25165824 (24mb)".
    if (kind === "bytes" && unit === "" && value >= KiB ** 2 && value % KiB ** 2 === 0) return `${value} (${value / KiB ** 2}mb)`;
    return `${value}${unit}`;
  }
  const factor = (kind === "bytes" ? SIZE_UNITS : DURATION_UNITS)[unit]!;
  const scaled = value / factor;
  const rounded = (round === "down" ? Math.floor : Math.ceil)(scaled * 100) / 100;
  return `${rounded}${unit}`;
}
