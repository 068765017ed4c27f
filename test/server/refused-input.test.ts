import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { ReloadResult } from '../../src/server/index.js';
import { adminReload, adminStatusBody } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { configText, startGatewayProcess } from '../support/gateway-process.js';
import { metricValue, scrapeMetrics, waitUntil } from '../support/observe.js';
import { candidate, envelope } from '../support/overlay.js';
import { overlayConfig, reloadLines, waitForReload, writeByRename } from '../support/overlay-gateway.js';

// A refused input left on disk, seen from outside: a real gateway in overlay mode whose
// overlay re-check runs every 100 ms and whose config is watched. The first refusal is
// reported (warn line, history, counter, last_rejection); meeting the same bytes again is a
// routine no-op; new bytes are judged afresh; an explicit reload always reports its verdict.

let east: MockProvider;
let gw: GatewayProcess;
let dir: string;
let overlayFile: string;
let config: Record<string, unknown>;

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  return metricValue(await scrapeMetrics(gw.url), name, labels) ?? 0;
}

async function overlayRechecks(): Promise<number> {
  const text = await scrapeMetrics(gw.url);
  return ['applied', 'unchanged', 'rejected'].reduce(
    (n, result) => n + (metricValue(text, 'switchyard_reload_total', { trigger: 'overlay_recheck', result }) ?? 0),
    0,
  );
}

/** Waits until `n` more overlay re-checks have run (each every 100 ms). */
async function afterRechecks(n: number): Promise<void> {
  const target = (await overlayRechecks()) + n;
  await waitUntil(async () => (await overlayRechecks()) >= target, `${n} more overlay re-checks`);
}

async function history(): Promise<string[]> {
  const reloads = (await adminStatusBody(gw)).reloads as ReloadResult[];
  return reloads.map((r) => `${r.trigger}:${r.result}${r.reason === undefined ? '' : `:${r.reason}`}`);
}

function warnLines(): Array<Record<string, unknown>> {
  return reloadLines(gw).filter((l) => l.result === 'rejected');
}

