// What the project's own vectors (test/contract/vectors/) cover. A clean clone has no
// ../shared, so the shared overlay-v1 fixtures are skipped there; these checks make sure our
// vectors alone still test the same contract: every reason the contract code can refuse an
// overlay for, and every outcome and reason the shared manifest pins.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { REJECT_REASONS } from '../../src/contract/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const sharedDir = path.resolve(here, '../../../shared/conformance/overlay-v1');

interface OwnCase {
  name: string;
  expected: 'accept' | 'accept_legacy' | 'reject';
  reason?: string;
  shared_case?: string;
}

interface SharedExpectation {
  expected: 'accept' | 'accept_legacy' | 'reject';
  reason?: string;
}

const own = (JSON.parse(readFileSync(path.join(here, 'vectors/manifest.json'), 'utf8')) as { cases: OwnCase[] }).cases;

/** `reject:<reason>`, or the accept outcome itself. */
const outcome = (c: { expected: string; reason?: string }): string => (c.expected === 'reject' ? `reject:${c.reason}` : c.expected);

test('every reason the contract can refuse an overlay for has a vector of our own', (t) => {
  const covered = new Map<string, number>();
  for (const c of own) if (c.expected === 'reject') covered.set(c.reason!, (covered.get(c.reason!) ?? 0) + 1);
  t.diagnostic(`reject reasons covered by test/contract/vectors: ${REJECT_REASONS.map((r) => `${r} (${covered.get(r) ?? 0})`).join(', ')}`);
  assert.deepEqual(
    REJECT_REASONS.filter((r) => !covered.has(r)),
    [],
    'reasons without a vector',
  );
  const unknown = [...covered.keys()].filter((r) => !(REJECT_REASONS as readonly string[]).includes(r));
  assert.deepEqual(unknown, [], 'our manifest names a reason the contract does not have');
});

test('our vectors include both accept outcomes: an envelope and a legacy payload', (t) => {
  const outcomes = new Set(own.filter((c) => c.expected !== 'reject').map((c) => c.expected));
  t.diagnostic(`accept outcomes covered: ${[...outcomes].sort().join(', ')}`);
  assert.deepEqual([...outcomes].sort(), ['accept', 'accept_legacy']);
});

if (!existsSync(path.join(sharedDir, 'manifest.json'))) {
  test('every case of the shared overlay-v1 manifest has a vector of our own', (t) => {
    t.skip(`shared conformance vectors not found at ${sharedDir}; our own vectors stand alone`);
  });
} else {
  const shared = (
    JSON.parse(readFileSync(path.join(sharedDir, 'manifest.json'), 'utf8')) as { fixtures: Record<string, SharedExpectation> }
  ).fixtures;

  test('every outcome and reject reason of the shared overlay-v1 manifest is also one of our vectors', (t) => {
    const ours = new Set(own.map(outcome));
    const theirs = [...new Set(Object.values(shared).map(outcome))].sort();
    t.diagnostic(`shared outcomes covered by our vectors: ${theirs.filter((o) => ours.has(o)).join(', ')}`);
    assert.deepEqual(
      theirs.filter((o) => !ours.has(o)),
      [],
      'shared outcomes none of our vectors has',
    );
  });

  test('every shared overlay-v1 fixture is pinned by one of our vectors with the same outcome', (t) => {
    const missing: string[] = [];
    for (const [fixture, want] of Object.entries(shared)) {
      const mine = own.filter((c) => c.shared_case === fixture);
      if (mine.length === 0) missing.push(`${fixture}: no case of ours names it as shared_case`);
      for (const c of mine) {
        assert.equal(outcome(c), outcome(want), `"${c.name}" pins ${fixture} with another outcome`);
        t.diagnostic(`${fixture} (${outcome(want)}) <- "${c.name}"`);
      }
    }
    assert.deepEqual(missing, []);
    const stale = own.filter((c) => c.shared_case !== undefined && !Object.hasOwn(shared, c.shared_case)).map((c) => c.name);
    assert.deepEqual(stale, [], 'cases naming a shared fixture that does not exist');
  });
}
