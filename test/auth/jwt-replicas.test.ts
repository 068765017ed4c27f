import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { type LocalOidcProvider, startOidcProvider } from '../support/oidc.js';
import { deleteKeysWithPrefix } from '../support/redis.js';
import { fileResources } from '../support/resources.js';

// A signed-in principal's limits are its own, within its team's, and counted in the governance
// store: two gateway replicas on one Redis hold a principal to its rpm across both, while
// another principal of the same team still has its own.

const resources = fileResources('switchyard-jwt-replicas-');
const REDIS_URL = 'redis://127.0.0.1:6379';
const PRINCIPAL_RPM = 3;
const prefix = `switchyard-test-${randomUUID()}:`;

let op: LocalOidcProvider;
let east: MockProvider;
let a: GatewayProcess;
let b: GatewayProcess;

describe('two gateway replicas on one Redis', () => {
  before(async () => {
    op = await startOidcProvider({
      clients: [
        { id: 'alice', claims: { team: 'platform' } },
        { id: 'bob', claims: { team: 'platform' } },
      ],
    });
    resources.addUpstream(() => op.stop());
    east = await resources.startMock({ name: 'east' });
    const config = baseConfig(
      { east: east.baseUrl },
      { 'gpt-4o-mini': { candidates: [{ provider: 'east' }] } },
      {
        teams: { platform: { rate_limit: { rpm: 1000 } } },
        governance: { store: 'redis', redis_url: REDIS_URL, key_prefix: prefix },
        auth: {
          jwt: {
            issuers: [{ id: 'corp', issuer: op.issuer, audiences: ['switchyard'], jwks: { url: op.jwksUri }, team: { claim: 'team' } }],
            principals: { rpm: PRINCIPAL_RPM },
          },
        },
      },
    );
    [a, b] = await Promise.all([resources.startGw(config), resources.startGw(config)]);
  });

  after(async () => {
    await deleteKeysWithPrefix(REDIS_URL, prefix);
  });

  it('hold one principal to its rpm across both, and leave another principal of its team its own', async () => {
    const alice = await op.token('alice');
    const statuses: number[] = [];
    for (let i = 0; i < 2 * PRINCIPAL_RPM + 2; i += 1) {
      const r = await postChat(i % 2 === 0 ? a.url : b.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${alice}` });
      statuses.push(r.status);
      if (r.status === 429) assert.equal(JSON.parse(r.text).error.type, 'rate_limit_error', r.text);
    }
    assert.deepEqual(
      statuses,
      [...Array(PRINCIPAL_RPM).fill(200), ...Array(PRINCIPAL_RPM + 2).fill(429)],
      'served up to the rpm, then refused, on whichever replica',
    );
    const bob = await op.token('bob');
    assert.equal((await postChat(b.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${bob}` })).status, 200);
    assert.equal((await postChat(a.url, chatBody('gpt-4o-mini'), { authorization: `Bearer ${bob}` })).status, 200);
  });
});
