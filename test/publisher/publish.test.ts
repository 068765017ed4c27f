import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseOverlay } from '../../src/contract/index.js';
import { type Output, parseInventory, publishOverlay, readState, renderOverlay, statePathFor } from '../../src/publisher/index.js';

const inventoryText = (weight: number) => `
network: prod
gateway: edge-gw
namespace: ai
local_site: east
providers:
  - { cluster: east, site: east, region: us-east, models: [m], weight: ${weight} }
`;

const options = { producerVersion: '0.0.0-test' };

async function publishWeight(output: Output, weight: number) {
  const inventory = parseInventory(inventoryText(weight));
  return publishOverlay(inventory, renderOverlay(inventory), output, options);
}

function kubelet(): Output & { layout: 'kubelet' } {
  return { layout: 'kubelet', dir: join(mkdtempSync(join(tmpdir(), 'switchyard-publish-')), 'overlay'), key: 'routing-overlay.json' };
}

describe('publishing', () => {
  it('kubelet layout: a timestamped folder, ..data -> it, the key a symlink through ..data, the old folder removed', async () => {
    const out = kubelet();
    await publishWeight(out, 1);
    const first = readlinkSync(join(out.dir, '..data'));
    assert.match(first, /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$/);
    assert.equal(readlinkSync(join(out.dir, 'routing-overlay.json')), join('..data', 'routing-overlay.json'));
    await publishWeight(out, 2);
    const second = readlinkSync(join(out.dir, '..data'));
    assert.notEqual(second, first);
    assert.equal(existsSync(join(out.dir, first)), false, 'the old folder is removed');
    assert.equal(existsSync(join(out.dir, '..data_tmp')), false);
    const parsed = parseOverlay(readFileSync(join(out.dir, 'routing-overlay.json')));
    assert.ok(parsed.ok);
    assert.equal(parsed.overlay.candidates[0]?.trafficWeight, 2);
    assert.equal(readdirSync(out.dir).filter((n) => n.startsWith('..') && lstatSync(join(out.dir, n)).isDirectory()).length, 1);
  });

  it('rename layout: one regular file, replaced whole, no temp file left behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-publish-'));
    const out: Output = { layout: 'rename', file: join(dir, 'routing-overlay.json') };
    await publishWeight(out, 1);
    await publishWeight(out, 3);
    assert.ok(lstatSync(out.file).isFile());
    assert.deepEqual(readdirSync(dir).sort(), ['.routing-overlay.json.publisher-state.json', 'routing-overlay.json']);
  });

  it('writes nothing when the same revision is already published', async () => {
    const out = kubelet();
    const first = await publishWeight(out, 1);
    const data = readlinkSync(join(out.dir, '..data'));
    const again = await publishWeight(out, 1);
    assert.equal(again.result, 'unchanged');
    assert.equal(again.revision, first.revision);
    assert.equal(readlinkSync(join(out.dir, '..data')), data);
  });

  it('raises source_generation monotonically across restarts, from the state file, under one source_uid', async () => {
    const out = kubelet();
    const gens: number[] = [];
    const uids = new Set<string>();
    for (const w of [1, 2, 3, 2]) {
      const r = await publishWeight(out, w); // each call is a fresh run: all it knows is on disk
      assert.equal(r.result, 'written');
      gens.push(r.sourceGeneration as number);
      const parsed = parseOverlay(readFileSync(join(out.dir, 'routing-overlay.json')));
      assert.ok(parsed.ok);
      uids.add(parsed.overlay.provenance?.source_uid as string);
    }
    assert.deepEqual(gens, [1, 2, 3, 4]);
    assert.equal(uids.size, 1);
    assert.equal((await readState(statePathFor(out)))?.sourceGeneration, 4);
  });

  it('continues from the published envelope when the state file is gone, instead of rolling back', async () => {
    const out = kubelet();
    await publishWeight(out, 1);
    await publishWeight(out, 2);
    rmSync(statePathFor(out));
    const r = await publishWeight(out, 3);
    assert.equal(r.sourceGeneration, 3);
  });

  it('a corrupt state file is a clear error naming the field, never a silent reset', async () => {
    const out = kubelet();
    await publishWeight(out, 1);
    const before = readlinkSync(join(out.dir, '..data'));
    writeFileSync(statePathFor(out), '{not json');
    await assert.rejects(publishWeight(out, 2), { code: 'state_invalid', message: /not valid JSON/ });
    writeFileSync(
      statePathFor(out),
      JSON.stringify({
        format: 'switchyard-publisher-state/1',
        source_uid: 'u',
        source_generation: 0,
        revision: 'a'.repeat(64),
        updated_at: 'x',
      }),
    );
    await assert.rejects(publishWeight(out, 2), { code: 'state_invalid', message: /source_generation: must be a whole number > 0/ });
    assert.equal(readlinkSync(join(out.dir, '..data')), before, 'nothing was published');
  });

  it('refuses a kubelet publish over a directory holding a plain file at the key, and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-publish-'));
    await publishWeight({ layout: 'rename', file: join(dir, 'routing-overlay.json') }, 1);
    await assert.rejects(publishWeight({ layout: 'kubelet', dir, key: 'routing-overlay.json' }, 2), {
      code: 'write_failed',
      message: /not a symlink into \.\.data/,
    });
    assert.equal(existsSync(join(dir, '..data')), false);
  });
});
