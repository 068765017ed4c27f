import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { type LocalOidcProvider, startOidcProvider } from '../support/oidc.js';
import { fileResources } from '../support/resources.js';

// auth.jwt.mode on a gateway with no API keys (an open one): strict asks every call for a
// token; optional serves a call with no credential as the open gateway would, but a token that
// is presented is judged, so a bad one is a 401 and never falls back to an anonymous call.

const resources = fileResources('switchyard-jwt-modes-');

let op: LocalOidcProvider;
let east: MockProvider;

async function openGateway(mode: 'strict' | 'optional'): Promise<GatewayProcess> {
  return resources.startGw(
    baseConfig(
      { east: east.baseUrl },
      { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] } },
      {
        teams: { platform: {} },
        auth: {
          jwt: {
            mode,
            issuers: [{ id: 'corp', issuer: op.issuer, audiences: ['switchyard'], jwks: { url: op.jwksUri }, team: { claim: 'team' } }],
          },
        },
      },
    ),
  );
}

describe('auth.jwt.mode on a gateway without API keys', () => {
  before(async () => {
    op = await startOidcProvider({ clients: [{ id: 'alice', claims: { team: 'platform' } }] });
    resources.addUpstream(() => op.stop());
    east = await resources.startMock({ name: 'east' });
  });

  it('strict: a call with no credential is a 401; a token is served', async () => {
    const gw = await openGateway('strict');
    const bare = await postChat(gw.url, chatBody('gpt-4o-mini'));
    assert.equal(bare.status, 401, bare.text);
    assert.equal(bare.json().error.code, 'unauthorized');
    assert.equal((await postChat(gw.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${await op.token('alice')}` })).status, 200);
  });

  it('optional: a call with no credential is served; a token is served as its principal; a bad token is a 401, not an anonymous call', async () => {
    const gw = await openGateway('optional');
    assert.equal((await postChat(gw.url, chatBody('gpt-4o-mini'))).status, 200);
    const signed = await postChat(gw.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${await op.token('alice')}` });
    assert.equal(signed.status, 200, signed.text);
    await gw.waitForLog((l) => l.principal === 'jwt:corp:alice' && l.status === 200);
    const expired = await postChat(gw.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${await op.hostile.expired('alice')}` });
    assert.equal(expired.status, 401, expired.text);
    assert.match(expired.headers.get('www-authenticate') ?? '', /invalid_token/);
  });
});
