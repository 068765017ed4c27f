// `switchyard overlay verify` on the shared overlay-v1 vectors (read in place at test time):
// its exit code and what it prints agree with each vector's manifest entry. A clone without
// ../shared skips, saying so.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../support/gateway-process.js';

const fixtureDir = resolve(import.meta.dirname, '../../../shared/conformance/overlay-v1');

interface Expectation {
  expected: 'accept' | 'accept_legacy' | 'reject';
  reason?: string;
  revision?: string;
}

if (!existsSync(join(fixtureDir, 'manifest.json'))) {
  test('overlay verify agrees with the shared overlay-v1 vectors', (t) => {
    t.skip(`shared conformance vectors not found at ${fixtureDir}`);
  });
} else {
  const manifest = JSON.parse(readFileSync(join(fixtureDir, 'manifest.json'), 'utf8')) as { fixtures: Record<string, Expectation> };

  test('overlay verify agrees with every shared overlay-v1 vector: exit 0 with its revision, or exit 1 with its reason', async () => {
    for (const [file, want] of Object.entries(manifest.fixtures)) {
      const r = await runCli(['overlay', 'verify', join(fixtureDir, file)]);
      if (want.expected === 'reject') {
        assert.equal(r.code, 1, `${file}: ${r.stdout}`);
        assert.match(r.stderr, new RegExp(`error \\(${want.reason}\\)`), file);
      } else {
        assert.equal(r.code, 0, `${file}: ${r.stderr}`);
        assert.match(r.stdout, want.expected === 'accept_legacy' ? /valid \(legacy\)/ : /valid \(envelope\)/, file);
        if (want.revision !== undefined) assert.match(r.stdout, new RegExp(`revision: ${want.revision}`), file);
      }
    }
  });

  test('overlay diff compares two shared vectors model by model', async () => {
    const r = await runCli(['overlay', 'diff', join(fixtureDir, 'valid-minimal.json'), join(fixtureDir, 'valid-multi-candidate.json')]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^revision [0-9a-f]{64} -> [0-9a-f]{64}\n/);
    assert.match(r.stdout, /\+ added/);
  });
}
