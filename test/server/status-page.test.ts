import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser, Page } from 'playwright-core';
import { adminReload } from '../support/admin.js';
import { browserMissing, launchBrowser, openPage, screenshot, waitForText } from '../support/browser.js';
import { baseConfig } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { catalogsListed, twoServerConfig } from '../support/mcp.js';
import { candidate, envelope } from '../support/overlay.js';
import { overlayConfig, revisionOf, writeByRename } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// The status page in a real browser (ADR 0017): Debian's chromium driven by playwright-core,
// against real gateway processes and real mock providers. Everything is read from the page
// as a person would see it, while the gateway changes under it: no page reload, no console
// error. Screenshots land in test-results/ for a person to look at.

// What the functions run inside the page use (this project's tsconfig has no DOM library).
declare const document: { querySelector(selector: string): { textContent: string | null } | null };
declare const window: Record<string, unknown>;
declare function getComputedStyle(e: unknown): { backgroundColor: string };

const missing = browserMissing();
const r = fileResources('switchyard-status-page-');
let browser: Browser | null = null;

before(async () => {
  if (missing === null) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

// Assembled at run time so that no key-shaped literal sits in the repository.
const API_KEY = `sk-${'statuspageTEST0123456789abcdef'}`;
const ADMIN_TOKEN = `tok-${'statuspageADMIN0123456789'}`;

async function text(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).first().textContent()) ?? '';
}

/** Marks the document: the mark survives only if the page is never reloaded. */
async function markDocument(page: Page): Promise<void> {
  await page.evaluate(() => {
    window.statusPageMark = true;
  });
}

async function stillTheSameDocument(page: Page): Promise<boolean> {
  return page.evaluate(() => window.statusPageMark === true);
}

/** The badge colour class inside a table cell, e.g. 'red'. */
async function badgeColour(page: Page, selector: string): Promise<string> {
  const cls = (await page.locator(selector).first().getAttribute('class')) ?? '';
  return cls.replace('badge', '').trim();
}

