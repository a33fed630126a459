// A plugin host (this file is a Node program, not a sandbox script): the app gives its
// plugins one host module, "app" (app-module.ts), loads three third-party plugins, each in
// a sandbox of its own, and calls their hooks for every event. The plugins call back into
// the app (app.store, app.notify, await app.fetchProfile) and keep their state between
// calls. One plugin is hostile: it floods the store (stopped by the app's quota), throws,
// and loops forever (stopped by cpuTimeMs); the app and the other plugins carry on.
//
// Run it after `npm run build`:
//   npx esbuild examples/plugin-host/main.ts --bundle --packages=external --format=esm --platform=node --outfile=dist/examples/plugin-host.mjs
//   node dist/examples/plugin-host.mjs examples/plugin-host/plugins
// (test/examples/plugin-host.test.ts does exactly this, and calls main() directly.)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createSandbox, ScriptError, type Plugin, type Sandbox } from "scriptbox";
import { createAppModule, type AppState } from "./app-module.js";

const PLUGINS = ["welcome", "digest", "hostile"] as const;

export interface PluginHostReport {
  /** Per event, what each plugin's onMemberJoined answered (or the error it ended with). */
  events: Record<string, Record<string, string>>;
  notifications: string[];
  greeted: number;
  storeSizes: Record<string, number>;
  crash: string;
  spin: string;
  afterSpin: string;
}

export async function main(log: (line: string) => void = console.log, pluginsDir = fileURLToPath(new URL("./plugins/", import.meta.url))): Promise<PluginHostReport> {
  const state: AppState = {
    notifications: [],
    stores: new Map(),
    profiles: new Map([
      ["u1", { id: "u1", name: "Ada", joined: new Date("2021-03-04T00:00:00Z") }],
      ["u2", { id: "u2", name: "Grace", joined: new Date("2022-05-06T00:00:00Z") }],
      ["u3", { id: "u3", name: "Edsger", joined: new Date("2023-07-08T00:00:00Z") }],
    ]),
  };
  // One module object shared by every plugin's sandbox.
  const app = createAppModule(state);
  const sandboxes: Sandbox[] = [];
  const plugins = new Map<string, Plugin>();
  try {
    for (const name of PLUGINS) {
      const sandbox = await createSandbox({ modules: { app }, limits: { cpuTimeMs: 250, wallTimeMs: 5_000, memoryBytes: 32 * 1024 * 1024 } });
      sandboxes.push(sandbox);
      const plugin = await sandbox.load(readFileSync(join(pluginsDir, `${name}.ts`), "utf8"), { filename: `${name}.ts` });
      plugins.set(name, plugin);
      log(`loaded ${name}.ts: ${plugin.exports.join(", ")}`);
    }

    const events: PluginHostReport["events"] = {};
    for (const member of ["u1", "u2", "nobody", "u3"]) {
      events[member] = {};
      for (const [name, plugin] of plugins) {
        try {
          events[member][name] = String(await plugin.call("onMemberJoined", member));
        } catch (error) {
          if (!(error instanceof ScriptError)) throw error;
          events[member][name] = `${error.kind}: ${error.message}`;
        }
      }
      log(`member ${member}: ${JSON.stringify(events[member])}`);
    }

    const hostile = plugins.get("hostile")!;
    const failure = async (hook: string) => {
      try {
        await hostile.call(hook);
        return "returned";
      } catch (error) {
        if (!(error instanceof ScriptError)) throw error;
        return `${error.kind}: ${error.message}`;
      }
    };
    const crash = await failure("onCrash");
    log(`hostile.ts onCrash: ${crash}`);
    const spin = await failure("onSpin");
    log(`hostile.ts onSpin: ${spin}`);
    const afterSpin = await failure("onCrash");
    log(`hostile.ts afterwards: ${afterSpin}`);

    const greeted = await plugins.get("welcome")!.call<number>("greetedCount");
    const storeSizes = Object.fromEntries(PLUGINS.map((name, i) => [name, state.stores.get(sandboxes[i]!.id)?.size ?? 0]));
    log(`welcome.ts greeted ${greeted}; store keys per plugin: ${JSON.stringify(storeSizes)}`);
    for (const line of state.notifications) log(`notification: ${line}`);
    return { events, notifications: state.notifications, greeted, storeSizes, crash, spin, afterSpin };
  } finally {
    for (const sandbox of sandboxes) await sandbox.dispose();
  }
}

// Run as a program (node dist/examples/plugin-host.mjs <plugins dir>), not when imported by a test.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(console.log, process.argv[2]).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
