import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseOverlay, stableIdFor } from '../../src/contract/index.js';
import {
  candidatesPerModel,
  candidatesPerTool,
  envelopeFor,
  type Inventory,
  parseInventory,
  renderOverlay,
} from '../../src/publisher/index.js';

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

describe('rendering tools', () => {
  const withTools = `
network: prod
gateway: edge-gw
namespace: ai
local_site: east
local_region: us-east
providers:
  - { cluster: tools-far, site: west, region: us-west, tools: [echo], weight: 3 }
  - { cluster: tools-home, site: east, region: us-east, tools: [search, echo], credential: { name: mcp-cred, namespace: ai, key: token } }
  - { cluster: tools-old, site: east, region: us-east, tools: [echo], state: drain }
  - { cluster: tools-gone, site: east, region: us-east, tools: [echo], state: withdrawn }
  - { cluster: both, site: east-2, region: us-east, models: [search, m], tools: [search] }
`;
  const inventory = parseInventory(withTools);
  const rendered = renderOverlay(inventory);
  const { candidates } = rendered.payload;
  const echo = candidates.filter((c) => c.kind === 'mcp_tool' && c.name === 'echo');

  it('renders one mcp_tool candidate per (provider, tool), ranked and grouped as models are', () => {
    assert.deepEqual(
      echo.map((c) => [c.cluster, c.admission_state, c.selection_tier, c.rank, c.selection_group, c.traffic_weight]),
      [
        ['tools-home', 'new_and_existing', 'same_site', 0, 0, 1],
        ['tools-far', 'new_and_existing', 'cross_region', 1, 1, 3],
        ['tools-old', 'existing_only', 'same_site', 2, 2, 1],
      ],
    );
    assert.deepEqual(echo[0]?.credential, { strategy: 'bearer_token', secretRef: { name: 'mcp-cred', namespace: 'ai', key: 'token' } });
    for (const c of candidates) assert.equal(c.stable_id, stableIdFor(c.kind, c.name, c.site, c.cluster));
  });

  it('orders candidates by (kind, name): every model, then every tool', () => {
    assert.deepEqual(
      candidates.map((c) => `${c.kind} ${c.name} ${c.cluster}`),
      [
        'inference_model m both',
        'inference_model search both',
        'mcp_tool echo tools-home',
        'mcp_tool echo tools-far',
        'mcp_tool echo tools-old',
        'mcp_tool search tools-home',
        'mcp_tool search both',
      ],
    );
  });

  it('keeps a model and a tool of the same name apart: each ranked and grouped among its own kind', () => {
    const search = candidates.filter((c) => c.name === 'search' && c.cluster === 'both');
    assert.deepEqual(
      search.map((c) => [c.kind, c.rank, c.selection_group]),
      [
        ['inference_model', 0, 0],
        ['mcp_tool', 1, 1],
      ],
    );
    assert.notEqual(search[0]?.stable_id, search[1]?.stable_id);
    assert.deepEqual({ ...candidatesPerModel(rendered.payload) }, { m: 1, search: 1 });
    assert.deepEqual({ ...candidatesPerTool(rendered.payload) }, { echo: 3, search: 2 });
  });

  it('renders an envelope with tools that the contract parser accepts, its mcp_tool candidates intact', () => {
    const parsed = parseOverlay(JSON.stringify(stamp(inventory, rendered)), {
      expectedScope: { network: 'prod', gateway: 'edge-gw', namespace: 'ai', local_site: 'east' },
    });
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
    assert.equal(parsed.overlay.revision, rendered.revision);
    assert.deepEqual(
      parsed.overlay.candidates.map((c) => [
        c.kind,
        c.name,
        c.cluster,
        c.stableId,
        c.admissionState,
        c.rank,
        c.selectionGroup,
        c.trafficWeight,
      ]),
      candidates.map((c) => [c.kind, c.name, c.cluster, c.stable_id, c.admission_state, c.rank, c.selection_group, c.traffic_weight]),
    );
    assert.equal(parsed.overlay.candidates.filter((c) => c.kind === 'mcp_tool').length, 5);
  });

  it('renders the same revision whatever order the providers are listed in', () => {
    const lines = withTools.split('\n');
    const head = lines.filter((l) => !l.startsWith('  - '));
    const providers = lines.filter((l) => l.startsWith('  - ')).reverse();
    const reversed = parseInventory([...head, ...providers].join('\n'));
    assert.equal(renderOverlay(reversed).revision, rendered.revision);
  });

  it('leaves the revision of an inventory without tools as it was', () => {
    const modelsOnly = parseInventory(base);
    assert.ok(renderOverlay(modelsOnly).payload.candidates.every((c) => c.kind === 'inference_model'));
    assert.equal(
      renderOverlay(parseInventory(base.replace('models: [m, n]', 'models: [m, n], tools: []'))).revision,
      renderOverlay(modelsOnly).revision,
    );
  });
});
