import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContractResult } from '../../src/contract/index.js';
import { parseOverlay } from '../../src/contract/index.js';
import { candidate, envelope } from '../support/overlay.js';

// An overlay candidate's credential.secretRef names a Secret by namespace, name and key; the
// gateway joins them under its credential mount, so only plain names are accepted. The
// process-level side (a reload that tries to leave the mount) is in
// test/server/overlay-credentials.test.ts.

describe('overlay credential secretRef fields are plain names', () => {
  const good = { namespace: 'team-a', name: 'openai-creds', key: 'token' };
  const withRef = (secretRef: Record<string, string>): unknown[] => [
    candidate('m', 'east', { credential: { strategy: 'bearer_token', secretRef: good } }),
    candidate('m', 'west', { credential: { strategy: 'bearer_token', secretRef } }),
  ];

  function refusedAt(result: ContractResult, path: string): void {
    assert.equal(result.ok, false, `accepted a secretRef that is not a plain name (expected a refusal at ${path})`);
    if (result.ok) return;
    assert.equal(result.reason, 'invalid_candidate', result.message);
    assert.ok(result.message.includes(path), `the message should name ${path}: ${result.message}`);
  }

  it('a secretRef of plain Kubernetes names is accepted', () => {
    const result = parseOverlay(JSON.stringify(envelope(withRef(good))));
    assert.ok(result.ok, result.ok ? '' : `${result.reason}: ${result.message}`);
    assert.deepEqual({ ...result.overlay.candidates[1]!.credential!.secretRef }, good);
  });

  const cases: Array<[field: 'namespace' | 'name' | 'key', value: string]> = [
    ['namespace', '..'],
    ['namespace', '.'],
    ['namespace', '/etc'],
    ['namespace', '../elsewhere'],
    ['name', 'a/b'],
    ['name', '..'],
    ['name', '.'],
    ['key', '.'],
    ['key', '..'],
    ['key', '../../etc/passwd'],
    ['key', 'dir/token'],
  ];
  for (const [field, value] of cases) {
    it(`secretRef.${field} ${JSON.stringify(value)} is refused as invalid_candidate, naming overlay.candidates[1].credential.secretRef.${field}`, () => {
      const result = parseOverlay(JSON.stringify(envelope(withRef({ ...good, [field]: value }))));
      refusedAt(result, `overlay.candidates[1].credential.secretRef.${field}`);
    });
  }

  it('a legacy payload gets the same refusal, naming candidates[i].credential.secretRef.namespace', () => {
    const result = parseOverlay(JSON.stringify({ local_site: 'east', candidates: withRef({ ...good, namespace: '..' }) }));
    refusedAt(result, 'candidates[1].credential.secretRef.namespace');
  });
});
