import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';

// Semantic mode against the mock's embeddings (a bag of words, so a question made of the
// same words in another order, case and punctuation is the same vector, and a different one
// is far), the Responses API's `store: false`, the Vercel AI SDK and LangChain as clients,
// and the books: the embedding billed as a row of its own (endpoint `cache`), a hit's row at
// zero cost with what it saved, and the metrics.

const ADMIN = 'cache-semantic-admin';
const KEY = 'sk-cache-semantic-0001';
const AUTH = { authorization: `Bearer ${KEY}` };

let mock: MockProvider;
let gw: GatewayProcess;
let database: TestDatabase;

before(async () => {
  mock = await startMockProvider({ name: 'sem', port: 0 });
  database = sqliteDatabase();
  gw = await startGatewayProcess(
    {
      server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 2000, admin_token: { env: 'ADMIN_TOKEN' } },
      providers: { oai: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 5000 } },
      routing: {
        routes: {
          'support-bot': {
            cache: { mode: 'semantic', ttl_s: 600, semantic: { embedding_route: 'emb', threshold: 0.95, max_turns: 1 } },
            candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }],
          },
          emb: { candidates: [{ provider: 'oai', model: 'text-embedding-3-small' }] },
          cached: { cache: { mode: 'exact' }, candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }] },
        },
      },
      pricing: {
        models: {
          'gpt-4o-mini': { input_usd_per_mtok: 150, output_usd_per_mtok: 600 },
          'text-embedding-3-small': { input_usd_per_mtok: 20, output_usd_per_mtok: 0 },
        },
      },
      teams: { support: {} },
      keys: [{ id: 'support-1', team: 'support', sha256: hashKey(KEY) }],
      database: { url: database.url },
    },
    { env: { ADMIN_TOKEN: ADMIN } },
  );
});

after(async () => {
  await gw?.stop();
  await mock?.close();
  await database?.drop();
});

const chatCalls = (): number => mock.stats().requests['POST /v1/chat/completions'] ?? 0;

let serial = 0;
const nonce = (): string => `${process.pid}x${++serial}`;

async function ask(model: string, messages: unknown[], id?: string): Promise<Response> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH, ...(id === undefined ? {} : { 'x-request-id': id }) },
    body: JSON.stringify({ model, messages }),
  });
  await res.text();
  assert.equal(res.status, 200);
  return res;
}

describe('semantic mode', { timeout: 60_000 }, () => {
  it('a reworded question of the same words hits, with its similarity; a different question misses', async () => {
    const n = nonce();
    const first = await ask('support-bot', [{ role: 'user', content: `What is the capital of France ${n}?` }]);
    assert.equal(first.headers.get('x-switchyard-cache'), 'miss');
    const calls = chatCalls();
    const paraphrase = await ask('support-bot', [{ role: 'user', content: `${n} FRANCE: capital of... what is the?` }]);
    assert.equal(paraphrase.headers.get('x-switchyard-cache'), 'hit');
    const similarity = Number(paraphrase.headers.get('x-switchyard-cache-similarity'));
    assert.ok(similarity >= 0.95, `similarity ${similarity}`);
    assert.equal(chatCalls(), calls, 'no chat call for the hit');
    const other = await ask('support-bot', [{ role: 'user', content: `How do I bake sourdough bread at home ${n}?` }]);
    assert.equal(other.headers.get('x-switchyard-cache'), 'miss');
  });

  it('the same question under another system prompt, or after another conversation, misses', async () => {
    const n = nonce();
    const q = `How long is the warranty ${n}?`;
    await ask('support-bot', [
      { role: 'system', content: 'You answer for ACME.' },
      { role: 'user', content: q },
    ]);
    const again = await ask('support-bot', [
      { role: 'system', content: 'You answer for ACME.' },
      { role: 'user', content: `${n} warranty: how long is the` },
    ]);
    assert.equal(again.headers.get('x-switchyard-cache'), 'hit', 'a system prompt is not a turn');
    const otherSystem = await ask('support-bot', [
      { role: 'system', content: 'You answer for Globex.' },
      { role: 'user', content: q },
    ]);
    assert.equal(otherSystem.headers.get('x-switchyard-cache'), 'miss');
    const history = [
      { role: 'user', content: 'I bought a kettle.' },
      { role: 'assistant', content: 'Noted.' },
    ];
    await ask('support-bot', [...history, { role: 'user', content: q }]);
    const reworded = await ask('support-bot', [...history, { role: 'user', content: `${n} warranty: how long is the` }]);
    assert.equal(reworded.headers.get('x-switchyard-cache'), 'miss', 'two user turns are over max_turns: exact only');
    const exact = await ask('support-bot', [...history, { role: 'user', content: q }]);
    assert.equal(exact.headers.get('x-switchyard-cache'), 'hit', 'the exact conversation still hits');
  });
});

