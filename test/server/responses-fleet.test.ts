import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { freePort, startRedis, stopRedis } from '../support/redis.js';
import { fileResources } from '../support/resources.js';

// Invariant "response ownership is fleet-wide": two replicas behind one Service share a
// Redis governance store, and a stored response's owner (its team and candidate) is kept
// there. A follow-up on the other replica goes to the candidate that created the response;
// another team's id, and an id no replica knows, are 404 response_not_found on every
// replica (GET, DELETE and previous_response_id alike), never routed as new, where a shared
// upstream account could continue another team's conversation. On a private redis-server,
// so that stopping it (fail_closed) touches no other test.

const resources = fileResources('switchyard-responses-fleet-');
const keyOf = (team: string): string => `sy-fleet-${team}-key-0000`;
let mock: MockProvider;
let port: number;
let redis: ChildProcess;
let replicas: [GatewayProcess, GatewayProcess];

const clientOf = (gw: GatewayProcess, team: string) =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: keyOf(team), maxRetries: 0, timeout: 10_000 });

before(async () => {
  mock = await resources.startMock({ name: 'east' });
  port = await freePort();
  redis = await startRedis(port);
  const config = baseConfig(
    { east: mock.baseUrl },
    { text: { candidates: [{ provider: 'east', model: 'gpt-a' }] } },
    {
      teams: { alpha: {}, beta: {} },
      keys: [
        { id: 'alpha', team: 'alpha', sha256: hashKey(keyOf('alpha')) },
        { id: 'beta', team: 'beta', sha256: hashKey(keyOf('beta')) },
      ],
      governance: { store: 'redis', redis_url: `redis://127.0.0.1:${port}`, key_prefix: `fleet-${randomUUID()}:` },
    },
  );
  replicas = [await resources.startGw(config), await resources.startGw(config)];
});

after(async () => {
  await Promise.all(replicas.map((gw) => gw.stop()));
  if (redis !== undefined) await stopRedis(redis);
});

async function notFound(call: Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(err instanceof OpenAI.NotFoundError, `${what}: ${String(err)}`);
    assert.equal((err as { code?: string }).code, 'response_not_found', what);
    return true;
  });
}

describe('invariant "response ownership is fleet-wide": two replicas on one Redis', () => {
  it("a response created on one replica is continued, read and deleted on the other by its team, and is another team's 404 on both", async () => {
    const [one, two] = replicas;
    const created = await clientOf(one, 'alpha').responses.create({ model: 'text', input: 'remember the number 9' });
    // Another team, on either replica: not found, never routed as new.
    for (const gw of replicas) {
      await notFound(
        clientOf(gw, 'beta').responses.create({ model: 'text', input: 'what was it?', previous_response_id: created.id }),
        'beta continues',
      );
      await notFound(clientOf(gw, 'beta').responses.retrieve(created.id), 'beta reads');
    }
    const seenBefore = mock.stats().recent.filter((r) => r.path === '/v1/responses').length;
    // The creating team on the other replica: routed to the candidate that holds it.
    const continued = await clientOf(two, 'alpha').responses.create({
      model: 'text',
      input: 'what was it?',
      previous_response_id: created.id,
    });
    assert.ok(continued.id !== created.id);
    const upstream = mock.stats().recent.filter((r) => r.path === '/v1/responses');
    assert.equal(upstream.length, seenBefore + 1, 'one upstream call, the continuation');
    assert.equal((JSON.parse(upstream.at(-1)?.body ?? '{}') as { previous_response_id?: string }).previous_response_id, created.id);
    const read = await clientOf(two, 'alpha').responses.retrieve(created.id);
    assert.equal(read.id, created.id);
    await clientOf(two, 'alpha').responses.delete(created.id);
    // Deleted through the other replica: forgotten fleet-wide (the first replica's own table included, once it asks).
    await notFound(clientOf(two, 'alpha').responses.retrieve(created.id), 'read after delete');
  });

  it('an id no replica knows, with keys configured, is refused as not found rather than routed as new', async () => {
    const seenBefore = mock.stats().recent.filter((r) => r.path === '/v1/responses').length;
    await notFound(
      clientOf(replicas[1], 'alpha').responses.create({ model: 'text', input: 'go on', previous_response_id: 'resp_made_up_elsewhere' }),
      'unknown id',
    );
    assert.equal(mock.stats().recent.filter((r) => r.path === '/v1/responses').length, seenBefore, 'nothing reached the upstream');
  });

  it('with Redis down and on_store_error fail_closed, a follow-up another replica created is refused 503, not routed as new', async () => {
    const created = await clientOf(replicas[0], 'alpha').responses.create({ model: 'text', input: 'hold this' });
    await stopRedis(redis);
    await assert.rejects(
      clientOf(replicas[1], 'alpha').responses.create({ model: 'text', input: 'and now?', previous_response_id: created.id }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError && err.status === 503, String(err));
        return true;
      },
    );
    redis = await startRedis(port);
  });
});
