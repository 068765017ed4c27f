import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { checkConfig } from '../../src/config/index.js';
import { type ParsedOverlay, parseOverlay } from '../../src/contract/index.js';
import { buildGeneration, type Generation } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';
import { renderOverlay } from '../../src/publisher/index.js';
import { candidatesOf } from '../../src/routing/index.js';
import { candidate, legacyOverlay } from '../support/overlay.js';

// Where each candidate runs and processes data (ADR 0043), as the generation holds it: every
// candidate shares its provider's one zone set (built once per generation), and its region
// is its site's when the overlay carries one (the publisher renders it from the inventory),
// else its provider's. Zones always come from the provider.

const pools = new PoolRegistry();
after(() => pools.destroyAll());

function build(document: Record<string, unknown>, overlay?: string): Generation {
  const checked = checkConfig(document, 'hash');
  assert.ok(checked.ok, JSON.stringify(checked));
  let parsed: ParsedOverlay | undefined;
  if (overlay !== undefined) {
    const result = parseOverlay(overlay);
    assert.ok(result.ok, JSON.stringify(result));
    parsed = result.overlay;
  }
  const built = buildGeneration({
    config: checked.config,
    sourceHash: 'hash',
    number: 1,
    env: {},
    poolFor: (spec) => pools.acquire(spec),
    ...(parsed === undefined ? {} : { overlay: parsed }),
  });
  assert.ok(built.ok, JSON.stringify(built));
  return built.generation;
}

const providers = {
  fra: { type: 'openai', base_url: 'http://127.0.0.1:9101/v1', zones: ['eu', 'gdpr'], region: 'eu-central-1' },
  lab: { type: 'openai', base_url: 'http://127.0.0.1:9102/v1' },
};

describe('candidates carry their provider zones and a region', () => {
  it('static routes: one zone set per provider, shared by its candidates; an unlabelled provider has none', () => {
    const gen = build({
      server: { listen: '127.0.0.1:0' },
      providers,
      routing: {
        routes: {
          a: { candidates: [{ provider: 'fra' }, { provider: 'lab' }] },
          b: { candidates: [{ provider: 'fra' }] },
        },
      },
    });
    const [fraA, labA] = [...candidatesOf(gen.routes.a!)];
    const [fraB] = [...candidatesOf(gen.routes.b!)];
    assert.deepEqual([...(fraA?.zones ?? [])], ['eu', 'gdpr']);
    assert.equal(fraA?.zones, fraB?.zones, 'one set per provider, not per candidate');
    assert.equal(fraA?.region, 'eu-central-1');
    assert.equal(labA?.zones, null);
    assert.equal(labA?.region, null);
  });

  it("overlay routes: a candidate's own region (its site's) wins over its provider's; a malformed one is ignored", () => {
    const overlay = JSON.parse(legacyOverlay()) as { candidates: unknown[] };
    overlay.candidates = [
      candidate('m', 'fra', { site: 'frankfurt-1', region: 'eu-central-1b' }),
      candidate('m', 'lab', { site: 'lab-1', region: 42 }),
    ];
    const gen = build(
      { server: { listen: '127.0.0.1:0' }, providers, routing: { overlay: { file: '/nonexistent/overlay.json' } } },
      JSON.stringify(overlay),
    );
    const [fra, lab] = [...candidatesOf(gen.routes.m!)];
    assert.equal(fra?.region, 'eu-central-1b');
    assert.deepEqual([...(fra?.zones ?? [])], ['eu', 'gdpr']);
    assert.equal(lab?.region, null, 'a region that is not a string is ignored, as an unknown field');
  });

  it('the publisher renders each candidate with its site region from the inventory', () => {
    const rendered = renderOverlay({
      network: 'n',
      gateway: 'g',
      namespace: 'ns',
      local_site: 'frankfurt-1',
      providers: [{ cluster: 'fra', site: 'frankfurt-1', region: 'eu-central-1', models: ['m'], tools: [], state: 'active', weight: 1 }],
    });
    assert.equal(rendered.payload.candidates[0]?.region, 'eu-central-1');
  });
});
