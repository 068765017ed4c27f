import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { parseConfigText } from '../../src/config/index.js';
import { cacheView } from '../../src/server/cache-view.js';
import { CacheStats } from '../../src/telemetry/index.js';
import { browserMissing, launchBrowser, openPage, screenshot, waitForText } from '../support/browser.js';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// The `cache` section of /admin/status and of the status page's data, and the status page's
// "Response cache" table: which store, which routes cache and how, and per route and team
// the lookups since start, their hit rate and what the hits saved; never a key or a prompt.

const CONFIG = `
server: { listen: "127.0.0.1:0" }
providers:
  east: { type: openai, base_url: "http://127.0.0.1:9/v1" }
cache: { store: memory }
routing:
  routes:
    m: { cache: { mode: exact }, candidates: [ { provider: east } ] }
    s: { cache: { mode: semantic, semantic: { embedding_route: emb } }, candidates: [ { provider: east } ] }
    quiet: { cache: { mode: "off" }, candidates: [ { provider: east } ] }
    closed: { cache: "off", candidates: [ { provider: east } ] }
    emb: { candidates: [ { provider: east } ] }
`;

function parsed(text: string) {
  const p = parseConfigText(text);
  assert.ok(p.ok, JSON.stringify(p));
  return p.config;
}

describe('the cache status section', () => {
  it('names the store and the routes that cache, and per route and team the lookups, hit rate and USD saved since start', () => {
    const stats = new CacheStats();
    stats.record('m', 'platform', 'hit', 1500);
    stats.record('m', 'platform', 'miss', 0, true);
    stats.record('m', 'platform', 'bypass', 0);
    stats.record('m', 'none', 'error', 0);
    assert.deepEqual(cacheView(parsed(CONFIG), stats), {
      store: 'memory',
      routes: { m: 'exact', s: 'semantic' },
      lookups: [
        { route: 'm', team: 'none', lookups: { hit: 0, miss: 0, refresh: 0, bypass: 0, error: 1 }, hit_rate: 0, saved_usd: 0, stored: 0 },
        {
          route: 'm',
          team: 'platform',
          lookups: { hit: 1, miss: 1, refresh: 0, bypass: 1, error: 0 },
          hit_rate: 0.5,
          saved_usd: 0.0015,
          stored: 1,
        },
      ],
    });
  });

  it('is null when no route caches and nothing was looked up, and keeps the lookups of a route a reload turned off', () => {
    const plain = parsed(CONFIG.replace(/cache: \{ mode: (exact|semantic)[^}]*\}( \})?, /g, ''));
    assert.equal(cacheView(plain, new CacheStats()), null);
    const stats = new CacheStats();
    stats.record('m', 'platform', 'hit', 0);
    assert.deepEqual(cacheView(plain, stats)?.routes, {});
    assert.equal(cacheView(plain, stats)?.lookups.length, 1);
  });
});

const r = fileResources('switchyard-cache-status-');
const missing = browserMissing();
let browser: Browser | null = null;
before(async () => {
  if (missing === null) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

describe('the cache section over the admin listener', () => {
  it('/admin/status and the page data name the store and the routes that cache; a gateway without a cache says null', async () => {
    const east = await r.startMock({ name: 'east' });
    const cached = await r.startGw(
      baseConfig(
        { east: east.baseUrl },
        { m: { cache: { mode: 'exact', ttl_s: 60 }, candidates: [{ provider: 'east' }] }, plain: { candidates: [{ provider: 'east' }] } },
      ),
    );
    const plain = await r.startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    for (const path of ['/admin/status', '/admin/status/page-data']) {
      const on = (await (await fetch(`${cached.adminUrl}${path}`)).json()) as { cache: unknown };
      assert.deepEqual(on.cache, { store: 'memory', routes: { m: 'exact' }, lookups: [] }, path);
      const off = (await (await fetch(`${plain.adminUrl}${path}`)).json()) as { cache: unknown };
      assert.equal(off.cache, null, path);
    }
  });

  it('the status page shows a route that caches, then its lookups by team, hit rate and savings; no section without a cache', {
    skip: missing ?? false,
  }, async () => {
    const east = await r.startMock({ name: 'east' });
    const gw = await r.startGw(baseConfig({ east: east.baseUrl }, { m: { cache: { mode: 'exact' }, candidates: [{ provider: 'east' }] } }));
    const { page, errors } = await openPage(browser as Browser);
    // The lookups come from requests the cache answered; here the page's data gains them on the way, as a later poll would bring them.
    let lookups: unknown[] = [];
    await page.route('**/admin/status/page-data', async (route) => {
      try {
        const response = await route.fetch();
        const data = (await response.json()) as { cache: { lookups: unknown[] } | null };
        if (data.cache !== null && lookups.length > 0) data.cache.lookups = lookups;
        await route.fulfill({ response, json: data });
      } catch {
        // The page polls until it is closed: a poll the test's end cut short is no finding.
        await route.abort().catch(() => undefined);
      }
    });
    await page.goto(`${gw.adminUrl}/`);
    await waitForText(page, '#cache-title', 'in memory, this replica');
    await waitForText(page, '#cache tr[data-cache-route="m"]', 'no lookups yet');
    lookups = [
      {
        route: 'm',
        team: 'research',
        lookups: { hit: 3, miss: 1, refresh: 0, bypass: 2, error: 0 },
        hit_rate: 0.75,
        saved_usd: 0.0042,
        stored: 1,
      },
    ];
    await waitForText(page, '#cache tr[data-cache-team="research"]', '75 %');
    const row = page.locator('#cache tr[data-cache-team="research"]');
    assert.equal(await row.locator('td[data-result="hit"]').textContent(), '3');
    assert.equal(await row.locator('td[data-result="miss"]').textContent(), '1');
    assert.match((await row.textContent()) ?? '', /0\.0042 USD/);
    assert.equal(await page.locator('#cache tr:has-text("no lookups yet")').count(), 0, 'the route has its lookups now');
    await screenshot(page, 'status-page-cache');
    await page.close();
    assert.deepEqual(errors, []);

    const plain = await r.startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    const other = await openPage(browser as Browser);
    await other.page.goto(`${plain.adminUrl}/`);
    await waitForText(other.page, '#generation-number', '#1');
    assert.equal(await other.page.locator('#cache-section').isHidden(), true, 'no route caches: no section');
    await other.page.close();
    assert.deepEqual(other.errors, []);
  });
});
