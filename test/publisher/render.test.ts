import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseOverlay, stableIdFor } from '../../src/contract/index.js';
import { envelopeFor, type Inventory, parseInventory, renderOverlay } from '../../src/publisher/index.js';

const base = `
network: prod
gateway: edge-gw
namespace: ai
local_site: east
local_region: us-east
selection_policy: { mode: roundRobin }
providers:
  - { cluster: far, site: west, region: us-west, models: [m], weight: 5 }
  - { cluster: near-b, site: east-2, region: us-east, models: [m, n] }
  - { cluster: near-a, site: east-3, region: us-east, models: [m] }
  - { cluster: home, site: east, region: us-east, models: [m], credential: { name: east-cred, namespace: ai, key: token } }
  - { cluster: old, site: east, region: us-east, models: [m], state: drain }
  - { cluster: gone, site: east, region: us-east, models: [m], state: withdrawn }
`;

function stamp(inventory: Inventory, rendered: ReturnType<typeof renderOverlay>) {
  return envelopeFor(inventory, rendered, { sourceUid: 'uid-1', sourceGeneration: 1, producerVersion: '0.0.0', renderedAt: new Date(0) });
}

describe('rendering an inventory', () => {
  const inventory = parseInventory(base);
  const rendered = renderOverlay(inventory);
  const m = rendered.payload.candidates.filter((c) => c.name === 'm');

  it('orders each model by admission, then tier, then name, with ranks 0..n-1', () => {
    assert.deepEqual(
      m.map((c) => [c.cluster, c.admission_state, c.selection_tier, c.rank]),
      [
        ['home', 'new_and_existing', 'same_site', 0],
        ['near-a', 'new_and_existing', 'same_region', 1],
        ['near-b', 'new_and_existing', 'same_region', 2],
        ['far', 'new_and_existing', 'cross_region', 3],
        ['old', 'existing_only', 'same_site', 4],
      ],
    );
  });

  it('starts a new selection group wherever admission or tier changes', () => {
    assert.deepEqual(
      m.map((c) => c.selection_group),
      [0, 1, 1, 2, 3],
    );
    assert.deepEqual(
      rendered.payload.candidates.filter((c) => c.name === 'n').map((c) => [c.cluster, c.rank, c.selection_group]),
      [['near-b', 0, 0]],
    );
  });

  it('leaves withdrawn and unhealthy providers out, and keeps drained ones for existing sessions only', () => {
    assert.equal(
      m.some((c) => c.cluster === 'gone'),
      false,
    );
    const unhealthy = renderOverlay(inventory, (cluster) => cluster !== 'home').payload.candidates;
    assert.equal(
      unhealthy.some((c) => c.cluster === 'home'),
      false,
    );
    assert.equal(m.find((c) => c.cluster === 'old')?.admission_state, 'existing_only');
  });

  it('gives each candidate the FNV-1a stable id of kind/name/site/cluster and its weight', () => {
    for (const c of rendered.payload.candidates) assert.equal(c.stable_id, stableIdFor('inference_model', c.name, c.site, c.cluster));
    assert.match(m[0]?.stable_id ?? '', /^[0-9a-f]{8}$/);
    assert.equal(m.find((c) => c.cluster === 'far')?.traffic_weight, 5);
    assert.equal(m.find((c) => c.cluster === 'home')?.traffic_weight, 1);
  });

  it('renders an envelope the contract accepts, with a credential reference and no value', () => {
    const env = stamp(inventory, rendered);
    const parsed = parseOverlay(JSON.stringify(env), {
      expectedScope: { network: 'prod', gateway: 'edge-gw', namespace: 'ai', local_site: 'east' },
    });
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
    assert.equal(parsed.overlay.revision, rendered.revision);
    assert.equal(parsed.overlay.selectionMode, 'roundRobin');
    assert.deepEqual(m[0]?.credential, { strategy: 'bearer_token', secretRef: { name: 'east-cred', namespace: 'ai', key: 'token' } });
  });

  it('keeps the revision when only the render time changes, and changes it when routing does', () => {
    const again = renderOverlay(parseInventory(base));
    assert.equal(again.revision, rendered.revision);
    assert.notEqual(renderOverlay(parseInventory(base.replace('weight: 5', 'weight: 6'))).revision, rendered.revision);
  });

  it('renders a valid, empty revision when every provider is withdrawn', () => {
    const all = parseInventory(`
network: prod
gateway: edge-gw
namespace: ai
local_site: east
providers:
  - { cluster: a, site: east, region: us-east, models: [m, n], state: withdrawn }
  - { cluster: b, site: west, region: us-west, models: [m], state: withdrawn }
`);
    assert.ok(all.providers.every((p) => p.state === 'withdrawn'));
    const empty = renderOverlay(all);
    assert.deepEqual(empty.payload.candidates, []);
    const parsed = parseOverlay(JSON.stringify(stamp(all, empty)));
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
    assert.equal(parsed.overlay.candidates.length, 0);
  });
});
