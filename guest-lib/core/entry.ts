// The core's build entry (scripts/build.mjs). It has no ES exports on purpose: esbuild's
// CommonJS output wraps an entry's exports in its __toCommonJS prelude (a getter per export,
// copied onto a second object), ~30 µs of every realm build, and a realm is built per run.
// The host reads only `hooks` from what the core's factory returns; the other guest modules
// reach the core through require("scriptbox:core") (see index.ts), typed by index.ts.
import { hooks } from "./index.js";

/** The factory's `module.exports` (declared by the factory's wrapper in scripts/build.mjs). */
declare const __SCRIPTBOX_CORE_EXPORTS__: { hooks?: typeof hooks };

__SCRIPTBOX_CORE_EXPORTS__.hooks = hooks;