describe('the books', { timeout: 60_000 }, () => {
  it('the embedding is a row with endpoint cache, and a hit is a row at zero cost with what it saved', async () => {
    const n = nonce();
    await ask('support-bot', [{ role: 'user', content: `Where is my parcel ${n}?` }], `miss-${n}`);
    await ask('support-bot', [{ role: 'user', content: `${n} my parcel where is` }], `hit-${n}`);
    let rows: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 50; i++) {
      const page = await v1(gw.adminUrl as string, 'GET', 'usage/requests?limit=1000', { token: ADMIN });
      assert.equal(page.status, 200, page.text);
      rows = page.body.rows as Array<Record<string, unknown>>;
      if (rows.some((r) => r.request_id === `hit-${n}`)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const miss = rows.find((r) => r.request_id === `miss-${n}`);
    const hit = rows.find((r) => r.request_id === `hit-${n}`);
    const embeddings = rows.filter(
      (r) => String(r.request_id).startsWith(`miss-${n}.cache`) || String(r.request_id).startsWith(`hit-${n}.cache`),
    );
    assert.ok(miss !== undefined && hit !== undefined, JSON.stringify(rows.slice(-5)));
    assert.equal(miss.cache, 'miss');
    assert.ok(Number(miss.cost_usd) > 0);
    assert.equal(hit.cache, 'hit');
    assert.equal(Number(hit.cost_usd), 0);
    assert.equal(Number(hit.saved_usd), Number(miss.cost_usd), 'a hit saves what its entry cost');
    assert.equal(hit.provider, 'oai');
    assert.equal(embeddings.length, 2, 'each semantic lookup embedded its question once');
    for (const e of embeddings) {
      assert.equal(e.endpoint, 'cache');
      assert.equal(e.team, 'support');
      assert.ok(Number(e.cost_usd) > 0, 'the embedding is billed to the team');
    }
    const metrics = await (await fetch(`${gw.adminUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    assert.match(metrics, /switchyard_cache_lookups_total\{route="support-bot",result="hit"\} [1-9]/);
    assert.match(metrics, /switchyard_cache_saved_usd_total\{team="support"\} [0-9.e-]+/);
    assert.match(metrics, /switchyard_cache_similarity_count [1-9]/);
    assert.match(metrics, /switchyard_cache_bytes [1-9]/);
  });
});

describe('more clients and endpoints', { timeout: 60_000 }, () => {
  it('the Responses API is cached with store: false, and bypassed without it', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 });
    // A long answer, so that a stream built from the whole entry has several deltas.
    const input = `say: name a colour ${nonce()}, and then say a sentence long enough to be cut into several deltas`;
    const first = await client.responses.create({ model: 'cached', input, store: false }).withResponse();
    const second = await client.responses.create({ model: 'cached', input, store: false }).withResponse();
    assert.equal(first.response.headers.get('x-switchyard-cache'), 'miss');
    assert.equal(second.response.headers.get('x-switchyard-cache'), 'hit');
    assert.equal(second.data.output_text, first.data.output_text);
    assert.notEqual(second.data.id, first.data.id);
    const stored = await client.responses.create({ model: 'cached', input }).withResponse();
    assert.equal(stored.response.headers.get('x-switchyard-cache'), 'bypass', 'a stored response is never served from the cache');
    let deltas = 0;
    const stream = client.responses.stream({ model: 'cached', input, store: false });
    stream.on('response.output_text.delta', () => {
      deltas += 1;
    });
    const final = await stream.finalResponse();
    assert.equal(final.output_text, first.data.output_text);
    assert.ok(deltas > 1, `${deltas} deltas from a whole entry`);
  });

  it('the Vercel AI SDK and LangChain get hits', async () => {
    const prompt = `Say hello ${nonce()}`;
    const calls = chatCalls();
    const openai = createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY });
    const a = await generateText({ model: openai.chat('cached'), prompt });
    const b = await generateText({ model: openai.chat('cached'), prompt });
    assert.equal(b.text, a.text);
    assert.equal(b.response.headers?.['x-switchyard-cache'], 'hit');
    const lc = new ChatOpenAI({ model: 'cached', apiKey: KEY, maxRetries: 0, configuration: { baseURL: `${gw.url}/v1` } });
    const lcPrompt = `Say goodbye ${nonce()}`;
    const c = await lc.invoke(lcPrompt);
    const d = await lc.invoke(lcPrompt);
    assert.equal(d.content, c.content);
    assert.equal(chatCalls() - calls, 2, 'one upstream call per question');
  });
});
