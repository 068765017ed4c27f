// The shared overlay-v1 vectors (Praxis AI's public fixtures), read in place at test time.
// A clone without ../shared skips them; vector-coverage.test.ts checks that our own vectors
// (test/contract/vectors/) pin every outcome they do, so such a clone tests the same contract.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseOverlay } from '../../src/contract/index.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fixtureDir = path.resolve(projectRoot, '../shared/conformance/overlay-v1');

interface Expectation {
  expected: 'accept' | 'accept_legacy' | 'reject';
  reason?: string;
  revision?: string;
  content_digest?: string;
}

if (!existsSync(path.join(fixtureDir, 'manifest.json'))) {
  test('the shared overlay-v1 conformance vectors get the outcome their manifest gives', (t) => {
    t.skip(`shared conformance vectors not found at ${fixtureDir}`);
  });
} else {
  const manifest = JSON.parse(readFileSync(path.join(fixtureDir, 'manifest.json'), 'utf8')) as {
    fixtures: Record<string, Expectation>;
  };

  test('every shared overlay-v1 fixture file is listed in manifest.json', () => {
    const files = readdirSync(fixtureDir).filter((f) => f.endsWith('.json') && f !== 'manifest.json');
    assert.deepEqual(files.sort(), Object.keys(manifest.fixtures).sort());
  });

  for (const [file, want] of Object.entries(manifest.fixtures)) {
    const outcome = want.expected === 'reject' ? `is rejected as ${want.reason}` : `is accepted (${want.expected})`;
    test(`shared vector ${file} ${outcome}`, () => {
      const result = parseOverlay(readFileSync(path.join(fixtureDir, file)));
      if (want.expected === 'reject') {
        assert.equal(result.ok, false, `${file} was accepted`);
        if (result.ok) return;
        assert.equal(result.reason, want.reason, result.message);
        assert.ok(result.message.length > 0);
        return;
      }
      assert.ok(result.ok, result.ok ? '' : `${result.reason}: ${result.message}`);
      assert.equal(result.overlay.format, want.expected === 'accept_legacy' ? 'legacy' : 'envelope');
      if (want.revision !== undefined) assert.equal(result.overlay.revision, want.revision);
      // An accepted envelope's content_digest equals its revision and the recomputed digest.
      if (want.content_digest !== undefined) assert.equal(result.overlay.revision, want.content_digest);
    });
  }
}
