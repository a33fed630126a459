// A sandbox's host modules on the embedder's side: the declaration from createSandbox,
// the modules a run adds, and the activation scope each run, plugin load or plugin call
// opens on its worker's HostCallServer (closed, and its signal aborted, when it ends).
import type { HostCallServer } from "./call-server.js";
import { SyncCallState } from "./call-server.js";
import { declareHostModules, NO_MODULES, type DeclaredModules } from "./declaration.js";
import type { ActivationHostCalls, HostModulesManifest } from "./manifest.js";

export interface ActivationCalls {
  /** For the request (undefined when the sandbox and the run have no host modules). */
  readonly hostCalls: ActivationHostCalls | undefined;
  /** The activation's answer is back: abort its signal, drop late answers. */
  end(): void;
}

const NOTHING: ActivationCalls = Object.freeze({ hostCalls: undefined, end: () => undefined });

export class SandboxHostModules {
  readonly syncState = new SyncCallState();

  private constructor(
    private readonly declared: DeclaredModules,
    private readonly sandboxId: number,
    private readonly maxCallBytes: number,
  ) {}

  static declare(modules: unknown, sandboxId: number, maxCallBytes: number): SandboxHostModules {
    return new SandboxHostModules(declareHostModules(modules, "modules"), sandboxId, maxCallBytes);
  }

  /** For the sandbox's config (null when it has none). */
  get manifest(): HostModulesManifest | null {
    return this.declared === NO_MODULES ? null : this.declared.manifest;
  }

  /** The names scripts may import from the host: the sandbox's modules and the run's. */
  names(run: DeclaredModules | null): string[] {
    return [...Object.keys(this.declared.manifest), ...Object.keys(run?.manifest ?? {})];
  }

  /** Validates `sandbox.run(code, { modules })`; numbered after the sandbox's own functions. */
  forRun(modules: unknown): DeclaredModules | null {
    if (modules === undefined) return null;
    return declareHostModules(modules, "run modules", this.declared.functions.length);
  }

  begin(server: HostCallServer, filename: string, run: DeclaredModules | null = null): ActivationCalls {
    if (this.declared === NO_MODULES && run === null) return NOTHING;
    const own = this.declared.functions;
    const added = run?.functions ?? [];
    const token = server.openActivation({
      functions: (id) => (id < own.length ? own[id] : added[id - own.length]),
      sandboxId: this.sandboxId,
      filename,
      syncState: this.syncState,
      maxCallBytes: this.maxCallBytes,
    });
    return { hostCalls: { token, modules: run?.manifest ?? null }, end: () => server.closeActivation(token) };
  }
}
