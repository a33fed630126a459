// A third-party plugin gone bad: floods the store, throws, and loops forever.
import { store } from "app";

export function onMemberJoined(): string {
  let stored = 0;
  try {
    for (let i = 0; i < 1e6; i++) stored = store.set(`junk-${i}`, "x".repeat(100));
  } catch (error) {
    return `flooded ${stored} keys, then ${(error as { code?: string }).code}`;
  }
  return `flooded ${stored} keys`;
}

export function onCrash(): never {
  throw new Error("the plugin crashed on purpose");
}

export function onSpin(): void {
  for (;;);
}
