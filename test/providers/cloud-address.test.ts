import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { adapterOf, Credential, providerHeaders, servesOperation, upstreamPathFor } from '../../src/providers/index.js';

// Where bedrock and vertex providers are called, and which headers carry their credentials:
// the model (and for Vertex the project, location and publisher) in the path; a Vertex token
// as a bearer; nothing for Bedrock, whose signature is added after the body is written.

const noAuth = { bearer: null, signer: null };
const bedrock = { wire: adapterOf('bedrock').wire({ type: 'bedrock', region: 'us-east-1' }, noAuth) };
const vertex = {
  wire: adapterOf('vertex').wire({ type: 'vertex', anthropic_version: '2026-10-21', project: 'p-1', location: 'us-east5' }, noAuth),
};

describe('bedrock and vertex addresses', () => {
  it("bedrock: /model/{id}/converse, the id's ':' as %3A, a stream at /converse-stream", () => {
    assert.equal(
      upstreamPathFor(bedrock, 'anthropic.claude-3-5-haiku-20241022-v1:0'),
      '/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse',
    );
    assert.equal(upstreamPathFor(bedrock, 'amazon.nova-pro-v1:0', 'chat', true), '/model/amazon.nova-pro-v1%3A0/converse-stream');
  });

  it("vertex: the publisher's methods under the project and location, by the candidate's protocol or the model's name", () => {
    const base = '/v1/projects/p-1/locations/us-east5/publishers';
    assert.equal(
      upstreamPathFor(vertex, 'gemini-2.5-pro', 'chat', false, 'gemini'),
      `${base}/google/models/gemini-2.5-pro:generateContent`,
    );
    assert.equal(
      upstreamPathFor(vertex, 'gemini-2.5-pro', 'chat', true, 'gemini'),
      `${base}/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse`,
    );
    assert.equal(
      upstreamPathFor(vertex, 'claude-sonnet-4-5@20250929', 'chat', false, 'anthropic'),
      `${base}/anthropic/models/claude-sonnet-4-5%4020250929:rawPredict`,
    );
    assert.equal(
      upstreamPathFor(vertex, 'claude-sonnet-4-5@20250929', 'chat', true),
      `${base}/anthropic/models/claude-sonnet-4-5%4020250929:streamRawPredict`,
    );
  });

  it('serve chat only', () => {
    for (const type of ['bedrock', 'vertex'] as const) {
      assert.equal(servesOperation(type, 'chat'), true);
      for (const op of ['embeddings', 'completions', 'responses', 'count_tokens'] as const)
        assert.equal(servesOperation(type, op), false, `${type} ${op}`);
    }
  });

  it("vertex sends a candidate's own credential as the bearer, and Claude's anthropic-beta; bedrock sends no key header at all", () => {
    const client = {
      authorization: 'Bearer client',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'b1',
      'openai-organization': 'org',
    };
    const v = providerHeaders(vertex, new Credential('ya29.candidate', 'file:x'), {}, 'application/json', 'r1', client);
    assert.equal(v.authorization, 'Bearer ya29.candidate');
    assert.equal(v['anthropic-beta'], 'b1');
    assert.equal(v['anthropic-version'], undefined, 'Vertex takes the version in the body');
    assert.equal(v['openai-organization'], undefined);
    const b = providerHeaders(bedrock, new Credential('ignored', 'file:y'), {}, 'application/json', 'r1', client);
    for (const name of ['authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'anthropic-version', 'openai-organization'])
      assert.equal(b[name], undefined, name);
  });
});
