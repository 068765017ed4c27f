import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload, adminStatus } from '../support/admin.js';
import { aliasBombConfig, baseConfig } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';
import { legacyOverlay } from '../support/overlay.js';
import { overlayConfig } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// A rejected reload of a real gateway process is answered, counted and kept in the
// /admin/status history, and the serving generation stays; re-checks that find nothing new
// do not push it out of that history.

const resources = fileResources('switchyard-rejected-reloads-');
let east: MockProvider;

before(async () => {
  east = await resources.startMock({ name: 'east' });
});

describe('a reload onto a YAML alias bomb', () => {
  it('a reload onto a YAML alias bomb answers 422 rejected, is in /admin/status history and counted as rejected; SIGHUP survives it too', async () => {
    const gw = await resources.startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    gw.writeConfig(aliasBombConfig(east.baseUrl));
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.status, 422, reload.text);
    assert.equal(reload.body.result, 'rejected', reload.text);
    assert.ok(
      reload.body.errors.some((e) => /alias/i.test(e.message)),
      reload.text,
    );

    gw.child.kill('SIGHUP');
    await gw.waitForLog((l) => l.msg === 'reload' && l.trigger === 'sighup');

    const status = await adminStatus(gw.adminUrl!);
    const history = status.body.reloads.map((r) => `${r.trigger}:${r.result}`);
    assert.ok(history.includes('admin:rejected'), JSON.stringify(history));
    assert.ok(history.includes('sighup:rejected'), JSON.stringify(history));
    assert.equal(status.body.generation?.number, 1);
    const metrics = await scrapeMetrics(gw.url);
    assert.equal(metricValue(metrics, 'switchyard_reload_total', { trigger: 'admin', result: 'rejected' }), 1);
    assert.equal((await postChat(gw.url, chatBody('m'))).status, 200, 'still serving');
  });
});

// ---------------------------------------------------------------------------------------

describe('safety-net re-checks that find nothing new stay out of the reload history', () => {
  it('with recheck_ms 100, a rejected admin reload is still in /admin/status history after more than 20 re-checks', async () => {
    const dir = resources.tempDir();
    const file = join(dir, 'routing-overlay.json');
    writeFileSync(file, legacyOverlay('m'));
    const gw = await resources.startGw(
      overlayConfig({ east: east.baseUrl }, { file, reload: { enabled: true, debounce_ms: 50, recheck_ms: 100 } }),
      { dir },
    );
    gw.writeConfig('providers: [');
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.body.result, 'rejected', reload.text);

    // More re-checks than the history holds (20): counted where the counter shows them,
    // else bounded by the 100 ms re-check period.
    const rechecks = async (): Promise<number> => {
      const text = await scrapeMetrics(gw.url);
      return ['applied', 'unchanged', 'rejected'].reduce(
        (n, result) => n + (metricValue(text, 'switchyard_reload_total', { trigger: 'overlay_recheck', result }) ?? 0),
        0,
      );
    };
    for (let i = 0; i < 60 && (await rechecks()) < 25; i++) await delay(50);
    if ((await rechecks()) < 25) await delay(1500);

    const status = await adminStatus(gw.adminUrl!);
    const history = status.body.reloads.map((r) => `${r.trigger}:${r.result}`);
    assert.ok(
      history.includes('admin:rejected'),
      `the rejected admin reload fell out of the history: ${JSON.stringify([...new Set(history)])}`,
    );
    assert.ok(!history.includes('overlay_recheck:unchanged'), JSON.stringify([...new Set(history)]));
  });
});
