import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { checkConfig, type GatewayConfig } from '../../src/config/index.js';
import { type BuildInputs, type BuildResult, buildGeneration, buildGenerationInSlices, type Generation } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';
import { candidateOf } from '../../src/routing/index.js';

const ENV_SECRET = 'test-secret-value-0123456789';
const FILE_SECRET = 'test-file-secret-value-9876543210';
const dir = mkdtempSync(join(tmpdir(), 'switchyard-build-'));
const secretFile = join(dir, 'west-key');
writeFileSync(secretFile, `${FILE_SECRET}\n`);

const pools = new PoolRegistry();
after(async () => {
  await pools.destroyAll();
  rmSync(dir, { recursive: true, force: true });
});

/** A valid config document: two providers with secrets by reference, two routes. */
function doc(): Record<string, any> {
  return {
    server: { listen: '127.0.0.1:0' },
    providers: {
      east: { type: 'openai', base_url: 'http://127.0.0.1:9001/v1/', api_key: { env: 'EAST_KEY' }, headers: { 'x-org': 'o1' } },
      west: { type: 'openai', base_url: 'http://127.0.0.1:9002/v1', api_key: { file: secretFile } },
      // Same endpoint under another name: one identity, so one breaker and one pool.
      alias: { type: 'openai', base_url: 'http://127.0.0.1:9002/v1' },
    },
    routing: {
      routes: {
        'gpt-4o-mini': {
          policy: 'round_robin',
          candidates: [
            { provider: 'east', model: 'gpt-4o-mini' },
            { provider: 'west', model: 'gpt-4o-mini', weight: 2 },
          ],
        },
        'gpt-4o': { candidates: [{ provider: 'alias' }, { provider: 'east', model: 'gpt-4o-2024' }] },
      },
    },
    pricing: { models: { 'gpt-4o-mini': { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } } },
  };
}

function config(document: object): GatewayConfig {
  const checked = checkConfig(document, 'hash-of-test-bytes');
  assert.ok(checked.ok, `the test config is invalid: ${JSON.stringify(checked)}`);
  return checked.config;
}

interface BuildOptions {
  env?: NodeJS.ProcessEnv;
  number?: number;
  poolFor?: typeof pools.acquire;
  now?: () => Date;
  modelsFirstSeen?: Readonly<Record<string, number>>;
}

function inputs(document: object, options: BuildOptions = {}): BuildInputs {
  return {
    config: config(document),
    sourceHash: 'hash-of-test-bytes',
    number: options.number ?? 1,
    env: options.env ?? { EAST_KEY: ENV_SECRET },
    poolFor: options.poolFor ?? ((spec) => pools.acquire(spec)),
    now: options.now ?? (() => new Date('2026-01-02T03:04:05.000Z')),
    modelsFirstSeen: options.modelsFirstSeen,
  };
}

function build(document: object, options: BuildOptions = {}): BuildResult {
  return buildGeneration(inputs(document, options));
}

/** doc() plus `n` more routes, alternating between the providers. */
function withRoutes(n: number): Record<string, any> {
  const d = doc();
  for (let i = 0; i < n; i += 1) {
    d.routing.routes[`bulk-${i}`] = {
      candidates: [{ provider: i % 2 === 0 ? 'east' : 'west' }, { provider: 'alias', weight: 1 + (i % 3) }],
    };
  }
  return d;
}

function generation(result: BuildResult): Generation {
  assert.ok(result.ok, `expected a generation, got issues: ${JSON.stringify(result)}`);
  return result.generation;
}

function issues(result: BuildResult): Array<{ path: string; message: string }> {
  assert.equal(result.ok, false, 'expected the build to be refused');
  return [...(result as Extract<BuildResult, { ok: false }>).issues];
}

