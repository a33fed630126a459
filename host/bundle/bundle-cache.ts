// Bundles cached by content: an entry is reused only while every file it was built from
// (the script, its relative files, each package file, each package.json that chose a file)
// has the same SHA-256 as when it was built, and every nearer node_modules folder that was
// absent is still absent. Package versions are covered by their package.json and files.
// Entries live in memory (per process) and, for script files, on disk in the nearest
// node_modules/.cache/scriptbox (the folder babel, eslint and ava use), so that
// `scriptbox run` does not rebundle an unchanged script in each new process.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PreparedSource } from "../transpile.js";

/** path → SHA-256 of its content (with the size and mtime it had), or null when the path must stay absent. */
export type Fingerprints = Record<string, { sha256: string; size: number; mtimeMs: number } | null>;

interface Entry {
  prepared: PreparedSource;
  fingerprints: Fingerprints;
}

/** Memory held by cached bundles (code and source map), whatever the number of entries. */
const MEMORY_BYTES = 64 * 1024 * 1024;
const MEMORY_ENTRIES = 64;

function sizeOf(entry: Entry): number {
  return entry.prepared.code.length + (entry.prepared.map?.length ?? 0);
}

export function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function fingerprintOf(path: string): Fingerprints[string] {
  try {
    const { size, mtimeMs } = statSync(path);
    return { sha256: sha256(readFileSync(path)), size, mtimeMs };
  } catch {
    return null;
  }
}

export function fingerprintsOf(paths: Iterable<string>): Fingerprints {
  const out: Fingerprints = {};
  for (const path of paths) out[path] = fingerprintOf(path);
  return out;
}

/**
 * Same content as recorded. The identity is the SHA-256; an unchanged size and mtime is
 * taken as proof of it without reading the file (a warm zod check: ~80 stats instead of
 * hashing 1.5 MB), and any change of either is settled by hashing the content.
 */
function sameContent(path: string, recorded: Fingerprints[string]): boolean {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    return recorded === null;
  }
  if (recorded === null) return false;
  if (stats.size === recorded.size && stats.mtimeMs === recorded.mtimeMs) return true;
  try {
    return sha256(readFileSync(path)) === recorded.sha256;
  } catch {
    return false;
  }
}

function stillValid(fingerprints: Fingerprints): boolean {
  for (const [path, recorded] of Object.entries(fingerprints)) if (!sameContent(path, recorded)) return false;
  return true;
}

export class BundleCache {
  readonly #memory = new Map<string, Entry>();
  #memoryBytes = 0;
  /** Bundles built (cache misses) in this process: for tests and the bench. */
  builds = 0;

  /** A valid cached bundle for `key`, from memory or from `diskDir`. */
  get(key: string, diskDir: string | null): PreparedSource | undefined {
    let entry = this.#memory.get(key);
    if (!entry && diskDir) entry = readDiskEntry(diskDir, key);
    if (!entry || !stillValid(entry.fingerprints)) {
      this.#forget(key);
      return undefined;
    }
    this.#remember(key, entry);
    return entry.prepared;
  }

  set(key: string, prepared: PreparedSource, fingerprints: Fingerprints, diskDir: string | null): void {
    this.builds++;
    const entry = { prepared, fingerprints };
    this.#remember(key, entry);
    if (diskDir) writeDiskEntry(diskDir, key, entry);
  }

  clear(): void {
    this.#memory.clear();
    this.#memoryBytes = 0;
  }

  #forget(key: string): void {
    const entry = this.#memory.get(key);
    if (!entry) return;
    this.#memory.delete(key);
    this.#memoryBytes -= sizeOf(entry);
  }

  #remember(key: string, entry: Entry): void {
    this.#forget(key); // re-insert: Map order is the LRU order
    this.#memory.set(key, entry);
    this.#memoryBytes += sizeOf(entry);
    while (this.#memory.size > 1 && (this.#memory.size > MEMORY_ENTRIES || this.#memoryBytes > MEMORY_BYTES)) this.#forget(this.#memory.keys().next().value!);
  }
}

function readDiskEntry(dir: string, key: string): Entry | undefined {
  try {
    const entry = JSON.parse(readFileSync(join(dir, `${key}.json`), "utf8")) as Entry;
    return typeof entry?.prepared?.code === "string" && typeof entry.fingerprints === "object" ? entry : undefined;
  } catch {
    return undefined;
  }
}

/** Best effort: a read-only or full disk only costs the next run a rebundle. */
function writeDiskEntry(dir: string, key: string, entry: Entry): void {
  try {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${key}.json`);
    writeFileSync(`${path}.${process.pid}.tmp`, JSON.stringify(entry));
    renameSync(`${path}.${process.pid}.tmp`, path); // atomic: a concurrent run never reads half a file
  } catch {
    // not cached on disk
  }
}
