import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, waitUntil } from '../support/observe.js';
import { legacyOverlay } from '../support/overlay.js';
import { overlayConfig, writeByRename } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// Which settings a reload applies and which wait for a restart, seen from outside a real
// gateway process: a provider's max_connections takes effect at once; routing.overlay.file
// is restart-only (a warning, and the start-up file keeps being read).

const resources = fileResources('switchyard-reload-settings-');
let east: MockProvider;

before(async () => {
  east = await resources.startMock({ name: 'east' });
});

async function servedModels(gw: GatewayProcess): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/models`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as { data: Array<{ id: string }> };
  return body.data.map((d) => d.id).sort();
}

describe('a reload that raises max_connections takes effect', () => {
  it('after max_connections goes from 1 to 8, four concurrent requests all reach the provider before any is answered', async () => {
    const slow = await resources.startMock({ name: 'slow' });
    const config = (n: number): Record<string, unknown> => {
      const c = baseConfig({ slow: slow.baseUrl }, { m: { candidates: [{ provider: 'slow' }] } });
      (c.providers as Record<string, Record<string, unknown>>).slow!.max_connections = n;
      return c;
    };
    const gw = await resources.startGw(config(1));
    gw.writeConfig(config(8));
    const reload = await adminReload(gw.adminUrl!);
    assert.equal(reload.status, 200, reload.text);
    assert.equal(reload.body.result, 'applied', reload.text);

    // Every request hangs at the provider: with one connection only the first can arrive.
    slow.reset();
    slow.addFault({ mode: 'hang', count: 4 });
    let answered = 0;
    const replies = [1, 2, 3, 4].map(() =>
      postChat(gw.url, chatBody('m')).then(
        (r) => {
          answered += 1;
          return r.status;
        },
        () => {
          answered += 1;
          return 0;
        },
      ),
    );
    // Either all four arrive, or (one connection) the first times out at timeout_ms and is answered.
    await waitUntil(() => chatCount(slow) >= 4 || answered > 0, 'four requests at the provider, or one answered', 15_000);
    const arrived = chatCount(slow);
    const answeredBefore = answered;
    // Closing the mock ends the hanging requests.
    await slow.close();
    await Promise.all(replies);
    assert.equal(
      arrived,
      4,
      `only ${arrived} of 4 requests reached the provider (answered before that: ${answeredBefore}); max_connections 8 was not applied`,
    );
    assert.equal(answeredBefore, 0);
  });
});

// ---------------------------------------------------------------------------------------

describe('routing.overlay.file is restart-only', () => {
  it('a reload that changes routing.overlay.file warns about it and keeps reading the start-up file', async () => {
    const dir = resources.tempDir();
    mkdirSync(join(dir, 'a'));
    mkdirSync(join(dir, 'b'));
    const fileA = join(dir, 'a', 'routing-overlay.json');
    const fileB = join(dir, 'b', 'routing-overlay.json');
    writeFileSync(fileA, legacyOverlay('from-a-1'));
    writeFileSync(fileB, legacyOverlay('from-b-1'));
    const config = (file: string): Record<string, unknown> => overlayConfig({ east: east.baseUrl }, { file });
    const gw = await resources.startGw(config(fileA), { dir });
    assert.deepEqual(await servedModels(gw), ['from-a-1']);

    gw.writeConfig(config(fileB));
    const reload = await adminReload(gw.adminUrl!);
    assert.ok(
      reload.body.warnings.some((w) => w.includes('routing.overlay.file')),
      `a warning names routing.overlay.file: ${reload.text}`,
    );
    assert.deepEqual(await servedModels(gw), ['from-a-1'], 'the new file is not served');

    // Edits to the other file are not applied; edits to the start-up file are.
    writeByRename(fileB, legacyOverlay('from-b-2'));
    writeByRename(fileA, legacyOverlay('from-a-2'));
    let models: string[] = [];
    await waitUntil(async () => {
      models = await servedModels(gw);
      return models.includes('from-a-2');
    }, 'the edit to the start-up file is served').catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; serving: ${JSON.stringify(models)}`);
    });
    assert.deepEqual(models, ['from-a-2']);
  });
});
