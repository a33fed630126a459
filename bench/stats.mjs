// Small statistics and formatting helpers shared by the bench scripts.
import { setTimeout as sleep } from "node:timers/promises";

export function median(values) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** p50, p90, p99 and the sample count of times or sizes (the tail is the high side). */
export function spread(values) {
  return { p50: median(values), p90: percentile(values, 90), p99: percentile(values, 99), n: values.length };
}

/**
 * The same for rates (per round, per window), the tail on the slow side as for times: p90
 * is the rate that 90% of the samples reached or beat, p99 the one 99% did.
 */
export function rateSpread(values) {
  return { p50: median(values), p90: percentile(values, 10), p99: percentile(values, 1), n: values.length };
}

/** "p50 / p90 / p99" of a spread, each value formatted by `format`. */
export function formatSpread(x, format = formatMs) {
  return `${format(x.p50)} / ${format(x.p90)} / ${format(x.p99)}`;
}

/** Runs `op` `warmup` times unmeasured, then `samples` times; returns the per-call milliseconds. */
export async function sample(op, { warmup, samples }) {
  for (let i = 0; i < warmup; i++) await op(i);
  const times = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await op(i);
    times.push(performance.now() - start);
  }
  return times;
}

/** Full GC of this thread's heap when node runs with --expose-gc (run.mjs re-executes itself with it). */
export async function collectGarbage() {
  if (typeof globalThis.gc !== "function") return;
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await sleep(20);
  }
}

export function formatMs(ms) {
  if (!Number.isFinite(ms)) return "n/a";
  if (ms < 1) return `${(ms * 1000).toFixed(1)} µs`;
  if (ms < 100) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(0)} ms`;
}

export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return "n/a";
  const sign = bytes < 0 ? "-" : "";
  const abs = Math.abs(bytes);
  if (abs >= 1024 * 1024) return `${sign}${(abs / 1024 / 1024).toFixed(2)} MiB`;
  if (abs >= 1024) return `${sign}${(abs / 1024).toFixed(0)} KiB`;
  return `${sign}${abs.toFixed(0)} B`;
}

export function formatRate(perSecond, unit) {
  if (!Number.isFinite(perSecond)) return "n/a";
  return `${Math.round(perSecond).toLocaleString("en-US")} ${unit}`;
}

/** "2.35x": how many times the baseline's figure ours is (for times and sizes, >1 is slower/bigger). */
export function ratio(ours, baseline) {
  if (!Number.isFinite(ours) || !Number.isFinite(baseline) || baseline === 0) return "n/a";
  return `${(ours / baseline).toFixed(2)}x`;
}

/** Lays out rows of cells as aligned columns. */
export function table(header, rows) {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => String(row[i] ?? "").length)));
  const line = (row) => row.map((cell, i) => String(cell ?? "").padEnd(widths[i])).join("  ").trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)];
}
