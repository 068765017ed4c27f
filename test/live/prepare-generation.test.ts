import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { type Generation, type Preparation, type PrepareInputs, prepareGeneration } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';
import { candidate, envelope } from '../support/overlay.js';

// prepareGeneration is the one path from files to a generation that validate, start-up and
// reload share. These tests drive it directly: what it refuses relative to the serving
// generation, when identical bytes are a no-op, and which warnings it returns.

const dir = mkdtempSync(join(tmpdir(), 'switchyard-prepare-'));
const pools = new PoolRegistry();
after(async () => {
  await pools.destroyAll();
  rmSync(dir, { recursive: true, force: true });
});

let files = 0;
function configFile(config: object): string {
  const path = join(dir, `config-${files++}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

const provider = { type: 'openai', base_url: 'http://127.0.0.1:9/v1' };

function staticConfig(server: object = {}, route: object = { candidates: [{ provider: 'east' }] }): Record<string, unknown> {
  return { server: { listen: '127.0.0.1:0', ...server }, providers: { east: provider }, routing: { routes: { m: route } } };
}

function overlayConfig(overlayFile: string): Record<string, unknown> {
  return { server: { listen: '127.0.0.1:0' }, providers: { east: provider }, routing: { overlay: { file: overlayFile } } };
}

function prepare(configPath: string, more: Partial<PrepareInputs> = {}): Promise<Preparation> {
  return prepareGeneration({ configPath, env: {}, serving: null, startupConfig: null, poolFor: (spec) => pools.acquire(spec), ...more });
}

function built(p: Preparation): Extract<Preparation, { outcome: 'built' }> {
  assert.equal(p.outcome, 'built', JSON.stringify(p));
  return p as Extract<Preparation, { outcome: 'built' }>;
}

function rejected(p: Preparation): Extract<Preparation, { outcome: 'rejected' }> {
  assert.equal(p.outcome, 'rejected', JSON.stringify(p));
  return p as Extract<Preparation, { outcome: 'rejected' }>;
}

async function serving(configPath: string): Promise<Generation> {
  return built(await prepare(configPath)).generation;
}

describe('prepareGeneration', () => {
  it('builds generation 1 from a good config with nothing serving, and the next number after a serving one', async () => {
    const path = configFile(staticConfig());
    const first = await serving(path);
    assert.equal(first.number, 1);
    const second = built(await prepare(path, { serving: first, startupConfig: first.config }));
    assert.equal(second.generation.number, 2);
  });

  it('a switch between routes and an overlay is refused relative to the serving generation, never on its own', async () => {
    const overlayFile = join(dir, 'switch-overlay.json');
    writeFileSync(overlayFile, JSON.stringify(envelope([candidate('m', 'east')])));
    const overlayPath = configFile(overlayConfig(overlayFile));
    built(await prepare(overlayPath));
    const first = await serving(configFile(staticConfig()));
    const refused = rejected(await prepare(overlayPath, { serving: first, startupConfig: first.config }));
    assert.deepEqual(
      refused.issues.map((i) => i.path),
      ['routing'],
    );
    assert.match(refused.issues[0]!.message, /takes a restart/);
  });

  it('a reload cannot drop the admin token of a non-loopback listener fixed at start-up, even when it moves admin_listen to loopback', async () => {
    const tokenFile = join(dir, 'admin-token');
    writeFileSync(tokenFile, 'admin-token-value-0123456789\n');
    const first = await serving(configFile(staticConfig({ admin_listen: '0.0.0.0:0', admin_token: { file: tokenFile } })));
    const moved = configFile(staticConfig({ admin_listen: '127.0.0.1:0' }));
    // On its own (validate, or a fresh start) the moved config is fine: loopback needs no token.
    built(await prepare(moved));
    const refused = rejected(await prepare(moved, { serving: first, startupConfig: first.config }));
    assert.deepEqual(refused.issues, [
      {
        path: 'server.admin_token',
        message: 'required: the admin listener started on 0.0.0.0:0, not a loopback address, and a reload cannot remove its token',
      },
    ]);
  });

  it('identical config bytes are a no-op only when asked (watcher triggers); an explicit trigger rebuilds', async () => {
    const path = configFile(staticConfig());
    const first = await serving(path);
    const same = await prepare(path, { serving: first, startupConfig: first.config, unchangedIsNoop: true });
    assert.deepEqual(same, { outcome: 'unchanged', overlayRead: false, read: { config: first.sourceHash, overlay: null } });
    built(await prepare(path, { serving: first, startupConfig: first.config, unchangedIsNoop: false }));
  });

  it('in overlay mode, identical overlay bytes are a no-op; an overlay-only read keeps the serving config', async () => {
    const overlayFile = join(dir, 'same-overlay.json');
    writeFileSync(overlayFile, JSON.stringify(envelope([candidate('m', 'east')])));
    const path = configFile(overlayConfig(overlayFile));
    const first = await serving(path);
    const again = { serving: first, startupConfig: first.config, unchangedIsNoop: true };
    assert.deepEqual(await prepare(path, { ...again, readConfig: false }), {
      outcome: 'unchanged',
      overlayRead: true,
      read: { config: null, overlay: first.overlay?.rawSha256 },
    });
    // Even with the config file gone, an overlay-only read works from the serving config.
    writeFileSync(overlayFile, JSON.stringify(envelope([candidate('m', 'east')], { sourceGeneration: 2 })));
    const next = built(await prepare(join(dir, 'no-such-config.yaml'), { ...again, readConfig: false }));
    assert.equal(next.generation.config, first.config);
  });

  it('a refused overlay carries its contract reason; a revision refused only by the build is still reported as accepted', async () => {
    const overlayFile = join(dir, 'rollback-overlay.json');
    writeFileSync(overlayFile, JSON.stringify(envelope([candidate('m', 'east')], { sourceGeneration: 5 })));
    const path = configFile(overlayConfig(overlayFile));
    const first = await serving(path);
    writeFileSync(overlayFile, JSON.stringify(envelope([candidate('m', 'east')], { sourceGeneration: 4 })));
    const rollback = rejected(await prepare(path, { serving: first, startupConfig: first.config }));
    assert.equal(rollback.overlay?.reason, 'rollback');
    assert.equal(rollback.issues[0]!.path, 'routing.overlay.file');

    const withSecret = configFile({
      ...overlayConfig(overlayFile),
      providers: { east: { ...provider, api_key: { env: 'SWITCHYARD_TEST_PREPARE_UNSET' } } },
    });
    const refused = rejected(await prepare(withSecret));
    assert.equal(refused.overlay, undefined);
    assert.deepEqual(
      refused.issues.map((i) => i.path),
      ['providers.east.api_key'],
    );
    assert.match(refused.acceptedRevision ?? '', /^[0-9a-f]{64}$/);
  });

  it('warns about an ignored weight and an unroutable overlay candidate, and about restart-only keys only when a start-up config is given', async () => {
    const weighted = configFile(staticConfig({}, { policy: 'ordered', candidates: [{ provider: 'east', weight: 2 }] }));
    const alone = built(await prepare(weighted));
    assert.deepEqual(alone.warnings, [
      'routing.routes.m.candidates[0].weight: ignored: policy "ordered" does not use weights (only "weighted" does)',
    ]);

    const first = await serving(configFile(staticConfig({ listen: '127.0.0.1:1' })));
    const reload = built(await prepare(weighted, { serving: first, startupConfig: first.config }));
    assert.ok(
      reload.warnings.some((w) => w.startsWith('server.listen: changed')),
      JSON.stringify(reload.warnings),
    );
    assert.ok(
      reload.warnings.some((w) => w.startsWith('routing.routes.m.candidates[0].weight: ignored')),
      JSON.stringify(reload.warnings),
    );

    const overlayFile = join(dir, 'unroutable-overlay.json');
    writeFileSync(overlayFile, JSON.stringify(envelope([candidate('m', 'east'), candidate('m', 'nowhere')])));
    const overlay = built(await prepare(configFile(overlayConfig(overlayFile))));
    assert.equal(overlay.warnings.length, 1, JSON.stringify(overlay.warnings));
    assert.match(overlay.warnings[0]!, /names cluster "nowhere", which is not a configured provider/);
  });
});
