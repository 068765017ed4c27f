import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminStatus } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, configText, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { metricValue, scrapeMetrics, waitUntil } from '../support/observe.js';

// `server.watch_config` seen from outside: a real gateway process whose config directory
// is busy with another file (as when `serve > gw.log` runs in the config's own folder),
// and the 10 s safety re-check. A re-check that finds nothing new must be counted, but
// must neither fill the reload history nor write info lines.

const RESULTS = ['applied', 'unchanged', 'rejected'] as const;

let east: MockProvider;
let west: MockProvider;
let gw: GatewayProcess;
let writer: ChildProcess | undefined;
const extra = { server: { watch_config: true, watch_debounce_ms: 50 } };

function reloads(metrics: string, trigger: string): number {
  return RESULTS.reduce((n, result) => n + (metricValue(metrics, 'switchyard_reload_total', { trigger, result }) ?? 0), 0);
}

function reloadLogLines(trigger: string): Array<Record<string, unknown>> {
  return gw.logs().filter((l) => l.msg === 'reload' && l.trigger === trigger);
}

describe('config watcher in a busy directory', () => {
  before(async () => {
    [east, west] = await Promise.all([startMockProvider({ name: 'east' }), startMockProvider({ name: 'west' })]);
    gw = await startGatewayProcess(
      baseConfig({ east: east.baseUrl, west: west.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }, extra),
    );
    // Another process appends to a sibling file every 10 ms (bounded: it exits by itself).
    const sibling = join(gw.dir, 'gw.log');
    const script = `const fs = require('node:fs'); let n = 0; const t = setInterval(() => { fs.appendFileSync(${JSON.stringify(sibling)}, 'line ' + (n++) + '\\n'); if (n >= 6000) clearInterval(t); }, 10);`;
    writer = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
    // The config re-check runs every 10 s; wait for the first one (bounded, catches a hang).
    await waitUntil(
      async () => reloads(await scrapeMetrics(gw.url), 'config_recheck') >= 1,
      'the first config re-check is counted',
      30_000,
    ).catch(() => undefined);
  });

  after(async () => {
    writer?.kill();
    await gw?.stop();
    await Promise.all([east, west].map((m) => m?.close()));
  });

  it('the config re-check that finds nothing new is counted as config_recheck, and stays out of the reload history and the info log', async () => {
    const metrics = await scrapeMetrics(gw.url);
    assert.ok(
      (metricValue(metrics, 'switchyard_reload_total', { trigger: 'config_recheck', result: 'unchanged' }) ?? 0) >= 1,
      'switchyard_reload_total{trigger="config_recheck",result="unchanged"} counts the re-check',
    );
    const history = (await adminStatus(gw.adminUrl!)).body.reloads.map((r) => `${r.trigger}:${r.result}`);
    assert.deepEqual(
      history,
      ['startup:applied'],
      'the history still holds the reload that built the serving generation, and nothing routine',
    );
    assert.deepEqual(reloadLogLines('config_recheck'), [], 'no info line for a routine re-check');
  });

  it("a process writing a sibling file in the config's directory never triggers a reload; a change to the config itself still does", async () => {
    const written = statSync(join(gw.dir, 'gw.log')).size;
    assert.ok(written > 1000, `the sibling writer was busy (${written} bytes)`);
    assert.equal(reloads(await scrapeMetrics(gw.url), 'config_watch'), 0, 'no config_watch reload was counted');
    assert.deepEqual(reloadLogLines('config_watch'), []);
    assert.equal((await adminStatus(gw.adminUrl!)).body.generation?.number, 1);

    // The watch is alive: the config file's own change is still applied.
    writeFileSync(
      gw.configPath,
      configText(baseConfig({ east: east.baseUrl, west: west.baseUrl }, { m: { candidates: [{ provider: 'west' }] } }, extra)),
    );
    const applied = await gw.waitForLog((l) => l.msg === 'reload' && l.trigger === 'config_watch' && l.result === 'applied');
    assert.equal(applied.generation, 2);
    const r = await postChat(gw.url, chatBody('m'));
    assert.equal(r.headers.get('x-switchyard-provider'), 'west');
  });
});
