/**
 * A real browser for the console tests: Playwright (playwright-core, which never downloads a browser) driving the
 * Chromium that `node scripts/ensure.mjs --test` installed (Debian's package, or CHROMIUM_PATH). Screenshots go to
 * test/artifacts/console/, which the README links to.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'artifacts', 'console');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    // No sandbox as root; no background traffic to Google on a closed network.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** A fresh browser profile (no cookies) at laptop width, in a fixed time zone so times read the same everywhere. */
export async function newContext(browser: Browser, opts: { width?: number; height?: number; timezoneId?: string } = {}): Promise<BrowserContext> {
  return browser.newContext({
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 860 },
    timezoneId: opts.timezoneId ?? 'America/New_York',
    locale: 'en-US',
  });
}

/** A PNG of the page (all of it, or only what the window shows for very long pages). */
export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: opts.fullPage ?? true });
}
