// A job may narrow the worker's network allow-list, never widen it. The job's entries are
// intersected with the worker's, entry by entry, with the allow-list's own rules
// (host/net/allowEntry.ts): what comes out allows no request that the worker's list
// would refuse.
import { parseAllowEntry, isLocalhostName, type AllowEntry, type AllowHost } from "../net/allowEntry.js";

function meet<T>(a: T | null, b: T | null): T | null | undefined {
  if (a === null) return b;
  if (b === null || a === b) return a;
  return undefined; // both set and different: nothing in common
}

/**
 * The hosts both entries match, or null. Special addresses need an entry that names them
 * (a worker's "*" does not reach 127.0.0.1 or localhost), so a job's IP literal or
 * localhost name survives only against an entry that names it too.
 */
function meetHost(job: AllowHost, worker: AllowHost): AllowHost | null {
  if (job.kind === "ip") {
    if (worker.kind === "ip") return worker.address.address === job.address.address ? job : null;
    return worker.kind === "any" && job.address.special === null ? job : null;
  }
  if (worker.kind === "ip") return null;
  if (job.kind === "name") {
    if (isLocalhostName(job.name)) return worker.kind === "name" && worker.name === job.name ? job : null;
    if (worker.kind === "any") return job;
    if (worker.kind === "name") return worker.name === job.name ? job : null;
    return job.name.endsWith(worker.suffix) && job.name.length > worker.suffix.length ? job : null;
  }
  if (job.kind === "suffix") {
    if (worker.kind === "any") return job;
    if (worker.kind === "suffix") {
      if (job.suffix.endsWith(worker.suffix)) return job;
      return worker.suffix.endsWith(job.suffix) ? worker : null;
    }
    return worker.name.endsWith(job.suffix) && worker.name.length > job.suffix.length && !isLocalhostName(worker.name) ? worker : null;
  }
  // job "*": whatever the worker allows (its own IP and localhost entries included).
  return worker;
}

function hostText(host: AllowHost): string {
  switch (host.kind) {
    case "any":
      return "*";
    case "name":
      return host.name;
    case "suffix":
      return `*${host.suffix}`;
    case "ip":
      return host.address.family === 6 ? `[${host.address.address}]` : host.address.address;
  }
}

function entryText(scheme: AllowEntry["scheme"], port: number | null, host: AllowHost): string {
  const portPart = port === null ? "" : `:${port}`;
  if (scheme === null) return `${hostText(host)}${portPart}`;
  return `${scheme}//${hostText(host)}${portPart}`;
}

function intersectEntries(job: AllowEntry, worker: AllowEntry): string | null {
  const scheme = meet(job.scheme, worker.scheme);
  const port = meet(job.port, worker.port);
  if (scheme === undefined || port === undefined) return null;
  const host = meetHost(job.host, worker.host);
  if (host === null) return null;
  // An entry with a scheme always has a port (the parser fills in 443 or 80), so the
  // result of two entries does too.
  return entryText(scheme, port, host);
}

/** The job's allow-list cut down to what the worker's allows (duplicates removed). */
export function narrowAllowList(jobAllow: readonly string[], workerAllow: readonly string[]): string[] {
  const worker = workerAllow.map(parseAllowEntry);
  const out = new Set<string>();
  for (const text of jobAllow) {
    const entry = parseAllowEntry(text);
    for (const w of worker) {
      const meetText = intersectEntries(entry, w);
      if (meetText !== null) out.add(meetText);
    }
  }
  return [...out];
}