describe('buildGeneration', () => {
  it('returns a generation that is frozen all the way down', () => {
    const gen = generation(build(doc()));
    const route = gen.routes['gpt-4o-mini']!;
    const group = route.groups[0]!;
    const candidate = group.candidates[0]!;
    const frozen: Record<string, unknown> = {
      generation: gen,
      routes: gen.routes,
      route,
      groups: route.groups,
      group,
      candidates: group.candidates,
      candidate,
      byStableId: route.byStableId,
      providers: gen.providers,
      provider: gen.providers.east,
      'provider headers': gen.providers.east!.headers,
      'candidate.provider': candidate.provider,
      identities: gen.identities,
      counterKeys: gen.counterKeys,
      pricing: gen.pricing,
      price: gen.pricing['gpt-4o-mini'],
      config: gen.config,
      'config.providers.east': gen.config.providers.east,
      'config route candidates': gen.config.routing.routes!['gpt-4o-mini']!.candidates,
    };
    for (const [name, value] of Object.entries(frozen)) assert.ok(Object.isFrozen(value), `${name} is not frozen`);
    // ESM modules are strict code, so writes to frozen objects throw.
    assert.throws(() => {
      (gen.routes as Record<string, unknown>).injected = route;
    }, TypeError);
    assert.throws(() => {
      (group.candidates as unknown[]).push(candidate);
    }, TypeError);
    assert.throws(() => {
      (candidate as { weight: number }).weight = 99;
    }, TypeError);
  });

  it('carries its number, build time, source hash and pricing', () => {
    const gen = generation(build(doc(), { number: 7 }));
    assert.equal(gen.number, 7);
    assert.equal(gen.builtAt, '2026-01-02T03:04:05.000Z');
    assert.equal(gen.sourceHash, 'hash-of-test-bytes');
    assert.deepEqual({ ...gen.pricing['gpt-4o-mini'] }, { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 });
  });

  it('derives provider identities from type and base_url, one per distinct endpoint', () => {
    const gen = generation(build(doc()));
    assert.equal(gen.providers.east!.identity, 'openai http://127.0.0.1:9001/v1', 'the trailing slash is not part of the identity');
    assert.equal(gen.providers.west!.identity, gen.providers.alias!.identity);
    assert.deepEqual([...gen.identities].sort(), ['openai http://127.0.0.1:9001/v1', 'openai http://127.0.0.1:9002/v1']);
    const candidate = gen.routes['gpt-4o-mini']!.groups[0]!.candidates[1]!;
    assert.equal(candidate.identity, gen.providers.west!.identity);
    assert.equal(candidate.providerName, 'west');
    assert.equal(candidate.weight, 2);
  });

  it('maps each route to its candidates with upstream models, stable ids and one counter key per route', () => {
    const gen = generation(build(doc()));
    const mini = gen.routes['gpt-4o-mini']!;
    assert.equal(mini.policy, 'round_robin');
    assert.equal(mini.admitsNew, true);
    assert.deepEqual(
      mini.groups.map((g) => g.candidates.map((c) => `${c.providerName}:${c.upstreamModel}`)),
      [['east:gpt-4o-mini', 'west:gpt-4o-mini']],
    );
    assert.equal(mini.groups[0]!.totalWeight, 3);
    const big = gen.routes['gpt-4o']!;
    assert.equal(big.policy, 'ordered', 'the default policy');
    assert.deepEqual(
      big.groups[0]!.candidates.map((c) => c.upstreamModel),
      ['gpt-4o', 'gpt-4o-2024'],
      'the model defaults to the route name',
    );
    for (const route of [mini, big]) {
      for (const c of route.groups[0]!.candidates) assert.equal(candidateOf(route, c.stableId), c);
    }
    // Only a group that rotates (round_robin) has a counter key to keep.
    assert.deepEqual([...gen.counterKeys], [mini.groups[0]!.counterKey]);
    assert.equal(big.groups[0]!.counterKey, '');
    const models = JSON.parse(gen.modelsBody) as { object: string; data: Array<{ id: string }> };
    assert.equal(models.object, 'list');
    assert.equal(gen.modelsBody, JSON.stringify(models), 'rendered as JSON.stringify renders it');
    assert.deepEqual(models.data.map((m) => m.id).sort(), ['gpt-4o', 'gpt-4o-mini']);
  });

  it('an unchanged route keeps its counter key across two builds and a changed route gets a new one', () => {
    const first = generation(build(doc(), { number: 1 }));
    const changed = doc();
    changed.routing.routes['gpt-4o-mini'].candidates[1].weight = 3;
    changed.providers.extra = { type: 'openai', base_url: 'http://127.0.0.1:9009/v1' };
    const second = generation(build(changed, { number: 2 }));
    const key = (gen: Generation, model: string): string => gen.routes[model]!.groups[0]!.counterKey;
    assert.equal(key(second, 'gpt-4o'), key(first, 'gpt-4o'), 'the untouched route keeps its rotation');
    assert.notEqual(key(second, 'gpt-4o-mini'), key(first, 'gpt-4o-mini'), 'the edited route starts a new rotation');
    const third = generation(build(doc(), { number: 3 }));
    assert.equal(key(third, 'gpt-4o-mini'), key(first, 'gpt-4o-mini'), 'reverting the edit gives the original key back');
  });

  it('a model keeps its first-seen time (GET /v1/models created) across builds while it stays routed', () => {
    const at = (iso: string) => () => new Date(iso);
    const first = generation(build(doc(), { number: 1, now: at('2026-11-30T10:00:00Z') }));
    const t0 = Date.parse('2026-11-30T10:00:00Z') / 1000;
    assert.deepEqual({ ...first.modelsFirstSeen }, { 'gpt-4o-mini': t0, 'gpt-4o': t0 });
    const without = doc();
    delete without.routing.routes['gpt-4o'];
    const second = generation(build(without, { number: 2, now: at('2026-11-30T11:00:00Z'), modelsFirstSeen: first.modelsFirstSeen }));
    assert.deepEqual({ ...second.modelsFirstSeen }, { 'gpt-4o-mini': t0 });
    const third = generation(build(doc(), { number: 3, now: at('2026-11-30T12:00:00Z'), modelsFirstSeen: second.modelsFirstSeen }));
    const t2 = Date.parse('2026-11-30T12:00:00Z') / 1000;
    assert.deepEqual({ ...third.modelsFirstSeen }, { 'gpt-4o-mini': t0, 'gpt-4o': t2 }, 'a model routed again is new');
    const listed = JSON.parse(third.modelsBody) as { data: Array<{ id: string; created: number }> };
    assert.deepEqual(Object.fromEntries(listed.data.map((m) => [m.id, m.created])), { 'gpt-4o-mini': t0, 'gpt-4o': t2 });
  });

  it('reports a route that names an unknown provider, with its path', () => {
    const d = doc();
    d.routing.routes['gpt-4o'].candidates.push({ provider: 'nowhere' });
    const found = issues(build(d));
    assert.deepEqual(
      found.map((i) => i.path),
      ['routing.routes.gpt-4o.candidates[2].provider'],
    );
    assert.match(found[0]!.message, /nowhere/);
  });

  it('reports a missing env secret naming the variable, and a missing file secret naming the path', () => {
    const d = doc();
    d.providers.west.api_key = { file: join(dir, 'no-such-file') };
    const found = issues(build(d, { env: {} }));
    const byPath = Object.fromEntries(found.map((i) => [i.path, i.message]));
    assert.deepEqual(Object.keys(byPath).sort(), ['providers.east.api_key', 'providers.west.api_key']);
    assert.match(byPath['providers.east.api_key']!, /EAST_KEY/);
    assert.match(byPath['providers.west.api_key']!, /no-such-file/);
  });

  it('reports every problem at once and asks for no pool when it refuses', () => {
    let asked = 0;
    const d = doc();
    d.routing.routes['gpt-4o-mini'].candidates[0].provider = 'ghost';
    const found = issues(
      build(d, {
        env: {},
        poolFor: (spec) => {
          asked++;
          return pools.acquire(spec);
        },
      }),
    );
    assert.deepEqual(found.map((i) => i.path).sort(), ['providers.east.api_key', 'routing.routes.gpt-4o-mini.candidates[0].provider']);
    assert.equal(asked, 0, 'a refused build opened pools');
  });

  it('holds resolved secrets without ever exposing them through JSON or inspection', () => {
    const gen = generation(build(doc()));
    const east = gen.providers.east!;
    const west = gen.providers.west!;
    assert.equal(east.credential?.authorization(), `Bearer ${ENV_SECRET}`);
    assert.equal(west.credential?.authorization(), `Bearer ${FILE_SECRET}`, 'the file secret without its trailing newline');
    assert.equal(east.credential?.source, 'env:EAST_KEY');
    assert.equal(west.credential?.source, `file:${secretFile}`);
    assert.equal(gen.providers.alias!.credential, null);
    const json = JSON.stringify(gen);
    const inspected = inspect(gen, { depth: null, showHidden: true });
    for (const secret of [ENV_SECRET, FILE_SECRET]) {
      assert.ok(!json.includes(secret), 'JSON.stringify(generation) exposes a secret');
      assert.ok(!inspected.includes(secret), 'util.inspect(generation) exposes a secret');
    }
    assert.ok(json.includes('env:EAST_KEY'), 'the reference is still shown');
  });

  it('built in slices, the generation is the one built at once, and frozen the same way', async () => {
    const d = withRoutes(500);
    const atOnce = generation(build(d));
    const inSlices = generation(await buildGenerationInSlices(inputs(d), 0));
    assert.deepStrictEqual(inSlices, atOnce);
    assert.deepEqual(Object.keys(inSlices.routes), Object.keys(atOnce.routes), 'the routes in the same order');
    assert.equal(inSlices.modelsBody, atOnce.modelsBody);
    for (const value of [inSlices, inSlices.config.routing.routes!['bulk-499']!.candidates[1], inSlices.routes['bulk-499']!.groups[0]!])
      assert.ok(Object.isFrozen(value));
  });

  it('built in slices, a refused config gives the same issues as built at once', async () => {
    const d = withRoutes(50);
    d.routing.routes['bulk-7'].candidates[0].provider = 'ghost';
    d.routing.routes['bulk-41'].candidates[1].provider = 'phantom';
    const atOnce = issues(build(d, { env: {} }));
    assert.equal(atOnce.length, 3);
    assert.deepEqual(issues(await buildGenerationInSlices(inputs(d, { env: {} }), 0)), atOnce);
  });

  it('a build in slices lets the event loop turn between them: what arrived meanwhile runs before it ends', async () => {
    let turns = 0;
    let building = true;
    const count = (): void => {
      if (!building) return;
      turns += 1;
      setImmediate(count);
    };
    setImmediate(count);
    // A zero slice pauses at every step, so this holds however fast the machine is.
    const result = await buildGenerationInSlices(inputs(withRoutes(200)), 0);
    building = false;
    generation(result);
    assert.ok(turns > 200, `the event loop turned ${turns} times during the build`);
  });
});
