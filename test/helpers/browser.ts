import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';

/** Debian's chromium; .ci/run installs it when missing. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where browser tests save screenshots (git-ignored). */
export const SCREENSHOTS = path.resolve('screenshots');

/** A headless chromium with a fresh profile; close() ends it and removes the profile, whatever happened. */
export async function launchBrowser(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: apt-get install chromium (.ci/run does), or set CHROMIUM_PATH`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-chromium-'));
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', `--user-data-dir=${profile}`] });
  return {
    browser,
    close: async () => {
      try {
        await browser.close();
      } finally {
        browser.process()?.kill('SIGKILL');
        fs.rmSync(profile, { recursive: true, force: true });
      }
    },
  };
}
