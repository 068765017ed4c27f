import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatIssue, parseConfigText } from '../../src/config/index.js';
import { adapterOf, Credential, providerHeaders, servesOperation, upstreamPathFor } from '../../src/providers/index.js';

const gemini = { wire: adapterOf('gemini').wire({ type: 'gemini' }, { bearer: null, signer: null }) };

describe('a gemini provider', () => {
  it('needs no base_url; every other type still does', () => {
    const config = (provider: string) =>
      parseConfigText(`providers:\n  g: ${provider}\nrouting:\n  routes:\n    m: { candidates: [{ provider: g }] }\n`);
    assert.equal(config('{ type: gemini, api_key: { env: K } }').ok, true);
    const openai = config('{ type: openai }');
    assert.equal(openai.ok, false);
    if (!openai.ok) assert.deepEqual(openai.issues.map(formatIssue), ['providers.g.base_url: required']);
  });

  it('is called at generateContent, or streamGenerateContent with alt=sse for a stream', () => {
    assert.equal(upstreamPathFor(gemini, 'gemini-2.5-flash'), '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(
      upstreamPathFor(gemini, 'gemini-2.5-flash', 'chat', true),
      '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    );
  });

  it('gets its key as x-goog-api-key, never as authorization', () => {
    const headers = providerHeaders(gemini, new Credential('AIzaSecret', 'env K'), {}, 'application/json', 'r1', {
      authorization: 'Bearer client',
      'openai-organization': 'org',
    });
    assert.equal(headers['x-goog-api-key'], 'AIzaSecret');
    assert.equal(headers.authorization, undefined);
    assert.equal(headers['openai-organization'], undefined);
  });

  it('serves chat only', () => {
    assert.equal(servesOperation('gemini', 'chat'), true);
    for (const op of ['embeddings', 'completions', 'responses', 'count_tokens'] as const)
      assert.equal(servesOperation('gemini', op), false);
  });
});