describe('the status page in a browser', { skip: missing ?? false }, () => {
  it('static mode: a reload with another provider and a tripped breaker show up live, without a page reload', async () => {
    const [east, west, south] = await Promise.all([
      r.startMock({ name: 'east' }),
      r.startMock({ name: 'west' }),
      r.startMock({ name: 'south' }),
    ]);
    const config = (gptProvider: string): Record<string, unknown> =>
      baseConfig(
        { east: east.baseUrl, west: west.baseUrl, south: south.baseUrl },
        {
          'gpt-4o': { guardrails: { input: ['secrets'] }, candidates: [{ provider: gptProvider }] },
          'ew-model': { policy: 'ordered', candidates: [{ provider: 'east' }, { provider: 'west' }] },
        },
        {
          log: { level: 'info', access: false },
          guardrails: { secrets: { type: 'secrets', action: 'block' } },
          resilience: { breaker: { open_base_ms: 60_000 } },
          teams: { research: { rate_limit: { rpm: 100 }, quota: { tokens_per_day: 100_000 }, budget: { usd_per_month: 50 } } },
          keys: [{ id: 'research-app', team: 'research', key: { env: 'STATUS_PAGE_KEY' } }],
          pricing: { models: { 'east/gpt-4o': { input_usd_per_mtok: 2000, output_usd_per_mtok: 8000 } } },
        },
      );
    const gw = await r.startGw(config('east'), { env: { STATUS_PAGE_KEY: API_KEY } });
    const auth = { authorization: `Bearer ${API_KEY}` };
    for (let i = 0; i < 6; i++) assert.equal((await postChat(gw.url, chatBody('gpt-4o'), auth)).status, 200);

    const { page, errors } = await openPage(browser as Browser);
    await page.goto(`${gw.adminUrl}/`);
    await waitForText(page, '#generation-number', '#1');
    await waitForText(page, 'table[data-model="gpt-4o"] tr[data-provider="east"]', 'serving');
    await waitForText(page, '#serving-revision', 'static config');
    await waitForText(page, 'tr[data-team="research"]', '6 of 100');
    await waitForText(page, '#governance-store', 'Governance store (in memory): up');
    assert.equal(await page.locator('#tools-section').isHidden(), true, 'no MCP tools, no tools section');
    await waitForText(page, '#guardrails tr[data-guardrail="secrets"]', 'route gpt-4o (input)');
    await markDocument(page);

    // A reload puts south on gpt-4o.
    gw.writeConfig(config('south'));
    const reload = await adminReload(gw.adminUrl as string);
    assert.equal(reload.status, 200, reload.text);
    assert.equal(reload.body.generation, 2);
    await waitForText(page, '#generation-number', '#2');
    await waitForText(page, 'table[data-model="gpt-4o"] tr[data-provider="south"]', 'serving');
    assert.equal(await page.locator('table[data-model="gpt-4o"] tr[data-provider="east"]').count(), 0, 'east left gpt-4o');
    await waitForText(page, '#reloads tbody tr:first-child', 'routes changed: gpt-4o');
    await waitForText(page, 'table[data-model="gpt-4o"] caption', '6 by candidates no longer in this route');
    assert.match(await text(page, '#reloads tbody tr:first-child'), /admin.*applied.*#1 → #2/s);

    // Five failures at east open its breaker: the row turns red.
    east.addFault({ mode: 'status', status: 500, count: 5 });
    for (let i = 0; i < 5; i++) {
      const reply = await postChat(gw.url, chatBody('ew-model'), auth);
      assert.equal(reply.headers.get('x-switchyard-provider'), 'west', reply.text);
    }
    const eastRow = 'table[data-model="ew-model"] tr[data-provider="east"]';
    await page.waitForSelector(`${eastRow}[data-breaker="open"]`, { timeout: 10_000 });
    assert.equal(await badgeColour(page, `${eastRow} .badge[data-state="open"]`), 'red');
    assert.equal(await badgeColour(page, '#providers tr[data-provider="east"] .badge[data-state="open"]'), 'red');
    assert.equal(await badgeColour(page, `table[data-model="ew-model"] tr[data-provider="west"] .badge[data-state="closed"]`), 'green');
    // The red is the page's red, not only a class name.
    const background = await page.locator(`${eastRow} .badge[data-state="open"]`).evaluate((e) => getComputedStyle(e).backgroundColor);
    assert.equal(background, 'rgb(255, 235, 233)');
    await waitForText(page, `${eastRow} td:last-child`, '100 %');
    await waitForText(page, '[data-plot="Request rate"] .plot-now', 'now:');
    assert.ok((await page.locator('[data-plot="Request rate"] polyline').count()) > 0, 'the request rate is plotted');

    assert.ok(await stillTheSameDocument(page), 'the page was never reloaded');
    const html = await page.content();
    assert.ok(!html.includes(API_KEY), 'no API key on the page');
    await screenshot(page, 'status-page-static');
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('overlay mode: asks for the admin token, then shows a new revision, draining and withdrawn candidates, and a rejection', async () => {
    const [east, west] = await Promise.all([r.startMock({ name: 'east' }), r.startMock({ name: 'west' })]);
    const dir = r.tempDir();
    const overlayFile = join(dir, 'routing-overlay.json');
    const first = envelope([candidate('m', 'east'), candidate('m', 'west')], { sourceGeneration: 1 });
    writeFileSync(overlayFile, JSON.stringify(first));
    const gw = await r.startGw(
      overlayConfig(
        { east: east.baseUrl, west: west.baseUrl },
        { file: overlayFile },
        { server: { admin_token: { env: 'STATUS_PAGE_ADMIN' } } },
      ),
      { env: { STATUS_PAGE_ADMIN: ADMIN_TOKEN } },
    );

    // The HTML shell needs no token and holds no data.
    const shell = await fetch(`${gw.adminUrl}/`);
    assert.equal(shell.status, 200);
    const shellText = await shell.text();
    assert.ok(!shellText.includes(revisionOf(first).slice(0, 12)) && !shellText.includes('east'), 'the shell holds no data');
    assert.equal((await fetch(`${gw.adminUrl}/admin/status/page-data`)).status, 401);

    const { page, errors } = await openPage(browser as Browser);
    await page.goto(`${gw.adminUrl}/`);
    await page.waitForSelector('#token-form:not([hidden])');
    assert.equal(await page.locator('#status').isHidden(), true, 'no status before the token');
    await screenshot(page, 'status-page-token');
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#token-form button[type="submit"]');
    await waitForText(page, '#serving-revision', revisionOf(first).slice(0, 12));
    await waitForText(page, '#accepted-revision', 'the same as serving');
    await markDocument(page);

    // A new revision: east drains (existing sessions only), west takes new requests, a
    // candidate on a cluster the gateway does not know is unroutable, and m2 is withdrawn.
    const second = envelope(
      [
        candidate('m', 'east', { admission_state: 'existing_only', selection_group: 0 }),
        candidate('m', 'west', { selection_group: 1 }),
        candidate('m', 'north', { selection_group: 1 }),
        candidate('m2', 'west', { admission_state: 'none' }),
      ],
      { sourceGeneration: 2 },
    );
    writeByRename(overlayFile, JSON.stringify(second));
    await waitForText(page, '#serving-revision', revisionOf(second).slice(0, 12));
    await waitForText(page, '#reloads tbody tr:first-child', 'overlay watch');
    await waitForText(page, '#reloads tbody tr:first-child', 'overlay revision changed');
    const row = (model: string, provider: string): string => `table[data-model="${model}"] tr[data-provider="${provider}"]`;
    await waitForText(page, row('m', 'east'), 'draining');
    assert.equal(await badgeColour(page, `${row('m', 'east')} .badge[data-state="draining"]`), 'amber');
    assert.equal(await badgeColour(page, `${row('m', 'west')} .badge[data-state="serving"]`), 'green');
    assert.equal(await badgeColour(page, `${row('m', 'north')} .badge[data-state="unroutable"]`), 'red');
    assert.equal(await badgeColour(page, `${row('m2', 'west')} .badge[data-state="withdrawn"]`), 'red');
    await waitForText(page, 'table[data-model="m2"] caption', 'no route: 404');

    // A tampered overlay (content changed, digest not) is rejected; the page says why, and
    // the revision it shows stays the serving one.
    const tampered = structuredClone(second) as { overlay: { candidates: Array<Record<string, unknown>> } };
    (tampered.overlay.candidates[1] as Record<string, unknown>).traffic_weight = 7;
    writeByRename(overlayFile, JSON.stringify(tampered));
    await waitForText(page, '#rejection-reason', 'digest_mismatch');
    assert.match(await text(page, '#reloads tbody tr:first-child'), /rejected/);
    assert.match(await text(page, '#serving-revision'), new RegExp(revisionOf(second).slice(0, 12)));

    assert.ok(await stillTheSameDocument(page), 'the page was never reloaded');
    assert.ok(!(await page.content()).includes(ADMIN_TOKEN), 'the token is not written into the page');
    await screenshot(page, 'status-page-overlay');
    // The one expected console error: the first poll's 401, before the token was given.
    assert.deepEqual(
      errors.filter((e) => !e.includes('status of 401')),
      [],
    );
    assert.ok(errors.length <= 1, errors.join('\n'));
    await page.close();
  });

  it('mcp: the tools table lists each tool with its candidates and traffic, and a tool its server withdraws as not offered', async () => {
    const [alpha, bravo] = await Promise.all([
      r.startMock({ name: 'alpha', protocol: 'mcp' }),
      r.startMock({ name: 'bravo', protocol: 'mcp', mcpResponse: 'json' }),
    ]);
    const gw = await r.startGw(twoServerConfig(alpha, bravo));
    await catalogsListed(gw, 2);
    const client = new Client({ name: 'status-page-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', gw.url)));
    try {
      for (let i = 0; i < 2; i++) await client.callTool({ name: 'echo', arguments: { text: `hi ${i}` } });

      const { page, errors } = await openPage(browser as Browser);
      await page.goto(`${gw.adminUrl}/`);
      const row = (tool: string, provider: string): string => `table[data-tool="${tool}"] tr[data-provider="${provider}"]`;
      await waitForText(page, row('echo', 'alpha'), 'serving');
      await waitForText(page, 'table[data-tool="echo"] caption', '2 calls served recently');
      assert.match(
        await text(page, 'table[data-tool="echo"] caption'),
        /^echo — policy ordered, offered to new sessions — 2 calls served recently$/,
      );
      assert.equal(await badgeColour(page, `${row('echo', 'alpha')} .badge[data-state="closed"]`), 'green');
      assert.match(await text(page, `${row('echo', 'alpha')} td:nth-child(8)`), /^2$/);
      assert.match(await text(page, `${row('echo', 'bravo')} td:nth-child(8)`), /^0$/);
      await waitForText(page, row('a_weather', 'alpha'), 'alpha/weather');
      assert.equal(await page.locator('#tools-section').isHidden(), false);
      await waitForText(page, '#tools-window', '1 client session open');
      await waitForText(page, '#providers tr[data-provider="bravo"]', 'mcp');
      assert.equal(await page.locator('#providers tr[data-provider="bravo"] [data-catalog]').getAttribute('data-catalog'), '6');
      await markDocument(page);

      bravo.mcpTools({ remove: ['weather'] });
      await waitForText(page, 'table[data-tool="weather"] caption', 'no server lists it');
      await waitForText(page, `${row('weather', 'bravo')} [data-listed="false"]`, 'not listed by its server');
      assert.equal(await page.locator('#providers tr[data-provider="bravo"] [data-catalog]').getAttribute('data-catalog'), '5');

      assert.ok(await stillTheSameDocument(page), 'the page was never reloaded');
      await screenshot(page, 'status-page-tools');
      assert.deepEqual(errors, []);
      await page.close();
    } finally {
      await client.close();
    }
  });
});
