import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import type { MockProvider } from '../../src/mock/index.js';
import { browserMissing, launchBrowser, openPage, screenshot, waitForText } from '../support/browser.js';
import { sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { fileResources } from '../support/resources.js';

// The status page's "Providers and routes" view in Debian's chromium, against a real gateway
// with a SQLite database and real mock providers: a provider tested (the probe's answer shown
// before it is saved) and created from its form, a route created that then serves an OpenAI
// SDK's chat through it, the route's candidates and weights edited, both deleted, each change
// showing the reload it caused; the config file's objects read-only; refusals shown with each
// path at fault; an edit against a changed object refused 412 until the view is reloaded.

declare const document: { querySelector(selector: string): { textContent: string | null } | null };

const missing = browserMissing();
const r = fileResources('switchyard-status-topology-');
// Assembled at run time so that no key-shaped literal sits in the repository.
const ADMIN_TOKEN = `tok-${'topologyPAGEadmin0123456789'}`;
const READER_TOKEN = `tok-${'topologyPAGEreader0123456789'}`;
/** The new provider's upstream key: the page must only ever show its reference. */
const WEST_SECRET = `sk-${'topologyPAGEwestUPSTREAM0123456789'}`;
let browser: Browser | null = null;
let db: TestDatabase;
let gw: GatewayProcess;
let east: MockProvider;
let west: MockProvider;
let admin: string;

before(async () => {
  if (missing !== null) return;
  browser = await launchBrowser();
  [east, west] = await Promise.all([r.startMock({ name: 'east' }), r.startMock({ name: 'west', apiKey: WEST_SECRET })]);
  db = sqliteDatabase();
  gw = await r.startGw(
    baseConfig(
      { east: east.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      {
        server: {
          admin_token: { env: 'ADMIN_TOKEN' },
          admin_tokens: [{ id: 'reader', token: { env: 'READER_TOKEN' }, role: 'read_only' }],
          // The mocks listen on loopback: the probe refuses it unless listed.
          admin_probe_allow: ['127.0.0.0/8'],
        },
        pricing: { models: { m: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } } },
        database: { url: db.url },
      },
    ),
    { env: { ADMIN_TOKEN, READER_TOKEN, WEST_KEY: WEST_SECRET } },
  );
  admin = gw.adminUrl as string;
});
after(async () => {
  await browser?.close();
  await gw?.stop();
  await db?.drop();
});

/** A page signed in with `token`, its topology view read. */
async function signedIn(token = ADMIN_TOKEN, adminUrl = admin): Promise<{ page: Page; errors: string[] }> {
  const opened = await openPage(browser as Browser);
  opened.page.on('dialog', (d) => void d.accept());
  await opened.page.goto(`${adminUrl}/`);
  await opened.page.waitForSelector('#token-form:not([hidden])');
  await opened.page.fill('#token', token);
  await opened.page.click('#token-form button[type="submit"]');
  await opened.page.waitForSelector('#topology-section[data-loaded="true"] tr[data-topology-provider="east"]', { timeout: 15_000 });
  return opened;
}

/** Console errors but the ones the page is expected to cause: the first poll's 401, and the refusals a test asks for. */
function unexpected(errors: string[], refused: number[] = []): string[] {
  return errors.filter(
    (e) =>
      !(e.includes('status of 401') && e.includes('page-data')) &&
      !refused.some((s) => e.includes(`status of ${s}`) && e.includes('admin/v1/')),
  );
}

/** Waits for the outcome of a write titled `what`; its reload and generation. */
async function outcome(page: Page, what: string): Promise<{ reload: string; generation: number; text: string }> {
  await waitForText(page, '#topology-outcome', what);
  const box = page.locator('#topology-outcome');
  return {
    reload: (await box.getAttribute('data-reload')) ?? '',
    generation: Number(await box.getAttribute('data-generation')),
    text: (await box.textContent()) ?? '',
  };
}

async function servedBy(model: string): Promise<{ status: number; provider: string | null }> {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'no-key-needed', maxRetries: 0 });
  try {
    const { response } = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    return { status: response.status, provider: response.headers.get('x-mock-provider') };
  } catch (err) {
    return { status: (err as { status?: number }).status ?? 0, provider: null };
  }
}