describe('a refused input left on disk', () => {
  before(async () => {
    east = await startMockProvider({ name: 'east' });
    dir = mkdtempSync(join(tmpdir(), 'switchyard-refused-'));
    mkdirSync(join(dir, 'overlay'));
    overlayFile = join(dir, 'overlay', 'routing-overlay.json');
    writeFileSync(overlayFile, JSON.stringify(envelope([candidate('m', 'east')], { sourceGeneration: 5 })));
    config = overlayConfig(
      { east: east.baseUrl },
      { file: overlayFile, reload: { debounce_ms: 50, recheck_ms: 100 } },
      { server: { watch_config: true, watch_debounce_ms: 50 } },
    );
    gw = await startGatewayProcess(config, { dir });
  });

  after(async () => {
    await gw?.stop();
    await east?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('an overlay refused once is not refused again by every re-check: one warn line, one history entry, the counter and last_rejection.at stay', async () => {
    const from = reloadLines(gw).length;
    writeByRename(overlayFile, JSON.stringify(envelope([candidate('m', 'east'), candidate('other', 'east')], { sourceGeneration: 4 })));
    await waitForReload(gw, from, (l) => l.result === 'rejected' && l.reason === 'rollback', 'the rolled-back overlay is refused');
    const first = (await adminStatusBody(gw)).overlay!.last_rejection!;
    assert.equal(first.reason, 'rollback');
    assert.equal(await metric('switchyard_overlay_reload_total', { result: 'rejected', reason: 'rollback' }), 1);

    await afterRechecks(15);
    assert.equal(
      await metric('switchyard_overlay_reload_total', { result: 'rejected', reason: 'rollback' }),
      1,
      'the re-checks did not count the same refusal again',
    );
    assert.deepEqual((await adminStatusBody(gw)).overlay!.last_rejection, first, "last_rejection keeps the first refusal's time");
    assert.equal(warnLines().length, 1, 'one warn line');
    // Whichever saw the new bytes first, the watch or a re-check (a loaded machine can delay
    // the watch's debounce past the next re-check), there is one entry.
    const refusals = (await history()).filter((h) => h.endsWith(':rejected:rollback'));
    assert.equal(refusals.length, 1, `one history entry: ${refusals.join(', ')}`);
    assert.match(refusals[0] as string, /^overlay_(watch|recheck):/);
    assert.ok(
      (await metric('switchyard_reload_total', { trigger: 'overlay_recheck', result: 'unchanged' })) >= 15,
      'each re-check is counted as unchanged',
    );
    assert.equal((await adminStatusBody(gw)).generation?.number, 1, 'the serving generation stays');
  });

  it('new bytes are judged afresh', async () => {
    const before = (await adminStatusBody(gw)).overlay!.last_rejection!;
    const from = reloadLines(gw).length;
    const tampered = envelope([candidate('m', 'east')], { sourceGeneration: 6 });
    (tampered.overlay as { candidates: unknown[] }).candidates.push(candidate('smuggled', 'east'));
    writeByRename(overlayFile, JSON.stringify(tampered));
    const line = await waitForReload(gw, from, (l) => l.result === 'rejected', 'the tampered overlay is refused');
    assert.notEqual(line.reason, 'rollback');
    const now = (await adminStatusBody(gw)).overlay!.last_rejection!;
    assert.equal(now.reason, line.reason);
    assert.notEqual(now.at, before.at);
    await afterRechecks(5);
    assert.equal(warnLines().length, 2, 'one more warn line, for the new bytes only');
  });

  it('an explicit reload judges the same bytes again and reports them; the re-checks after it stay quiet', async () => {
    const reason = (await adminStatusBody(gw)).overlay!.last_rejection!.reason;
    const counted = await metric('switchyard_overlay_reload_total', { result: 'rejected', reason });
    const reply = await adminReload(gw.adminUrl!);
    assert.equal(reply.body.result, 'rejected', reply.text);
    assert.equal(reply.body.reason, reason);
    assert.equal(await metric('switchyard_overlay_reload_total', { result: 'rejected', reason }), counted + 1);
    assert.equal((await history())[0], `admin:rejected:${reason}`);
    await afterRechecks(5);
    assert.equal(await metric('switchyard_overlay_reload_total', { result: 'rejected', reason }), counted + 1);
  });

  it('a config refused once is refused quietly when the same bytes are written again; different bytes are reported', async () => {
    const broken = 'providers: [';
    const rejectedLines = (): number => reloadLines(gw).filter((l) => l.trigger === 'config_watch' && l.result === 'rejected').length;
    const configWatchReloads = async (): Promise<number> => {
      const text = await scrapeMetrics(gw.url);
      return ['applied', 'unchanged', 'rejected'].reduce(
        (n, result) => n + (metricValue(text, 'switchyard_reload_total', { trigger: 'config_watch', result }) ?? 0),
        0,
      );
    };
    // Written by rename, so that no reload can read a half-written (empty) file in between.
    writeByRename(gw.configPath, broken);
    await waitUntil(() => rejectedLines() === 1, 'the broken config is refused');
    for (let i = 0; i < 3; i++) {
      const seen = await configWatchReloads();
      writeByRename(gw.configPath, broken);
      await waitUntil(async () => (await configWatchReloads()) > seen, `rewrite ${i + 1} is looked at`);
    }
    assert.equal(rejectedLines(), 1, 'the same bytes were not refused again');
    assert.equal((await history()).filter((h) => h === 'config_watch:rejected').length, 1);
    assert.ok((await metric('switchyard_reload_total', { trigger: 'config_watch', result: 'unchanged' })) >= 1);

    writeByRename(gw.configPath, `${broken}\n# another attempt\n`);
    await waitUntil(() => rejectedLines() === 2, 'different bytes are judged and reported');
    writeByRename(gw.configPath, configText(config));
  });
});
