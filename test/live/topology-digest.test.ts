import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, describe, it } from 'node:test';
import canonicalize from 'canonicalize';
import { checkConfig, type GatewayConfig, parseConfigText } from '../../src/config/index.js';
import { type ParsedOverlay, parseOverlay } from '../../src/contract/index.js';
import { buildGeneration, buildGenerationInSlices, type Generation, topologyDigest, topologyOf } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';
import { candidate, envelope } from '../support/overlay.js';

// The topology digest: the same on every replica that serves the same providers, routes and
// prices, whatever the file's order, the generation's number or the keys; never built from a
// secret's value; different as soon as a route or a price is.

const SECRET = 'sk-digest-test-secret-0123456789';
const OTHER_SECRET = 'sk-digest-test-other-9876543210';

const pools = new PoolRegistry();
after(() => pools.destroyAll());

function doc(): Record<string, any> {
  return {
    server: { listen: '127.0.0.1:0', admin_token: { env: 'ADMIN_TOKEN' } },
    providers: {
      east: { type: 'openai', base_url: 'http://127.0.0.1:9001/v1', api_key: { env: 'EAST_KEY' }, headers: { 'x-org': 'o1' } },
      west: { type: 'anthropic', base_url: 'http://127.0.0.1:9002', api_key: { env: 'WEST_KEY' } },
    },
    routing: {
      routes: {
        'gpt-4o-mini': { policy: 'round_robin', candidates: [{ provider: 'east' }, { provider: 'west', model: 'claude', weight: 2 }] },
        'gpt-4o': { candidates: [{ provider: 'east', model: 'gpt-4o-2024' }] },
      },
    },
    pricing: { models: { 'gpt-4o-mini': { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } } },
    teams: { research: { rate_limit: { rpm: 60 } } },
    keys: [{ id: 'k1', team: 'research', sha256: 'a'.repeat(64) }],
  };
}

const ENV = { EAST_KEY: SECRET, WEST_KEY: SECRET, ADMIN_TOKEN: SECRET };

function config(document: object): GatewayConfig {
  const checked = checkConfig(document, 'hash');
  assert.ok(checked.ok, `the test config is invalid: ${JSON.stringify(checked)}`);
  return checked.config;
}

function generation(document: object, options: { number?: number; at?: string; env?: NodeJS.ProcessEnv } = {}): Generation {
  const built = buildGeneration({
    config: config(document),
    sourceHash: `hash-${options.number ?? 1}`,
    number: options.number ?? 1,
    env: options.env ?? ENV,
    poolFor: (spec) => pools.acquire(spec),
    now: () => new Date(options.at ?? '2026-01-02T03:04:05.000Z'),
  });
  assert.ok(built.ok, `expected a generation: ${JSON.stringify(built)}`);
  return built.generation;
}

/** The same document with every object's keys in reverse order, arrays untouched. */
function reversed(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversed);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .reverse()
      .map((k) => [k, reversed((v as Record<string, unknown>)[k])]),
  );
}

/** RFC 8785 by an independent implementation, hashed. */
function reference(c: GatewayConfig): string {
  return createHash('sha256')
    .update(canonicalize(topologyOf(c, null)) as string)
    .digest('hex');
}

