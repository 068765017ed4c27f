import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deserialize, serialize } from 'node:v8';
import { type Piece, placePiece, splitIntoPieces } from '../../src/config/pieces.js';

// A config parsed in the parser process comes back in pieces (ADR 0015): rebuilt, it must be
// the value the parser process had, key order included, whatever the shape.

/** The pieces as they travel: each through a structured clone of its own. */
function rebuild(pieces: readonly Piece[]): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const piece of pieces) placePiece(root, deserialize(serialize(piece)) as Piece);
  return root;
}

function count(value: unknown): number {
  if (value === null || typeof value !== 'object') return 1;
  return 1 + Object.values(value).reduce((n: number, v) => n + count(v), 0);
}

function configLike(routes: number): Record<string, unknown> {
  const table: Record<string, unknown> = {};
  for (let i = 0; i < routes; i += 1) table[`model-${i}`] = { policy: 'ordered', candidates: [{ provider: 'east', weight: 1 + (i % 5) }] };
  return {
    ok: true,
    config: {
      server: { listen: '127.0.0.1:0', max_config_bytes: 4194304 },
      providers: { east: { type: 'openai', base_url: 'http://127.0.0.1:1', headers: {} } },
      routing: { routes: table },
      keys: Array.from({ length: 300 }, (_, i) => ({ id: `k${i}`, sha256: [`${i}`.padStart(64, '0')], team: null })),
      empty: [],
    },
    sourceHash: 'abc',
    warnings: [],
  };
}

describe('a config sent back in pieces', () => {
  it('rebuilds to the same value, key order included, from pieces of a bounded size', () => {
    const value = configLike(5000);
    const pieces = splitIntoPieces(value, 500);
    assert.ok(pieces.length > 40, `${pieces.length} pieces`);
    for (const piece of pieces) {
      const values = piece.entries.reduce((n, [, v]) => n + count(v), 0);
      assert.ok(values <= 500, `a piece of ${values} values`);
    }
    const rebuilt = rebuild(pieces);
    assert.deepStrictEqual(rebuilt, value);
    const routes = (rebuilt.config as { routing: { routes: object } }).routing.routes;
    assert.deepEqual(Object.keys(routes).slice(0, 3), ['model-0', 'model-1', 'model-2']);
  });

  it('a small value travels as one piece', () => {
    const value = { ok: false, issues: [{ path: 'routing', message: 'x' }] };
    const pieces = splitIntoPieces(value, 2048);
    assert.equal(pieces.length, 1);
    assert.deepStrictEqual(rebuild(pieces), value);
  });

  it('a key named __proto__ stays a key, in a small container and in a split one', () => {
    const small = JSON.parse('{"__proto__": {"candidates": []}, "m": 1}') as Record<string, unknown>;
    const big = JSON.parse(`{"__proto__": 1, ${Array.from({ length: 50 }, (_, i) => `"k${i}": ${i}`).join(', ')}}`) as Record<
      string,
      unknown
    >;
    const value = { small, big };
    const rebuilt = rebuild(splitIntoPieces(value, 10));
    assert.deepStrictEqual(rebuilt, value);
    assert.equal(Object.getPrototypeOf(rebuilt.big), Object.prototype);
    assert.ok(Object.hasOwn(rebuilt.big as object, '__proto__'));
  });
});
