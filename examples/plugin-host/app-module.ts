// The host module "app" that the plugin host (main.ts) gives its plugins: a key-value store
// per plugin (synchronous: hot path, no await), notifications, and an async profile
// lookup. One module object serves every plugin; `this` (the call context) says which
// sandbox is calling, so each plugin gets its own store area and quota.
import { HostError, hostSync, type GuestModule, type HostCallContext } from "scriptbox";

export interface Profile {
  id: string;
  name: string;
  joined: Date;
}

export interface AppState {
  /** Notifications sent by plugins, as "<plugin file>: <message>". */
  notifications: string[];
  /** Store areas by sandbox id. */
  stores: Map<number, Map<string, unknown>>;
  profiles: Map<string, Profile>;
}

/** Keys one plugin may keep. */
export const STORE_QUOTA = 100;

export function createAppModule(state: AppState) {
  const area = (context: HostCallContext) => {
    let store = state.stores.get(context.sandboxId);
    if (!store) state.stores.set(context.sandboxId, (store = new Map()));
    return store;
  };
  return {
    version: "1.4.2",
    store: {
      get: hostSync(function (this: HostCallContext, key: string): unknown {
        return area(this).get(String(key)) ?? null;
      }),
      set: hostSync(function (this: HostCallContext, key: string, value: unknown): number {
        const store = area(this);
        if (!store.has(String(key)) && store.size >= STORE_QUOTA) {
          throw new HostError(`store quota of ${STORE_QUOTA} keys reached`, { code: "QUOTA" });
        }
        store.set(String(key), value);
        return store.size;
      }),
    },
    notify(this: HostCallContext, message: string): void {
      if (typeof message !== "string" || message.length > 200) throw new TypeError("notify(message): a string of at most 200 characters");
      state.notifications.push(`${this.filename}: ${message}`);
    },
    async fetchProfile(this: HostCallContext, id: string): Promise<Profile> {
      // Stands for a database query; the call context's signal cancels it when the plugin call ends.
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, 5);
        this.signal.addEventListener("abort", () => (clearTimeout(timer), reject(this.signal.reason)), { once: true });
      });
      const profile = state.profiles.get(id);
      if (!profile) throw new HostError(`no profile ${id}`, { code: "NOT_FOUND" });
      return profile;
    },
  };
}

export type AppModule = ReturnType<typeof createAppModule>;
/** What plugins see: used by app.d.ts, so the plugins' types follow this file. */
export type GuestApp = GuestModule<AppModule>;
