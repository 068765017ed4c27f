import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, configText } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';

// A large config reloaded under traffic (ADR 0015, ADR 0021). Its parse runs off the event loop,
// so requests keep being answered meanwhile; a file over server.max_config_bytes is refused
// by size before any parsing. "Within 1 s" is a bound that catches a stall, not a timing.

const resources = fileResources('switchyard-large-config-');
const CAP = 1024 * 1024;

let east: MockProvider;
let gw: GatewayProcess;
let good: Record<string, unknown>;

before(async () => {
  east = await resources.startMock({ name: 'east' });
  good = baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }, { server: { max_config_bytes: CAP } });
  gw = await resources.startGw(good);
});

/** The good config plus `routes` more models, as YAML text (one route per line). */
function withManyRoutes(routes: number): string {
  let text = configText(good);
  text = text.replace(/\n$/, '');
  const lines: string[] = [];
  for (let i = 0; i < routes; i += 1) lines.push(`    bulk-${i}: { candidates: [ { provider: east } ] }`);
  // configText writes routing.routes last among routing's keys; append under it.
  return text.replace(/( {2}routes:\n)/, `$1${lines.join('\n')}\n`);
}

/** Requests every 100 ms while `work` runs; returns the slowest answer's time. */
async function slowestDuring(work: Promise<unknown>): Promise<number> {
  let slowest = 0;
  let running = true;
  const traffic = (async () => {
    while (running) {
      const started = performance.now();
      const r = await postChat(gw.url, chatBody('m'));
      assert.equal(r.status, 200, r.text);
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  await work;
  running = false;
  await traffic;
  return slowest;
}

describe('a large config reloaded under traffic', () => {
  it('a config near server.max_config_bytes of many keys is parsed off the event loop: it applies, and requests meanwhile answer within 1 s', async () => {
    const text = withManyRoutes(18_000);
    assert.ok(text.length > CAP * 0.7 && text.length < CAP, `${text.length} bytes`);
    writeFileSync(gw.configPath, text);
    let result: Awaited<ReturnType<typeof adminReload>> | undefined;
    const slowest = await slowestDuring(
      adminReload(gw.adminUrl!).then((r) => {
        result = r;
      }),
    );
    assert.equal(result?.status, 200, result?.text);
    assert.equal(result?.body.result, 'applied');
    assert.ok(slowest < 1000, `a request took ${Math.round(slowest)} ms during the reload`);
    const bulk = await postChat(gw.url, chatBody('bulk-17999'));
    assert.equal(bulk.status, 200, 'the new routes serve');
  });

  it('a 20 MB config is refused by size before any parsing, naming the limit; requests meanwhile answer within 1 s', async () => {
    writeFileSync(gw.configPath, `${configText(good)}\n# ${'x'.repeat(20 * 1024 * 1024)}\n`);
    let result: Awaited<ReturnType<typeof adminReload>> | undefined;
    const slowest = await slowestDuring(
      adminReload(gw.adminUrl!).then((r) => {
        result = r;
      }),
    );
    assert.equal(result?.status, 422, result?.text);
    assert.match(result?.text ?? '', /larger than server\.max_config_bytes \(1048576 bytes\)/);
    assert.ok(slowest < 1000, `a request took ${Math.round(slowest)} ms during the reload`);
    writeFileSync(gw.configPath, configText(good));
  });
});
