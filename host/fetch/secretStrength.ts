// The weak-secret rule. A script can never read a secret, but it can try guesses: an
// origin the secret is bound to that echoes what it is sent (a debug endpoint, an error
// page quoting the path) answers a request carrying the secret and the guess with the
// guess redacted exactly when it is right. Each try costs a fetch, so a value with little
// entropy (a PIN, a short password, a repeated pattern) can be found; 64 bits cannot.
//
// The rule, on the value as its characters:
//   - at least 16 characters, and
//   - at least 64 bits estimated as (effective length) x log2(pool), where the pool is the
//     sum of the character classes present (digits 10, lower case 26, upper case 26, ASCII
//     punctuation, space and tab 34, characters above 0x7F 128) and the effective length
//     leaves out what a guesser would predict: a value that repeats a shorter period
//     counts that period, and a character continuing a run (aaa, abc, 321) does not count.
// It cannot see words, names or dates: "CorrectHorseBatteryStaple" passes it. It is a
// floor that catches PINs, short passwords and patterns, not a proof of randomness.
export const MIN_SECRET_LENGTH = 16;
export const MIN_SECRET_BITS = 64;

/** Why a value is weak (never quoting it), or null. */
export function secretWeakness(value: string): string | null {
  if (value.length < MIN_SECRET_LENGTH) return `it is shorter than ${MIN_SECRET_LENGTH} characters`;
  const bits = effectiveLength(value) * Math.log2(poolSize(value));
  if (bits < MIN_SECRET_BITS) return `its characters give less than ${MIN_SECRET_BITS} bits (too few kinds of character, or a repeated pattern)`;
  return null;
}

/**
 * Throws a TypeError for a weak value unless the embedder opted in with `weak: true`.
 * The message explains the guessing attack and never shows the value.
 */
export function checkSecretStrength(name: string, value: string, weak: unknown): void {
  if (weak !== undefined && typeof weak !== "boolean") throw new TypeError(`secrets.${name}.weak must be a boolean`);
  if (weak === true) return;
  const why = secretWeakness(value);
  if (why === null) return;
  throw new TypeError(
    `secrets.${name} is weak: ${why}. A script cannot read a secret, but it can test guesses of it ` +
      `through an origin the secret is bound to that echoes what it is sent, so a short or patterned value ` +
      `can be found by trying candidates. Use a random token of at least ${MIN_SECRET_LENGTH} characters and ` +
      `${MIN_SECRET_BITS} bits, or accept the risk for this secret with weak: true (CLI: --weak-secret ${name}).`,
  );
}

function poolSize(value: string): number {
  let digits = false;
  let lower = false;
  let upper = false;
  let symbols = false;
  let high = false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) digits = true;
    else if (c >= 0x61 && c <= 0x7a) lower = true;
    else if (c >= 0x41 && c <= 0x5a) upper = true;
    else if (c >= 0x80) high = true;
    else symbols = true;
  }
  return (digits ? 10 : 0) + (lower ? 26 : 0) + (upper ? 26 : 0) + (symbols ? 34 : 0) + (high ? 128 : 0);
}

/** The length a guesser has to pay for: the smallest period, less characters that continue a run. */
function effectiveLength(value: string): number {
  const text = value.slice(0, smallestPeriod(value));
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const step = i >= 2 ? text.charCodeAt(i) - text.charCodeAt(i - 1) : NaN;
    const continuesRun = Math.abs(step) <= 1 && step === text.charCodeAt(i - 1) - text.charCodeAt(i - 2);
    if (!continuesRun) length++;
  }
  return length;
}

/** The shortest block the value repeats (at least twice over, the last time possibly cut short). */
function smallestPeriod(value: string): number {
  for (let period = 1; period <= value.length / 2; period++) {
    let repeats = true;
    for (let i = period; i < value.length && repeats; i++) repeats = value[i] === value[i - period];
    if (repeats) return period;
  }
  return value.length;
}
