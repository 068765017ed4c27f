// Switchyard's own overlay contract vectors: test/contract/vectors/manifest.json.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ContractResult, ExpectedScope, ParsedOverlay } from '../../src/contract/index.js';
import { checkSuccession, MAX_OVERLAY_BYTES, parseOverlay, readOverlayFile } from '../../src/contract/index.js';

const vectorDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'vectors');

interface VectorCase {
  name: string;
  file: string;
  expected: 'accept' | 'accept_legacy' | 'reject';
  reason?: string;
  revision?: string;
  expected_scope?: ExpectedScope;
  /** When set: both files parse, and checkSuccession(serving, file) decides. */
  serving?: string;
  /** The read limit (`routing.overlay.max_bytes`); 2 MiB when absent. */
  max_bytes?: number;
  /** The shared overlay-v1 fixture whose behaviour this case pins (see vector-coverage.test.ts). */
  shared_case?: string;
}

const manifest = JSON.parse(readFileSync(path.join(vectorDir, 'manifest.json'), 'utf8')) as { cases: VectorCase[] };
const read = (file: string) => readFileSync(path.join(vectorDir, file));

/** The gateway's own path: the bounded read, then the parse. */
async function outcomeOf(vector: VectorCase): Promise<ContractResult> {
  const read = await readOverlayFile(path.join(vectorDir, vector.file), vector.max_bytes ?? MAX_OVERLAY_BYTES);
  if (!read.ok) return read;
  return parseOverlay(read.bytes, vector.expected_scope ? { expectedScope: vector.expected_scope } : {});
}

function parseAccepted(file: string): ParsedOverlay {
  const result = parseOverlay(read(file));
  assert.ok(result.ok, result.ok ? '' : `${file}: ${result.reason}: ${result.message}`);
  return result.overlay;
}

test('every vector file is used by a case in manifest.json', () => {
  const used = new Set(manifest.cases.flatMap((c) => (c.serving ? [c.file, c.serving] : [c.file])));
  const files = readdirSync(vectorDir).filter((f) => f.endsWith('.json') && f !== 'manifest.json');
  assert.deepEqual(
    files.filter((f) => !used.has(f)),
    [],
  );
});

for (const vector of manifest.cases) {
  test(vector.name, async () => {
    if (vector.serving !== undefined) {
      const verdict = checkSuccession(parseAccepted(vector.serving), parseAccepted(vector.file));
      if (vector.expected === 'reject') {
        assert.equal(verdict.ok, false);
        if (!verdict.ok) assert.equal(verdict.reason, vector.reason, verdict.message);
      } else {
        assert.deepEqual(verdict, { ok: true });
      }
      return;
    }
    const result = await outcomeOf(vector);
    if (vector.expected === 'reject') {
      assert.equal(result.ok, false, `${vector.file} was accepted`);
      if (!result.ok) {
        assert.equal(result.reason, vector.reason, result.message);
        // A refused read names the file; a refused parse opens with the field path.
        const readPrefix = `overlay file ${JSON.stringify(path.join(vectorDir, vector.file))}:`;
        if (!result.message.startsWith(readPrefix)) assert.match(result.message, /^[\w.[\]()\s]+:/, 'the message opens with a field path');
      }
      return;
    }
    assert.ok(result.ok, result.ok ? '' : `${result.reason}: ${result.message}`);
    assert.equal(result.overlay.format, vector.expected === 'accept_legacy' ? 'legacy' : 'envelope');
    assert.equal(result.overlay.revision, vector.revision);
  });
}

test('credential_value messages name the path but never the suspected secret', () => {
  for (const vector of manifest.cases.filter((c) => c.reason === 'credential_value')) {
    const result = parseOverlay(read(vector.file));
    assert.equal(result.ok, false);
    if (result.ok) continue;
    assert.match(result.message, /^overlay\.candidates\[0\]\./, result.message);
    for (const secret of ['redacted', 'not-a-real-token', 'not-a-real-key']) {
      assert.ok(!result.message.includes(secret), `${vector.file}: message holds the value: ${result.message}`);
    }
  }
});

test('any revision may follow no serving overlay, and a legacy one never counts as a rollback', () => {
  const older = parseAccepted('rollback-older.json');
  assert.deepEqual(checkSuccession(undefined, older), { ok: true });
  assert.deepEqual(checkSuccession(parseAccepted('rollback-serving.json'), parseAccepted('legacy-minimal.json')), {
    ok: true,
  });
});
