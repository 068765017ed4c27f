import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type OpenAI from 'openai';
import type { APIError } from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { postgresDatabase, sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { freePort } from '../support/redis.js';
import {
  FAILOVER,
  GREETING,
  type ResponsesFixture,
  ROUTES,
  type RouteKind,
  startMocks,
  startResponsesFixture,
  upstreamBodies,
} from './fixture.js';

// The response store behind the Responses and Conversations APIs, on each backend the
// fleet can share: two replicas on one Redis continue each other's conversations, the
// database (SQLite, Postgres) keeps them across a restart, and a store that cannot be read
// is a 503 `store_unavailable` before anything reaches a provider.

let mocks: Record<RouteKind, MockProvider>;
const started: ResponsesFixture[] = [];

async function replica(options: Parameters<typeof startResponsesFixture>[0]): Promise<ResponsesFixture> {
  mocks ??= await startMocks();
  const fx = await startResponsesFixture({ ...options, mocks });
  started.push(fx);
  return fx;
}

/** Polls until the store has the write made after the last byte of an answer. */
async function eventually<T>(read: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i += 1) {
    try {
      return await read();
    } catch (err) {
      if (i >= 50) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function threeTurns(a: OpenAI, b: OpenAI, model: string): Promise<OpenAI.Responses.Response> {
  const one = await a.responses.create({ model, input: 'Turn one on A.' });
  const two = await eventually(() => b.responses.create({ model, previous_response_id: one.id, input: 'Turn two on B.' }));
  return eventually(() => a.responses.create({ model, previous_response_id: two.id, input: 'Turn three on A.' }));
}

describe('the response store shared by replicas and kept by the database', () => {
  after(async () => {
    for (const fx of started) await fx.stop().catch(() => undefined);
    if (mocks !== undefined) await Promise.all(Object.values(mocks).map((m) => m.close()));
  });

  it("redis: two replicas continue, read and delete each other's responses and conversations", async () => {
    const prefix = `sy-resp-test-${randomBytes(4).toString('hex')}:`;
    const shared = {
      responses: { store: 'redis' },
      extra: { governance: { store: 'redis', redis_url: 'redis://127.0.0.1:6379', key_prefix: prefix } },
    };
    const a = await replica(shared);
    const b = await replica(shared);
    const ca = a.client();
    const cb = b.client();
    const three = await threeTurns(ca, cb, ROUTES.anthropic);
    const sent = JSON.stringify(upstreamBodies(a, 'anthropic').at(-1));
    for (const t of ['Turn one on A.', 'Turn two on B.', 'Turn three on A.']) assert.ok(sent.includes(t), `${t} in ${sent}`);
    const read = await eventually(() => cb.responses.retrieve(three.id));
    assert.equal(read.output_text, GREETING.anthropic);
    await cb.responses.delete(three.id);
    await assert.rejects(ca.responses.retrieve(three.id), (err: APIError) => err.status === 404);
    // Another team on the other replica does not see it either.
    const mine = await ca.responses.create({ model: ROUTES.gemini, input: 'team alpha only' });
    await new Promise((r) => setTimeout(r, 50));
    await assert.rejects(b.client('beta1').responses.retrieve(mine.id), (err: APIError) => err.status === 404);
    const conv = await ca.conversations.create({ items: [{ type: 'message', role: 'user', content: 'shared' }] });
    assert.equal((await cb.conversations.retrieve(conv.id)).id, conv.id);
  });

  it('redis: a conversation survives a failover and a replica', async () => {
    const prefix = `sy-resp-test-${randomBytes(4).toString('hex')}:`;
    const shared = {
      responses: { store: 'redis' },
      extra: { governance: { store: 'redis', redis_url: 'redis://127.0.0.1:6379', key_prefix: prefix } },
    };
    const a = await replica(shared);
    const b = await replica(shared);
    const one = await a.client().responses.create({ model: FAILOVER, input: 'Remember 7.' });
    assert.equal(one.output_text, GREETING.openai);
    mocks.openai.addFault({ mode: 'status', status: 500, count: 3 });
    try {
      const two = await eventually(() => b.client().responses.create({ model: FAILOVER, previous_response_id: one.id, input: 'Which?' }));
      assert.equal(two.output_text, GREETING.anthropic);
      assert.ok(JSON.stringify(upstreamBodies(b, 'anthropic').at(-1)).includes('Remember 7.'));
    } finally {
      mocks.openai.clearFaults();
    }
  });

  for (const engine of ['sqlite', 'postgres'] as const) {
    it(`database (${engine}): a chain of three turns, read back after a restart`, async (t) => {
      const db: TestDatabase | { skip: string } = engine === 'sqlite' ? sqliteDatabase() : await postgresDatabase();
      if ('skip' in db) return t.skip(db.skip);
      try {
        const options = {
          responses: { store: 'database' },
          extra: { database: { url: db.url } },
          dir: mkdtempSync(join(tmpdir(), 'sy-resp-')),
        };
        const first = await replica(options);
        const three = await threeTurns(first.client(), first.client(), ROUTES.bedrock);
        await eventually(() => first.client().responses.retrieve(three.id));
        await first.stop();
        started.splice(started.indexOf(first), 1);
        const again = await replica(options);
        const read = await again.client().responses.retrieve(three.id);
        assert.equal(read.output_text, GREETING.bedrock);
        const items = await again.client().responses.inputItems.list(three.id);
        assert.match(JSON.stringify(items.data), /Turn three on A\./);
        const four = await again
          .client()
          .responses.create({ model: ROUTES.anthropic, previous_response_id: three.id, input: 'Turn four.' });
        assert.equal(four.output_text, GREETING.anthropic);
        const sent = JSON.stringify(upstreamBodies(again, 'anthropic').at(-1));
        for (const s of ['Turn one on A.', 'Turn two on B.', 'Turn three on A.', 'Turn four.'])
          assert.ok(sent.includes(s), `${s} in ${sent}`);
        await again.stop();
        started.splice(started.indexOf(again), 1);
      } finally {
        await db.drop();
      }
    });
  }

  it('a store that cannot be read is 503 store_unavailable, and nothing reaches a provider', async () => {
    const port = await freePort();
    const fx = await replica({
      responses: { store: 'redis' },
      extra: { governance: { store: 'redis', redis_url: `redis://127.0.0.1:${port}`, on_store_error: 'fail_open' } },
    });
    const c = fx.client();
    fx.reset();
    for (const call of [
      () => c.responses.retrieve('resp_abc'),
      () => c.responses.create({ model: ROUTES.anthropic, previous_response_id: 'resp_abc', input: 'hi' }),
      () => c.conversations.retrieve('conv_abc'),
    ]) {
      await assert.rejects(call(), (err: APIError) => {
        assert.equal(err.status, 503);
        assert.equal(err.code, 'store_unavailable');
        return true;
      });
    }
    assert.equal(upstreamBodies(fx, 'anthropic').length, 0);
    // A new turn needs nothing from the store: it is served, and its store write is counted as failed.
    const res = await c.responses.create({ model: ROUTES.anthropic, input: 'still served' });
    assert.equal(res.output_text, GREETING.anthropic);
    const metrics = await fetch(`${fx.gw.adminUrl}/metrics`).then((r) => r.text());
    assert.match(metrics, /switchyard_responses_store_failures_total\{operation="response"\} [1-9]/);
  });
});
