import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { checkConfig } from '../../src/config/index.js';
import { buildGeneration, diffGenerations, diffGenerationsInSlices, type Generation } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';

// What a reload reports as changed. A reload computes it in slices (ADR 0015: tens of
// thousands of routes); the result is the one computed at once.

const pools = new PoolRegistry();
after(() => pools.destroyAll());

function generation(routes: Record<string, unknown>, number: number, extra: Record<string, unknown> = {}): Generation {
  const checked = checkConfig({
    server: { listen: '127.0.0.1:0' },
    providers: {
      east: { type: 'openai', base_url: 'http://127.0.0.1:9001' },
      west: { type: 'openai', base_url: 'http://127.0.0.1:9002' },
      tools: { type: 'mcp', base_url: 'http://127.0.0.1:9003/mcp' },
    },
    routing: { routes, ...((extra.tools as object | undefined) === undefined ? {} : { tools: extra.tools }) },
    ...(extra.teams === undefined ? {} : { teams: extra.teams }),
    ...(extra.keys === undefined ? {} : { keys: extra.keys }),
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

  it('names the tool routes, teams and keys that came, went and changed, by name and id only', () => {
    const sha = (c: string) => c.repeat(64);
    const routes = { m: { candidates: [{ provider: 'east' }] } };
    const previous = generation(routes, 1, {
      tools: { echo: { candidates: [{ provider: 'tools' }] }, gone: { candidates: [{ provider: 'tools' }] } },
      teams: { platform: {}, growth: {}, old: {} },
      keys: [
        { id: 'k-kept', team: 'platform', sha256: sha('a') },
        { id: 'k-rotated', team: 'platform', sha256: sha('b') },
        { id: 'k-removed', team: 'growth', sha256: sha('c') },
      ],
    });
    const next = generation(routes, 2, {
      tools: { echo: { candidates: [{ provider: 'tools', tool: 'echo2' }] }, fresh: { candidates: [{ provider: 'tools' }] } },
      teams: { platform: {}, growth: { allowed_models: ['m'] }, new: {} },
      keys: [
        { id: 'k-kept', team: 'platform', sha256: sha('a') },
        { id: 'k-rotated', team: 'platform', sha256: sha('d') },
        { id: 'k-new', team: 'new', sha256: sha('e') },
      ],
    });
    const changes = diffGenerations(previous, next);
    assert.deepEqual([changes.toolsAdded, changes.toolsRemoved, changes.toolsChanged], [['fresh'], ['gone'], ['echo']]);
    assert.deepEqual([changes.teamsAdded, changes.teamsRemoved, changes.teamsChanged], [['new'], ['old'], ['growth']]);
    assert.deepEqual([changes.keysAdded, changes.keysRemoved, changes.keysChanged], [['k-new'], ['k-removed'], ['k-rotated']]);
    assert.doesNotMatch(JSON.stringify(changes), /aaaa|dddd/, 'no digest in the changes');
    assert.deepEqual(diffGenerations(next, next).keysChanged, []);
  });
});
