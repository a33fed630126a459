// Debian's Chromium driven through playwright-core (which never downloads a browser).
// Missing browser: under CI=true the suite fails; elsewhere it is skipped with a message
// saying how to install it. Each launch gets a fresh profile and no network chatter
// (the test machines have no internet).
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM_PATH = process.env.SCRIPTBOX_CHROMIUM ?? "/usr/bin/chromium";
export const INSTALL_COMMAND = "apt-get update && apt-get install -y chromium";

/** True when the browser tests can run; throws under CI=true when they cannot. */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  const message = `Chromium not found at ${CHROMIUM_PATH}; install it with: ${INSTALL_COMMAND}`;
  if (process.env.CI === "true") throw new Error(message);
  console.warn(`SKIPPED browser tests: ${message}`);
  return false;
}

const ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A fresh browser profile (its own --user-data-dir), like a person's first visit. */
export async function launchChromium(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "scriptbox-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ARGS,
    viewport: { width: 900, height: 700 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Screenshots into one folder per run; the folder is printed so a person can look. */
export function screenshotFolder(suite: string): (page: Page, step: string) => Promise<void> {
  const root = process.env.SCRIPTBOX_SCREENSHOTS ?? join(tmpdir(), "scriptbox-screenshots");
  mkdirSync(root, { recursive: true });
  const folder = mkdtempSync(join(root, `${suite}-`));
  console.log(`browser screenshots: ${folder}`);
  let n = 0;
  return async (page, step) => {
    n += 1;
    await page.screenshot({ path: join(folder, `${String(n).padStart(2, "0")}-${step}.png`), fullPage: true });
  };
}
