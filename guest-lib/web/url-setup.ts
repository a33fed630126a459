// whatwg-url-minimum decodes its IDNA tables with the global atob while it loads. Our atob
// global is lazy (touching it would load this very module), so ours is put in place for
// the duration of the load and the previous property is restored right after (url.ts).
import { atob } from "./base64";
import { defineProperty, getOwnPropertyDescriptor } from "./webidl";

const global = globalThis as Record<string, unknown>;
const saved = getOwnPropertyDescriptor(global, "atob");
try {
  defineProperty(global, "atob", { value: atob, writable: true, configurable: true });
} catch {
  // A script made atob non-configurable: the URL library uses whatever it finds.
}

export function restoreAtob(): void {
  try {
    if (saved) defineProperty(global, "atob", saved);
    else delete global.atob;
  } catch {
    // as above
  }
}
