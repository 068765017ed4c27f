import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserMissing, launchBrowser, openPage, screenshot, waitForText } from '../support/browser.js';
import { postgresDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// The status page's replicas table in Debian's chromium: two gateway processes sharing a
// Postgres database, side by side with their generation and topology digest, and the one
// that has not applied the other's change highlighted as behind.

const missing = browserMissing();
const r = fileResources('switchyard-status-replicas-');
const READER = `tok-${'replicasPAGEreader0123456789'}`;
const ADMIN = `tok-${'replicasPAGEadmin0123456789'}`;
let skip: string | null = missing;
let browser: Browser | null = null;
let db: TestDatabase | null = null;
let a: GatewayProcess;
let b: GatewayProcess;
let eastUrl: string;

function config(model: string): Record<string, unknown> {
  return baseConfig(
    { east: eastUrl },
    { m: { candidates: [{ provider: 'east', model }] } },
    {
      server: { admin_token: { env: 'ADMIN' }, admin_tokens: [{ id: 'reader', role: 'read_only', token: { env: 'READER' } }] },
      database: { url: db?.url, recheck_ms: 400 },
    },
  );
}

before(async () => {
  if (skip !== null) return;
  const opened = await postgresDatabase();
  if ('skip' in opened) {
    skip = opened.skip;
    return;
  }
  db = opened;
  eastUrl = (await r.startMock({ name: 'east' })).baseUrl;
  a = await r.startGw(config('gpt-4o'), { env: { ADMIN, READER } });
  b = await r.startGw(config('gpt-4o'), { env: { ADMIN, READER } });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await a?.stop();
  await b?.stop();
  await db?.drop();
});

describe('the status page shows the replicas', () => {
  it('lists both replicas with their digests, and highlights the one behind after the other reloads', async (t) => {
    if (skip !== null) return t.skip(skip);
    const { page, errors } = await openPage(browser as Browser);
    await page.goto(`${a.adminUrl}/`);
    await page.waitForSelector('#token-form:not([hidden])');
    await page.fill('#token', READER);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#replicas-section:not([hidden]) #replicas tbody tr:nth-child(2)', { timeout: 15_000 });
    await waitForText(page, '#replicas-hint', 'heartbeats in the database');
    const rows = page.locator('#replicas tbody tr');
    assert.equal(await rows.count(), 2);
    const digests = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-digest')));
    assert.equal(digests[0], digests[1], 'the same config, the same digest');
    const self = page.locator(`#replicas tr[data-instance$=":${a.child.pid}"]`);
    assert.match((await self.locator('td').first().textContent()) ?? '', /\(this one\)/);
    assert.equal(await self.locator('td.mono').textContent(), (digests[0] as string).slice(0, 12));
    assert.equal(await page.locator('#replicas tr[data-behind="true"]').count(), 0);

    a.writeConfig(config('gpt-4o-2025'));
    const res = await fetch(`${a.adminUrl}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(res.status, 200);
    const behind = `#replicas tr[data-behind="true"][data-instance$=":${b.child.pid}"]`;
    await page.waitForSelector(behind, { timeout: 15_000 });
    assert.equal(await page.locator(`${behind} .badge`).textContent(), 'behind');
    assert.equal(await page.locator('#replicas tr[data-behind="true"]').count(), 1, 'only B is behind');
    await waitForText(page, '#replicas caption', '1 of 2 replicas behind');
    await screenshot(page, 'status-page-replicas');
    // The page's first poll, before the token is given, is refused: that one is expected.
    assert.deepEqual(
      errors.filter((e) => !/status of 401/.test(e)),
      [],
    );
  });
});
