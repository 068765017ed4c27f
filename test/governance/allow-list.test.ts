import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileModelAllowList } from '../../src/governance/index.js';

describe('model allow-lists', () => {
  const allows = compileModelAllowList(['gpt-4o-mini', 'llama-*', 'claude-3-?-haiku']);

  it('matches exact names and globs', () => {
    assert.equal(allows('gpt-4o-mini'), true);
    assert.equal(allows('llama-3.1-70b'), true);
    assert.equal(allows('claude-3-5-haiku'), true);
  });

  it('anchors globs and treats other characters literally', () => {
    assert.equal(allows('gpt-4o'), false);
    assert.equal(allows('gpt-4o-mini-2024'), false);
    assert.equal(allows('my-llama-3'), false);
    assert.equal(compileModelAllowList(['gpt.4o'])('gpt-4o'), false, 'a dot is not a wildcard');
    assert.equal(allows('claude-3-10-haiku'), false, '? is exactly one character');
  });

  it('absent allows every model; an empty list allows none', () => {
    assert.equal(compileModelAllowList(undefined)('anything'), true);
    assert.equal(compileModelAllowList([])('anything'), false);
  });
});