describe('the topology digest', () => {
  it('is the SHA-256 of the RFC 8785 form of providers, routing and pricing', () => {
    const gen = generation(doc());
    assert.match(gen.digest, /^[0-9a-f]{64}$/);
    assert.equal(gen.digest, reference(gen.config));
    assert.deepEqual(Object.keys(topologyOf(gen.config, null)).sort(), ['pricing', 'providers', 'routing']);
  });

  it('does not depend on the order of keys in the file, nor on YAML or JSON', () => {
    const a = generation(doc());
    const b = generation(reversed(doc()) as object);
    assert.equal(b.digest, a.digest);
    const yaml = parseConfigText(
      [
        'pricing: {models: {gpt-4o-mini: {output_usd_per_mtok: 0.6, input_usd_per_mtok: 0.15}}}',
        'routing:',
        '  routes:',
        '    gpt-4o: {candidates: [{model: gpt-4o-2024, provider: east}]}',
        '    gpt-4o-mini: {candidates: [{provider: east}, {weight: 2, provider: west, model: claude}], policy: round_robin}',
        'providers:',
        '  west: {api_key: {env: WEST_KEY}, base_url: "http://127.0.0.1:9002", type: anthropic}',
        '  east: {headers: {x-org: o1}, type: openai, base_url: "http://127.0.0.1:9001/v1", api_key: {env: EAST_KEY}}',
        'server: {listen: "127.0.0.1:0"}',
      ].join('\n'),
      ENV,
    );
    assert.ok(yaml.ok, JSON.stringify(yaml));
    assert.equal(topologyDigest(yaml.config, null), a.digest);
  });

  it('leaves out the generation number, the build time, teams, keys and admin tokens', () => {
    const a = generation(doc());
    const other = doc();
    other.teams = {};
    other.keys = [];
    delete other.server.admin_token;
    const b = generation(other, { number: 7, at: '2027-05-06T07:08:09.000Z' });
    assert.notEqual(b.builtAt, a.builtAt);
    assert.equal(b.digest, a.digest);
  });

  it('an absent map of tool routes or agents is the same as an empty one (a topology read from the database spells them out)', () => {
    const spelled = doc();
    spelled.routing.tools = {};
    spelled.routing.agents = {};
    spelled.routing.tools_from = [];
    assert.equal(topologyDigest(config(spelled), null), generation(doc()).digest);
  });

  it('is built from secret references, never their values', () => {
    const a = generation(doc());
    const b = generation(doc(), { env: { EAST_KEY: OTHER_SECRET, WEST_KEY: OTHER_SECRET, ADMIN_TOKEN: OTHER_SECRET } });
    assert.equal(b.digest, a.digest);
    const hashed = canonicalize(topologyOf(a.config, null)) as string;
    assert.ok(!hashed.includes(SECRET), 'a secret value in what is hashed');
    assert.ok(hashed.includes('EAST_KEY'), 'the reference is hashed');
    // A changed reference is a changed topology.
    const moved = doc();
    moved.providers.east.api_key = { env: 'EAST_KEY_2' };
    assert.notEqual(generation(moved, { env: { ...ENV, EAST_KEY_2: SECRET } }).digest, a.digest);
  });

  it('changes with a price, a route, a candidate order or a provider', () => {
    const base = generation(doc()).digest;
    const price = doc();
    price.pricing.models['gpt-4o-mini'].output_usd_per_mtok = 0.61;
    const route = doc();
    route.routing.routes['gpt-4o'].candidates[0].model = 'gpt-4o-2025';
    const order = doc();
    order.routing.routes['gpt-4o-mini'].candidates.reverse();
    const provider = doc();
    provider.providers.west.base_url = 'http://127.0.0.1:9003';
    const digests = [base, ...[price, route, order, provider].map((d) => generation(d).digest)];
    assert.equal(new Set(digests).size, digests.length, `some change left the digest as it was: ${digests.join(' ')}`);
  });

  it('is the same when 5,000 routes are built in slices as at once, and as the reference form', async () => {
    const big = doc();
    for (let i = 0; i < 5000; i += 1)
      big.routing.routes[`bulk-${i}`] = { candidates: [{ provider: i % 2 === 0 ? 'east' : 'west', weight: 1 + (i % 3) }] };
    const c = config(big);
    const sliced = await buildGenerationInSlices({
      config: c,
      sourceHash: 'h',
      number: 2,
      env: ENV,
      poolFor: (spec) => pools.acquire(spec),
    });
    assert.ok(sliced.ok);
    assert.equal(sliced.generation.digest, reference(c));
    assert.equal(sliced.generation.digest, topologyDigest(config(reversed(big) as object), null));
  });

  it("in overlay mode, follows the overlay's revision and candidates, not its rendering time", () => {
    const overlayDoc = doc();
    delete overlayDoc.routing.routes;
    overlayDoc.routing.overlay = { file: '/nonexistent/overlay.json' };
    const parsed = (candidates: unknown[], renderedAt = '2026-11-29T00:00:00Z'): ParsedOverlay => {
      const result = parseOverlay(JSON.stringify(envelope(candidates, { renderedAt })));
      assert.ok(result.ok, JSON.stringify(result));
      return result.overlay;
    };
    const build = (overlay: ParsedOverlay): string => {
      const built = buildGeneration({
        config: config(overlayDoc),
        sourceHash: 'h',
        number: 1,
        env: ENV,
        overlay,
        poolFor: (spec) => pools.acquire(spec),
      });
      assert.ok(built.ok, JSON.stringify(built));
      return built.generation.digest;
    };
    const one = [candidate('gpt-4o-mini', 'east'), candidate('gpt-4o-mini', 'west')];
    const a = build(parsed(one));
    assert.equal(build(parsed(one, '2026-11-30T00:00:00Z')), a, 'a re-rendering of the same candidates');
    assert.notEqual(build(parsed([...one].reverse())), a, 'the candidates in another order');
    assert.notEqual(build(parsed([one[0]])), a, 'a candidate withdrawn');
    assert.notEqual(a, generation(doc()).digest);
  });
});
