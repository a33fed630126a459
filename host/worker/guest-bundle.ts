// The guest library artifact (dist/guest-lib/bundle.json, made by scripts/build.mjs):
// one factory source per guest module plus its export names. Read once per worker.
import { readFileSync } from "node:fs";

interface BundleFile {
  modules: Record<string, { source: string; exports: string[] }>;
}

/** Modules a script may import by bare name, and the guest module behind each. */
export const PUBLIC_MODULES = ["http", "cloud", "runtime"] as const;

export class GuestBundle {
  private readonly publicSources = new Map<string, string>();

  constructor(private readonly file: BundleFile) {
    if (!file.modules.core) throw new Error("guest bundle: the core module is missing (run npm run build)");
  }

  static load(): GuestBundle {
    const path = new URL("../../guest-lib/bundle.json", import.meta.url);
    return new GuestBundle(JSON.parse(readFileSync(path, "utf8")) as BundleFile);
  }

  /** The factory source of guest module `name`, or undefined. */
  source(name: string): string | undefined {
    return Object.hasOwn(this.file.modules, name) ? this.file.modules[name]!.source : undefined;
  }

  /** ES module source served for `import … from "<name>"` (http, cloud, runtime). */
  publicModuleSource(name: string): string | undefined {
    if (!(PUBLIC_MODULES as readonly string[]).includes(name) || this.source(name) === undefined) return undefined;
    let source = this.publicSources.get(name);
    if (source === undefined) {
      const names = this.file.modules[name]!.exports.filter((n) => n !== "default");
      source =
        `const m = __scriptbox.import(${JSON.stringify(name)});\n` +
        `export default m;\n` +
        (names.length ? `export const { ${names.join(", ")} } = m;\n` : "");
      this.publicSources.set(name, source);
    }
    return source;
  }

  get availablePublicModules(): string[] {
    return PUBLIC_MODULES.filter((name) => this.source(name) !== undefined);
  }
}
