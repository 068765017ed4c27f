import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { checkConfig } from '../../src/config/index.js';
import { buildGeneration, diffGenerations, diffGenerationsInSlices, type Generation } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';

// What a reload reports as changed. A reload computes it in slices (ADR 0015: tens of
// thousands of routes); the result is the one computed at once.

const pools = new PoolRegistry();
after(() => pools.destroyAll());

function generation(routes: Record<string, unknown>, number: number): Generation {
  const checked = checkConfig({
    server: { listen: '127.0.0.1:0' },
    providers: { east: { type: 'openai', base_url: 'http://127.0.0.1:9001' }, west: { type: 'openai', base_url: 'http://127.0.0.1:9002' } },
    routing: { routes },
  });
  assert.ok(checked.ok, JSON.stringify(checked));
  const built = buildGeneration({ config: checked.config, sourceHash: `h${number}`, number, env: {}, poolFor: (s) => pools.acquire(s) });
  assert.ok(built.ok, JSON.stringify(built));
  return built.generation;
}

describe('diffGenerations', () => {
  it('names the routes and candidates that came, went and changed; in slices, the same', async () => {
    const before: Record<string, unknown> = {};
    const after: Record<string, unknown> = {};
    for (let i = 0; i < 300; i += 1) {
      before[`m${i}`] = { candidates: [{ provider: 'east' }] };
      if (i % 3 !== 0) after[`m${i}`] = { candidates: [{ provider: i % 5 === 0 ? 'west' : 'east' }] };
    }
    after.fresh = { candidates: [{ provider: 'west' }] };
    const previous = generation(before, 1);
    const next = generation(after, 2);
    const changes = diffGenerations(previous, next);
    assert.deepEqual(changes.routesAdded, ['fresh']);
    // 100 removed: the first 50 by name, then how many more (a log line stays a line).
    assert.equal(changes.routesRemoved.length, 51);
    assert.equal(changes.routesRemoved[0], 'm0');
    assert.equal(changes.routesRemoved[50], '… and 50 more');
    assert.deepEqual(changes.routesChanged.slice(0, 2), ['m5', 'm10']);
    assert.ok(changes.candidatesAdded.includes('west/fresh') && changes.candidatesAdded.includes('west/m5'));
    assert.ok(changes.candidatesRemoved.includes('east/m0') && changes.candidatesRemoved.includes('east/m5'));
    assert.deepStrictEqual(await diffGenerationsInSlices(previous, next, 0), changes);
    assert.deepStrictEqual(await diffGenerationsInSlices(null, next, 0), diffGenerations(null, next));
  });
});
