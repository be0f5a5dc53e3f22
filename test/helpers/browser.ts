import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import chromium from '@sparticuz/chromium';
import puppeteer, { type Browser } from 'puppeteer-core';

/** Where browser tests save screenshots (git-ignored). */
export const SCREENSHOTS = path.resolve('screenshots');

/**
 * Flags for a machine with no network but loopback: without the background-networking ones
 * chromium keeps trying Google's hosts, and the refused connections slow it down.
 */
const OFFLINE_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * The chromium to drive: CHROMIUM_PATH when set, else the headless shell that the npm package
 * @sparticuz/chromium ships (unpacked to the temporary folder on first use; it needs nothing but libc).
 */
async function chromiumPath(): Promise<string> {
  return process.env.CHROMIUM_PATH ?? (await chromium.executablePath());
}

/**
 * A headless chromium with a fresh profile, in the machine's own locale (`env` adds to or
 * overrides this process's environment: `{ LANG: 'C.UTF-8' }` gives chromium POSIX's locale,
 * en-US@posix); close() ends it and removes the profile, whatever happened.
 */
export async function launchBrowser(env: NodeJS.ProcessEnv = {}): Promise<{ browser: Browser; close: () => Promise<void> }> {
  const executablePath = await chromiumPath();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-chromium-'));
  const browser = await puppeteer.launch({
    executablePath,
    headless: 'shell',
    args: [...chromium.args, ...OFFLINE_FLAGS, `--user-data-dir=${profile}`],
    env: { ...process.env, ...env },
  });
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
