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

/** A headless chromium with a fresh profile; close() ends it and removes the profile, whatever happened. */
export async function launchBrowser(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  const executablePath = await chromiumPath();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'spillway-chromium-'));
  const browser = await puppeteer.launch({
    executablePath,
    headless: 'shell',
    args: [...chromium.args, ...OFFLINE_FLAGS, '--lang=en-US', `--user-data-dir=${profile}`],
    // Under LANG=C (as in CI) chromium's locale would be en-US@posix, which Intl.NumberFormat refuses.
    env: { ...process.env, LANG: 'en_US.UTF-8', LANGUAGE: 'en_US' },
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
