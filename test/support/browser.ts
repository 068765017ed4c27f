import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';

// A real browser for the status page tests: playwright-core driving Debian's chromium
// (playwright-core downloads no browser of its own; .ci/run installs chromium when missing).

export const CHROMIUM = process.env.SWITCHYARD_CHROMIUM ?? '/usr/bin/chromium';

/** Where screenshots go: gitignored, kept after the run for a person to look at. */
export const RESULTS_DIR = resolve(import.meta.dirname, '../../test-results');

/** Why the browser tests cannot run here, or null when they can. */
export function browserMissing(): string | null {
  return existsSync(CHROMIUM)
    ? null
    : `no chromium at ${CHROMIUM} (apt-get install chromium, or set SWITCHYARD_CHROMIUM): the status page browser test is skipped`;
}

export async function launchBrowser(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}

/** A page that collects console errors and uncaught exceptions. */
export async function openPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  return { page, errors };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = resolve(RESULTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

// Runs in the page, not in Node: the DOM's one member the helper below reads.
declare const document: { querySelector(selector: string): { textContent: string | null } | null };

/** Waits until the element's text contains `expected`; fails with what it showed instead. */
export async function waitForText(page: Page, selector: string, expected: string, timeoutMs = 15_000): Promise<void> {
  try {
    await page.waitForFunction(
      ([s, e]) => (document.querySelector(s as string)?.textContent ?? '').includes(e as string),
      [selector, expected],
      { timeout: timeoutMs, polling: 100 },
    );
  } catch {
    const shown = await page
      .locator(selector)
      .first()
      .textContent({ timeout: 1000 })
      .catch(() => '(nothing)');
    assert.fail(`${selector} never showed "${expected}"; it shows "${shown}"`);
  }
}
