import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { authenticate, buildKeyTable, hashKey, KeyMemo, type KeyRecord, presentedKey } from '../../src/governance/index.js';

const OLD = 'sk-sy-old-0123456789';
const NEW = 'sk-sy-new-9876543210';
const CI = 'sk-sy-ci-abcdef';
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

const records: KeyRecord[] = [
  { id: 'ci-bot', team: 'platform', sha256: [hashKey(CI)], limits: { rpm: 60 }, expiresAtMs: Date.UTC(2027, 5, 30) },
  { id: 'rotating', team: 'platform', sha256: [hashKey(OLD), hashKey(NEW).toUpperCase()], limits: {}, expiresAtMs: null },
];
const table = buildKeyTable(records);

describe('key authentication', () => {
  it('hashes a key to the lowercase hex SHA-256 that config stores', () => {
    assert.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('accepts Authorization: Bearer with the scheme in any case', () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const r = authenticate(table, { authorization: `${scheme} ${CI}` }, NOW);
      assert.ok(r.ok, scheme);
      assert.deepEqual(r.principal, { keyId: 'ci-bot', team: 'platform' });
    }
  });

  it('accepts x-api-key (Anthropic clients) and prefers Authorization when both are sent', () => {
    const viaHeader = authenticate(table, { 'x-api-key': CI }, NOW);
    assert.ok(viaHeader.ok);
    assert.equal(viaHeader.principal.keyId, 'ci-bot');
    assert.equal(presentedKey({ authorization: `Bearer ${OLD}`, 'x-api-key': CI }), OLD);
    assert.equal(presentedKey({ authorization: 'Basic abc', 'x-api-key': CI }), CI, 'a non-bearer Authorization falls through');
  });

  it('accepts both hashes of a key while it is rotated', () => {
    for (const k of [OLD, NEW]) {
      const r = authenticate(table, { authorization: `Bearer ${k}` }, NOW);
      assert.ok(r.ok);
      assert.equal(r.principal.keyId, 'rotating');
    }
  });

  it('refuses a missing or unknown key with unauthorized, never echoing the presented key', () => {
    const missing = authenticate(table, {}, NOW);
    assert.ok(!missing.ok);
    assert.equal(missing.refusal.code, 'unauthorized');
    const unknown = authenticate(table, { authorization: 'Bearer sk-sy-not-a-key-zzz' }, NOW);
    assert.ok(!unknown.ok);
    assert.equal(unknown.refusal.code, 'unauthorized');
    assert.doesNotMatch(unknown.refusal.message, /sk-sy-not-a-key-zzz/);
  });

  it('refuses a key at and after its expires_at with key_expired', () => {
    const expiry = Date.UTC(2027, 5, 30);
    assert.ok(authenticate(table, { authorization: `Bearer ${CI}` }, expiry - 1).ok);
    const r = authenticate(table, { authorization: `Bearer ${CI}` }, expiry);
    assert.ok(!r.ok);
    assert.equal(r.refusal.code, 'key_expired');
    assert.doesNotMatch(r.refusal.message, new RegExp(CI));
  });

  it("a connection's memo of its last key: the same key resolves alike, another key or a reload's table afresh", () => {
    const memo = new KeyMemo();
    const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
    const first = authenticate(table, bearer(CI), NOW, memo);
    assert.ok(first.ok);
    assert.equal(memo.entry?.record.id, 'ci-bot', 'a key that resolved is kept');
    const again = authenticate(table, bearer(CI), NOW, memo);
    assert.ok(again.ok);
    assert.equal(again.principal, first.principal);
    // Another key on the same connection is its own caller, and an unknown one is refused
    // without displacing what the memo holds.
    const other = authenticate(table, bearer(OLD), NOW, memo);
    assert.ok(other.ok);
    assert.equal(other.principal.keyId, 'rotating');
    const unknown = authenticate(table, bearer(`${OLD.slice(0, -1)}x`), NOW, memo);
    assert.ok(!unknown.ok);
    assert.equal(unknown.refusal.code, 'unauthorized');
    assert.equal(memo.entry?.record.id, 'rotating');
    // A reload's table without that key: the memo of the old table does not let it in.
    const reloaded = buildKeyTable(records.filter((r) => r.id !== 'rotating'));
    const afterReload = authenticate(reloaded, bearer(OLD), NOW, memo);
    assert.ok(!afterReload.ok, 'a key withdrawn by a reload is refused on a connection that used it');
    // Expiry is checked on every request, memo or not.
    assert.ok(authenticate(table, bearer(CI), NOW, memo).ok);
    const expired = authenticate(table, bearer(CI), Date.UTC(2027, 5, 30), memo);
    assert.ok(!expired.ok);
    assert.equal(expired.refusal.code, 'key_expired');
  });

  it('with no keys the gateway is open and every caller is anonymous', () => {
    const r = authenticate(buildKeyTable([]), {}, NOW);
    assert.ok(r.ok);
    assert.deepEqual(r.principal, { keyId: null, team: null });
  });

  it('hashes a key as lowercase hex SHA-256, the form config holds', () => {
    assert.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('refuses a table where two key ids share a hash, or a hash that is not 64 hex digits', () => {
    assert.throws(
      () => buildKeyTable([...records, { id: 'dup', team: 'platform', sha256: [hashKey(CI)], limits: {}, expiresAtMs: null }]),
      /share a sha256/,
    );
    assert.throws(() => buildKeyTable([{ id: 'bad', team: 'platform', sha256: ['abc'], limits: {}, expiresAtMs: null }]), /64 hex/);
  });
});
