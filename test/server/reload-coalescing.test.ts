import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { MockProvider } from '../../src/mock/index.js';
import { startGateway } from '../../src/server/index.js';
import { createLogger } from '../../src/telemetry/index.js';
import { legacyOverlay } from '../support/overlay.js';
import { fileResources } from '../support/resources.js';

// Triggers that coalesce in the reload coordinator never lose what an explicit trigger
// asked for. One gateway in-process, so that several triggers can be queued in one tick.

const resources = fileResources('switchyard-coalescing-');
let east: MockProvider;
let west: MockProvider;

before(async () => {
  [east, west] = await Promise.all([resources.startMock({ name: 'east' }), resources.startMock({ name: 'west' })]);
});

describe('coalesced triggers never lose an explicit reload', () => {
  const silent = createLogger({ level: 'silent' });

  it('an admin reload that coalesces behind an overlay event, during an overlay re-check, still re-reads the config', async () => {
    const dir = resources.tempDir();
    const overlayFile = join(dir, 'routing-overlay.json');
    writeFileSync(overlayFile, legacyOverlay('m'));
    const config = (withWest: boolean): string =>
      stringify({
        server: { listen: '127.0.0.1:0' },
        providers: {
          east: { type: 'openai', base_url: east.baseUrl },
          ...(withWest ? { west: { type: 'openai', base_url: west.baseUrl } } : {}),
        },
        routing: { overlay: { file: overlayFile, reload: { enabled: false } } },
      });
    const configPath = join(dir, 'gateway.yaml');
    writeFileSync(configPath, config(false));
    const gw = await startGateway({ configPath, logger: silent });
    resources.addGateway(() => gw.close());
    assert.deepEqual(Object.keys(gw.services.holder.current().providers), ['east']);

    writeFileSync(configPath, config(true)); // the operator adds a provider, then asks for a reload
    const recheck = gw.reload('overlay_recheck'); // the safety-net timer: in flight
    const watch = gw.reload('overlay_watch'); // a file event during it: queued
    const admin = gw.reload('admin'); // POST /admin/reload during it
    const result = await admin;
    assert.ok(
      Object.keys(gw.services.holder.current().providers).includes('west'),
      `the admin caller's reload did not re-read the config: ${JSON.stringify({ trigger: result.trigger, result: result.result })}`,
    );
    assert.equal(result.result, 'applied');
    await Promise.all([recheck, watch]);
  });

  it('an overlay event that coalesces into a queued config_watch reload is applied without waiting for the re-check', async () => {
    const dir = resources.tempDir();
    const overlayFile = join(dir, 'routing-overlay.json');
    writeFileSync(overlayFile, legacyOverlay('m1'));
    const configPath = join(dir, 'gateway.yaml');
    const configText = stringify({
      server: { listen: '127.0.0.1:0' },
      providers: { east: { type: 'openai', base_url: east.baseUrl } },
      routing: { overlay: { file: overlayFile, reload: { enabled: false } } },
    });
    writeFileSync(configPath, configText);
    const gw = await startGateway({ configPath, logger: silent });
    resources.addGateway(() => gw.close());

    // An editor's half-written save: the config event in flight is rejected before it
    // reads the overlay, so only the queued reload can pick up the new revision.
    writeFileSync(configPath, 'providers: [');
    const first = gw.reload('config_watch'); // in flight, rejected
    const queued = gw.reload('config_watch'); // the save completes: queued
    const overlay = gw.reload('overlay_watch'); // the control plane publishes: coalesces into it
    // Still in the same tick: the config is back to the serving bytes, the overlay is new.
    writeFileSync(configPath, configText);
    writeFileSync(overlayFile, legacyOverlay('m2'));
    const [firstResult, , result] = await Promise.all([first, queued, overlay]);
    assert.equal(firstResult.result, 'rejected', 'the reload in flight saw the half-written config');
    assert.deepEqual(
      Object.keys(gw.services.holder.current().routes),
      ['m2'],
      `the overlay change was not applied (the overlay_watch caller got ${result.trigger}/${result.result})`,
    );
    assert.equal(result.result, 'applied');
  });
});
