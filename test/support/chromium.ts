import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';

/*
 * Headless Chromium for the tests that open a page (Debian's package, driven by puppeteer-core, which downloads
 * nothing). Without one a test is skipped with a note, except under CI, where it fails.
 */

/** CHROMIUM_PATH, else the first of the usual names on PATH. */
function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // not in this directory
      }
    }
  }
  return undefined;
}

const CHROMIUM = findChromium();
const IN_CI = Boolean(process.env.CI) && !['0', 'false'].includes(process.env.CI!.toLowerCase());
const INSTALL_CHROMIUM = 'install it (Debian: apt-get install --no-install-recommends chromium) or set CHROMIUM_PATH';

/** Whether a browser test runs here; says so when it does not. `testFile` names it in the note. */
export function chromiumTestRuns(testFile: string): boolean {
  if (!CHROMIUM && !IN_CI) console.warn(`note: ${testFile} skipped: no Chromium found; ${INSTALL_CHROMIUM}`);
  return Boolean(CHROMIUM) || IN_CI;
}

export function launchChromium(userDataDir: string): Promise<Browser> {
  if (!CHROMIUM) throw new Error(`no Chromium found, and CI needs this test: ${INSTALL_CHROMIUM}`);
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir,
    // Chromium's sandbox needs an unprivileged user: as root (a CI container) it refuses to start without this.
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-gpu', '--no-first-run', '--disable-extensions'],
  });
}