describe('the status page manages providers and routes', { skip: missing ?? false }, () => {
  it('tests and creates a provider, creates a route it serves, edits its candidates and weights, deletes both; each change shows its reload', async () => {
    const { page, errors } = await signedIn();

    // The provider's form: tested first, the probe's answer shown while nothing is saved.
    await page.click('#new-provider');
    await page.fill('#provider-form [name="id"]', 'west');
    await page.selectOption('#provider-form [name="type"]', 'openai');
    await page.fill('#provider-form [name="base_url"]', west.baseUrl);
    await page.selectOption('#provider-form [name="key_source"]', 'env');
    await page.fill('#provider-form [name="key_name"]', 'WEST_KEY');
    await page.fill('#provider-form [name="other"]', '{"timeout_ms": 5000, "expose_headers": ["x-mock-provider"]}');
    await page.click('#provider-test');
    await page.waitForSelector('#probe-result[data-reachable="true"]', { timeout: 15_000 });
    assert.equal(await page.locator('#probe-result [data-field="auth"] .badge').getAttribute('data-state'), 'accepted');
    assert.equal(await page.locator('#probe-result [data-field="tls"]').textContent(), 'none');
    assert.match((await page.locator('#probe-result [data-field="latency"]').textContent()) ?? '', /^\d+ ms$/);
    assert.equal(await page.locator('#probe-result [data-field="models"]').getAttribute('data-count'), '3');
    assert.match((await page.locator('#probe-result [data-field="models"]').textContent()) ?? '', /gpt-4o-mini/);
    assert.equal((await v1(admin, 'GET', 'providers/west', { token: ADMIN_TOKEN })).status, 404, 'tested, not saved');
    await screenshot(page, 'status-page-topology-probe');

    await page.click('#provider-save');
    const created = await outcome(page, 'Created provider "west"');
    assert.equal(created.reload, 'applied');
    assert.ok(created.generation > 0);
    assert.match(created.text, /reload applied/);
    await page.waitForSelector('tr[data-topology-provider="west"][data-managed-by="database"]', { timeout: 15_000 });
    assert.equal(await page.locator('tr[data-topology-provider="west"] [data-key="api_key"]').textContent(), '{env: WEST_KEY}');
    assert.ok(!(await page.content()).includes(WEST_SECRET), 'the key shows as its reference, never its value');

    // A route through the form, then an OpenAI SDK's chat served by the new provider.
    await page.click('#new-route');
    await page.fill('#route-form [name="id"]', 'w');
    await page.fill('#route-candidates tr:nth-child(1) [name="provider"]', 'west');
    await page.click('#route-save');
    const route = await outcome(page, 'Created route "w"');
    assert.equal(route.reload, 'applied');
    assert.ok(route.generation > created.generation, 'each write is a reload of its own');
    assert.deepEqual(await servedBy('w'), { status: 200, provider: 'west' });

    // Its candidates and weights, edited: west 1, east 3, weighted.
    await page.waitForSelector('tr[data-topology-route="w"] button[data-action="edit"]', { timeout: 15_000 });
    await page.click('tr[data-topology-route="w"] button[data-action="edit"]');
    await page.waitForSelector('#route-form:not([hidden])');
    assert.equal(await page.inputValue('#route-candidates tr:nth-child(1) [name="provider"]'), 'west');
    await page.selectOption('#route-form [name="policy"]', 'weighted');
    await page.click('#add-candidate');
    await page.fill('#route-candidates tr:nth-child(2) [name="provider"]', 'east');
    await page.fill('#route-candidates tr:nth-child(2) [name="weight"]', '3');
    await page.click('#route-save');
    const edited = await outcome(page, 'Changed route "w"');
    assert.equal(edited.reload, 'applied');
    assert.ok(edited.generation > route.generation);
    await page.waitForSelector('tr[data-topology-route="w"] li[data-candidate-provider="east"][data-weight="3"]', { timeout: 15_000 });
    assert.match((await page.locator('tr[data-topology-route="w"]').textContent()) ?? '', /weighted/);
    const stored = await v1(admin, 'GET', 'routes/w', { token: ADMIN_TOKEN });
    assert.equal(stored.body.policy, 'weighted');
    assert.deepEqual(stored.body.candidates, [
      { provider: 'west', weight: 1 },
      { provider: 'east', weight: 3 },
    ]);
    const providers = new Set<string | null>();
    // East weighs 3 of 4: twenty requests all missing it is a chance of 4^-20.
    for (let i = 0; i < 20; i++) providers.add((await servedBy('w')).provider);
    assert.ok(providers.has('east'), `the edited route serves through east too (served by ${[...providers].join(', ')})`);
    await screenshot(page, 'status-page-topology-edited-route');

    // Both deleted from their rows: the route first (the provider is still in it until then).
    await page.click('tr[data-topology-route="w"] button[data-action="delete"]');
    const routeGone = await outcome(page, 'Deleted route "w"');
    assert.equal(routeGone.reload, 'applied');
    assert.ok(routeGone.generation > edited.generation);
    await page.waitForFunction(() => document.querySelector('tr[data-topology-route="w"]') === null, undefined, { timeout: 15_000 });
    assert.equal((await servedBy('w')).status, 404);
    await page.click('tr[data-topology-provider="west"] button[data-action="delete"]');
    const providerGone = await outcome(page, 'Deleted provider "west"');
    assert.equal(providerGone.reload, 'applied');
    assert.ok(providerGone.generation > routeGone.generation);
    await page.waitForFunction(() => document.querySelector('tr[data-topology-provider="west"]') === null, undefined, {
      timeout: 15_000,
    });
    assert.equal((await v1(admin, 'GET', 'providers/west', { token: ADMIN_TOKEN })).status, 404);
    assert.deepEqual(unexpected(errors), []);
  });

  it("shows the config file's provider and route as read-only, with why, and offers them no change", async () => {
    const { page, errors } = await signedIn();
    await page.waitForSelector('tr[data-topology-route="m"]', { timeout: 15_000 });
    for (const row of ['tr[data-topology-provider="east"]', 'tr[data-topology-route="m"]']) {
      assert.equal(await page.locator(row).getAttribute('data-managed-by'), 'config');
      assert.equal(await page.locator(`${row} button`).count(), 0, `${row} has no edit or delete`);
      assert.match(
        (await page.locator(`${row} [data-readonly]`).textContent()) ?? '',
        /read-only: it is the config file’s; change it there/,
      );
    }
    assert.equal(await page.locator('tr[data-topology-provider="east"] td').nth(2).textContent(), east.baseUrl);
    assert.equal(await page.locator('tr[data-topology-route="m"] li[data-candidate-provider="east"]').count(), 1);
    const price = (await page.locator('tr[data-topology-price="m"]').allTextContents()).join(' ');
    assert.match(price, /0\.15 USD.*0\.6 USD.*config file/);
    assert.doesNotMatch((await page.locator('#topology-section').textContent()) ?? '', /null|undefined/, 'no part left unshown says so');
    assert.deepEqual(unexpected(errors), []);
  });

  it("shows a refused write's message and each path at fault: a route naming a missing provider, a provider's bad field", async () => {
    const { page, errors } = await signedIn();
    await page.click('#new-route');
    await page.fill('#route-form [name="id"]', 'broken');
    await page.fill('#route-candidates tr:nth-child(1) [name="provider"]', 'nowhere');
    await page.click('#route-save');
    await page.waitForSelector('#topology-problem:not([hidden])[data-code="conflict"]', { timeout: 15_000 });
    assert.equal(await page.getAttribute('#topology-problem', 'data-status'), '409');
    assert.equal(await page.locator('#topology-problem li[data-path="routing.routes.broken.candidates[0].provider"]').count(), 1);
    await waitForText(page, '#topology-problem', 'Creating route "broken": refused');
    await waitForText(page, '#topology-problem', 'unknown provider "nowhere"');
    assert.doesNotMatch((await page.locator('#topology-problem').textContent()) ?? '', /null|undefined/);
    assert.ok(await page.locator('#route-form').isVisible(), 'the form stays open to be corrected');
    assert.equal((await v1(admin, 'GET', 'routes/broken', { token: ADMIN_TOKEN })).status, 404, 'nothing was written');
    await screenshot(page, 'status-page-topology-refused-route');
    await page.click('#route-cancel');

    await page.click('#new-provider');
    await page.fill('#provider-form [name="id"]', 'odd');
    await page.fill('#provider-form [name="base_url"]', 'not a url');
    await page.fill('#provider-form [name="other"]', '{"timeout_ms": -5}');
    await page.click('#provider-save');
    await page.waitForSelector('#topology-problem:not([hidden])[data-code="invalid_request"]', { timeout: 15_000 });
    assert.equal(await page.locator('#topology-problem li[data-path="base_url"]').count(), 1);
    assert.equal(await page.locator('#topology-problem li[data-path="timeout_ms"]').count(), 1);
    assert.equal((await v1(admin, 'GET', 'providers/odd', { token: ADMIN_TOKEN })).status, 404, 'nothing was written');

    // The probe's own refusal: a cloud metadata address is never probed, and the form says why.
    await page.fill('#provider-form [name="base_url"]', 'http://169.254.169.254/v1');
    await page.fill('#provider-form [name="other"]', '{}');
    await page.click('#provider-test');
    await page.waitForSelector('#probe-result[data-reachable="refused"]', { timeout: 15_000 });
    await waitForText(page, '#probe-result', '400 probe_address_not_allowed');
    await waitForText(page, '#probe-result', '169.254.169.254');
    assert.deepEqual(unexpected(errors, [400, 409]), []);
  });

  it('refuses an edit of a provider changed meanwhile (412) and tells the user to reload the view; after that it saves', async () => {
    const south = await r.startMock({ name: 'south' });
    const made = await v1(admin, 'POST', 'providers', {
      token: ADMIN_TOKEN,
      body: { id: 'south', type: 'openai', base_url: south.baseUrl, timeout_ms: 5000 },
    });
    assert.equal(made.status, 201, made.text);
    const { page, errors } = await signedIn();
    await page.waitForSelector('tr[data-topology-provider="south"] button[data-action="edit"]', { timeout: 15_000 });
    await page.click('tr[data-topology-provider="south"] button[data-action="edit"]');
    await page.waitForSelector('#provider-form:not([hidden])');
    assert.equal(await page.inputValue('#provider-form [name="base_url"]'), south.baseUrl);
    assert.deepEqual(JSON.parse(await page.inputValue('#provider-form [name="other"]')), { timeout_ms: 5000 });
    // A saved provider is tested from its form too, as it stands there.
    await page.click('#provider-test');
    await page.waitForSelector('#probe-result[data-reachable="true"]', { timeout: 15_000 });
    await waitForText(page, '#probe-result', 'Test of south (not saved)');
    await page.fill('#provider-form [name="other"]', '{"timeout_ms": 5001}');
    await waitForText(page, '#probe-result [data-field="stale"]', 'The form changed since this test: test again.');

    // Someone else changes it after the form read it.
    const meanwhile = await v1(admin, 'PATCH', 'providers/south', { token: ADMIN_TOKEN, body: { timeout_ms: 6000 }, ifMatch: '"1"' });
    assert.equal(meanwhile.status, 200, meanwhile.text);

    await page.fill('#provider-form [name="other"]', '{"timeout_ms": 7000}');
    await page.click('#provider-save');
    await page.waitForSelector('#topology-problem:not([hidden])[data-status="412"]', { timeout: 15_000 });
    await waitForText(page, '#topology-problem [data-field="stale"]', 'It changed since this view read it');
    assert.equal((await v1(admin, 'GET', 'providers/south', { token: ADMIN_TOKEN })).body.timeout_ms, 6000, 'not overwritten');

    await page.click('#topology-problem button[data-action="reload-view"]');
    await page.waitForFunction(() => (document.querySelector('#topology-problem') as unknown as { hidden: boolean }).hidden, undefined, {
      timeout: 15_000,
    });
    await page.waitForFunction(
      () => ((document.querySelector('#provider-form [name="other"]') as unknown as { value: string }).value ?? '').includes('6000'),
      undefined,
      { timeout: 15_000 },
    );
    await page.fill('#provider-form [name="other"]', '{"timeout_ms": 7000}');
    await page.click('#provider-save');
    const changed = await outcome(page, 'Changed provider "south"');
    assert.equal(changed.reload, 'applied');
    assert.equal((await v1(admin, 'GET', 'providers/south', { token: ADMIN_TOKEN })).body.timeout_ms, 7000);
    await page.click('tr[data-topology-provider="south"] button[data-action="delete"]');
    await outcome(page, 'Deleted provider "south"');
    assert.deepEqual(unexpected(errors, [412]), []);
  });

  it('offers a read-only token no change: no new, edit or delete, and says so', async () => {
    const made = await v1(admin, 'POST', 'providers', {
      token: ADMIN_TOKEN,
      body: { id: 'readable', type: 'openai', base_url: east.baseUrl },
    });
    assert.equal(made.status, 201, made.text);
    const { page, errors } = await signedIn(READER_TOKEN);
    await page.waitForSelector('tr[data-topology-provider="readable"]', { timeout: 15_000 });
    assert.equal(await page.locator('#new-provider').isHidden(), true);
    assert.equal(await page.locator('#new-route').isHidden(), true);
    assert.equal(await page.locator('#topology button').count(), 0);
    assert.match((await page.locator('#topology-hint').textContent()) ?? '', /read-only: nothing can be changed from here/);
    assert.equal((await v1(admin, 'DELETE', 'providers/readable', { token: ADMIN_TOKEN })).status, 204);
    assert.deepEqual(unexpected(errors), []);
  });

  it('under database.topology: file, offers an admin no new provider or route, and says the config file holds them all', async () => {
    const fileDb = sqliteDatabase();
    const fileGw = await r.startGw(
      baseConfig(
        { east: east.baseUrl },
        { m: { candidates: [{ provider: 'east' }] } },
        { server: { admin_token: { env: 'ADMIN_TOKEN' } }, database: { url: fileDb.url, topology: 'file' } },
      ),
      { env: { ADMIN_TOKEN } },
    );
    try {
      const { page, errors } = await signedIn(ADMIN_TOKEN, fileGw.adminUrl as string);
      await waitForText(page, '#topology-hint', 'database.topology: file; every object is the config file’s, read-only here');
      assert.equal(await page.locator('#new-provider').isHidden(), true);
      assert.equal(await page.locator('#new-route').isHidden(), true);
      assert.equal(await page.locator('#topology button').count(), 0);
      assert.equal(await page.locator('tr[data-topology-provider="east"]').getAttribute('data-managed-by'), 'config');
      assert.deepEqual(unexpected(errors), []);
    } finally {
      await fileGw.stop();
      await fileDb.drop();
    }
  });
});
