import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserMissing, launchBrowser, openPage, screenshot } from '../support/browser.js';
import { sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { keyStatus, v1 } from '../support/managed.js';
import { fileResources } from '../support/resources.js';

// The status page's "Teams and keys" view in Debian's chromium, against a real gateway with
// a SQLite database: each team's limits, spend and keys, and an admin creating, rotating and
// revoking a key from the page, the new secret shown once.

declare const document: { querySelector(selector: string): { textContent: string | null } | null };

const missing = browserMissing();
const r = fileResources('switchyard-status-managed-');
const ADMIN_TOKEN = `tok-${'managedPAGE0123456789'}`;
const FILE_KEY = `sy-${'managedPAGEconfigFILEkey0123456789'}`;
let browser: Browser | null = null;
let db: TestDatabase;
let gw: GatewayProcess;

before(async () => {
  if (missing !== null) return;
  browser = await launchBrowser();
  const east = await r.startMock({ name: 'east' });
  db = sqliteDatabase();
  gw = await r.startGw(
    baseConfig(
      { east: east.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      {
        server: { admin_token: { env: 'ADMIN_TOKEN' } },
        pricing: { models: { m: { input_usd_per_mtok: 1000, output_usd_per_mtok: 1000 } } },
        teams: { platform: { rate_limit: { rpm: 600 } }, tiny: { budget: { usd_per_month: 0.00005 } } },
        keys: [{ id: 'platform-ci', team: 'platform', key: { env: 'FILE_KEY' } }],
        database: { url: db.url },
      },
    ),
    { env: { ADMIN_TOKEN, FILE_KEY } },
  );
});
after(async () => {
  await browser?.close();
  await gw?.stop();
  await db?.drop();
});

describe('the status page shows teams and keys, and manages keys', { skip: missing ?? false }, () => {
  it('lists each team with its limits and keys; creates, rotates and revokes a key, showing each secret once', async () => {
    const admin = gw.adminUrl as string;
    await v1(admin, 'POST', 'teams', {
      token: ADMIN_TOKEN,
      body: { id: 'growth', rate_limit: { rpm: 100 }, budget: { usd_per_month: 50 } },
    });
    const seeded = await v1(admin, 'POST', 'keys', { token: ADMIN_TOKEN, body: { id: 'growth-web', team: 'growth' } });
    assert.equal((await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${seeded.body.key}` })).status, 200);

    const { page, errors } = await openPage(browser as Browser);
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${admin}/`);
    await page.waitForSelector('#token-form:not([hidden])');
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#managed-section:not([hidden]) article[data-team="growth"]', { timeout: 15_000 });

    const growth = page.locator('article[data-team="growth"]');
    assert.match((await growth.locator('.hint').textContent()) ?? '', /100 rpm · 50\.00 USD\/month \(block\)/);
    assert.equal(await growth.locator('svg.spend-chart rect').count(), 30, 'one bar a day for 30 days');
    assert.ok(await growth.locator('tr[data-key="growth-web"]').isVisible());
    assert.match((await page.locator('article[data-team="platform"] h3').textContent()) ?? '', /config file/);

    await growth.locator('button[data-action="create-key"]').click();
    await page.waitForSelector('#new-secret:not([hidden])');
    const created = ((await page.locator('#new-secret-value').textContent()) ?? '').trim();
    assert.match(created, /^sy-/);
    assert.equal(await keyStatus(gw.url, created), 200, 'the secret the page showed works');
    await screenshot(page, 'status-page-teams-and-keys');
    await page.click('#new-secret-done');
    assert.equal(await page.locator('#new-secret-value').textContent(), '', 'the secret is gone from the page once dismissed');

    await growth.locator('button[data-action="rotate"][data-key="growth-web"]').click();
    await page.waitForSelector('#new-secret:not([hidden])');
    const rotated = ((await page.locator('#new-secret-value').textContent()) ?? '').trim();
    assert.notEqual(rotated, seeded.body.key);
    assert.equal(await keyStatus(gw.url, rotated), 200);
    assert.equal(await keyStatus(gw.url, seeded.body.key), 401, 'rotated from the page without grace: the old secret stops');
    await page.click('#new-secret-done');

    await growth.locator('button[data-action="revoke"][data-key="growth-web"]').click();
    await page.waitForFunction(() => document.querySelector('tr[data-key="growth-web"]') === null, undefined, { timeout: 15_000 });
    assert.equal(await keyStatus(gw.url, rotated), 401);
    // The one expected console error: the first poll's 401, before the token was given.
    assert.deepEqual(
      errors.filter((e) => !(e.includes('status of 401') && e.includes('page-data'))),
      [],
    );
  });

  it('shows a config file key as in use, never as revoked, and amounts below a cent as they are', async () => {
    assert.equal((await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${FILE_KEY}` })).status, 200);
    const { page, errors } = await openPage(browser as Browser);
    await page.goto(`${gw.adminUrl as string}/`);
    await page.waitForSelector('#token-form:not([hidden])');
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#managed-section:not([hidden]) tr[data-key="platform-ci"]', { timeout: 15_000 });

    const row = page.locator('tr[data-key="platform-ci"]');
    assert.equal(await row.getAttribute('data-revoked'), null, 'not marked revoked');
    const cells = (await row.locator('td').allTextContents()).map((c) => c.trim());
    assert.equal(cells[4], 'config file', 'its kind, not "revoked"');
    assert.notEqual(cells[2], 'never', 'its last use, as this gateway saw it');
    assert.notEqual(cells[2], '');
    assert.match(cells[2] as string, new RegExp(String(new Date().getFullYear())), 'a last use shows its date, not only the hour');

    assert.match((await page.locator('article[data-team="tiny"] .hint').textContent()) ?? '', /0\.00005 USD\/month/);
    await page.waitForSelector('#teams tr[data-team="tiny"]', { timeout: 15_000 });
    assert.match((await page.locator('#teams tr[data-team="tiny"]').textContent()) ?? '', /0\.00 USD of 0\.00005 USD/);
    await screenshot(page, 'status-page-config-key-and-small-budget');
    assert.deepEqual(
      errors.filter((e) => !(e.includes('status of 401') && e.includes('page-data'))),
      [],
    );
  });

  it('says in words that the gateway is open, and that its first managed key closed it', async () => {
    const openDb = sqliteDatabase();
    const east = await r.startMock({ name: 'east-open' });
    const open = await r.startGw(
      baseConfig(
        { east: east.baseUrl },
        { m: { candidates: [{ provider: 'east' }] } },
        { server: { admin_token: { env: 'ADMIN_TOKEN' } }, database: { url: openDb.url } },
      ),
      { env: { ADMIN_TOKEN } },
    );
    try {
      const { page, errors } = await openPage(browser as Browser);
      await page.goto(`${open.adminUrl as string}/`);
      await page.waitForSelector('#token-form:not([hidden])');
      await page.fill('#token', ADMIN_TOKEN);
      await page.click('#token-form button[type="submit"]');
      await page.waitForSelector('#access', { timeout: 15_000 });
      assert.match((await page.locator('#access').textContent()) ?? '', /^open: no API key is configured/);

      await v1(open.adminUrl as string, 'POST', 'teams', { token: ADMIN_TOKEN, body: { id: 'growth' } });
      await v1(open.adminUrl as string, 'POST', 'keys', { token: ADMIN_TOKEN, body: { id: 'first', team: 'growth' } });
      await page.waitForFunction(
        () => (document.querySelector('#access')?.textContent ?? '').startsWith('an API key is required (1 key)'),
        undefined,
        { timeout: 15_000 },
      );
      await page.waitForFunction(
        () => (document.querySelector('#reloads')?.textContent ?? '').includes('the gateway was open and now requires an API key'),
        undefined,
        { timeout: 15_000 },
      );
      await screenshot(page, 'status-page-first-key-closes-the-gateway');
      assert.deepEqual(
        errors.filter((e) => !(e.includes('status of 401') && e.includes('page-data'))),
        [],
      );
    } finally {
      await open.stop();
      await openDb.drop();
    }
  });
});
