import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';

// The response cache through a real gateway, with the official clients: what reaches the
// upstream (the mock's own count), what the client gets and the headers that say so.

const KEYS = {
  a: 'sk-cache-team-a-0001',
  a2: 'sk-cache-team-a-0002',
  b: 'sk-cache-team-b-0001',
  off: 'sk-cache-team-off-01',
  keyOff: 'sk-cache-key-off-001',
  rpm: 'sk-cache-rpm-limited',
  narrow: 'sk-cache-narrow-0001',
  poor: 'sk-cache-poor-budget1',
} as const;

let mock: MockProvider;
let flaky: MockProvider;
let backup: MockProvider;
let gw: GatewayProcess;

function openaiAs(key: string, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000, defaultHeaders: headers });
}

function anthropicAs(key: string): Anthropic {
  return new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, timeout: 10_000 });
}

before(async () => {
  mock = await startMockProvider({ name: 'main', port: 0, streamChunks: 4 });
  flaky = await startMockProvider({ name: 'flaky', port: 0 });
  backup = await startMockProvider({ name: 'backup', port: 0 });
  const exact = { mode: 'exact', ttl_s: 600 };
  gw = await startGatewayProcess({
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    providers: {
      oai: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 5000 },
      anth: { type: 'anthropic', base_url: mock.baseUrl, timeout_ms: 5000 },
      flaky: { type: 'openai', base_url: flaky.baseUrl, timeout_ms: 5000 },
      backup: { type: 'openai', base_url: backup.baseUrl, timeout_ms: 5000 },
    },
    routing: {
      routes: {
        cached: { cache: exact, candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }] },
        'cached-claude': { cache: exact, candidates: [{ provider: 'anth', model: 'claude-haiku-4-5' }] },
        'cached-translated': { cache: exact, candidates: [{ provider: 'anth', model: 'claude-haiku-4-5' }] },
        'with-fallback': {
          cache: exact,
          candidates: [
            { provider: 'flaky', model: 'gpt-4o-mini' },
            { provider: 'backup', model: 'gpt-4o-mini' },
          ],
        },
        'fallback-stored': {
          cache: { ...exact, store_fallbacks: true },
          candidates: [
            { provider: 'flaky', model: 'gpt-4o-mini' },
            { provider: 'backup', model: 'gpt-4o-mini' },
          ],
        },
        'tool-calls-stored': { cache: { ...exact, cache_tool_calls: true }, candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }] },
        embed: { cache: exact, candidates: [{ provider: 'oai', model: 'text-embedding-3-small' }] },
        uncached: { candidates: [{ provider: 'oai', model: 'gpt-4o-mini' }] },
      },
    },
    pricing: { models: { 'gpt-4o-mini': { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } } },
    teams: {
      a: {},
      b: {},
      off: { cache: 'off' },
      limited: { rate_limit: { rpm: 2 } },
    },
    keys: [
      { id: 'a-1', team: 'a', sha256: hashKey(KEYS.a) },
      { id: 'a-2', team: 'a', sha256: hashKey(KEYS.a2) },
      { id: 'b-1', team: 'b', sha256: hashKey(KEYS.b) },
      { id: 'off-1', team: 'off', sha256: hashKey(KEYS.off) },
      { id: 'key-off', team: 'a', sha256: hashKey(KEYS.keyOff), cache: 'off' },
      { id: 'rpm-1', team: 'limited', sha256: hashKey(KEYS.rpm) },
      // Team a's, so the entries it could hit are there: its own list still refuses the model.
      { id: 'narrow-1', team: 'a', sha256: hashKey(KEYS.narrow), allowed_models: ['uncached'] },
      // Team a's, with a budget no new request's reservation fits in: its team's entries still answer it.
      { id: 'poor-1', team: 'a', sha256: hashKey(KEYS.poor), budget_usd_per_month: 0.000001 },
    ],
  });
});

after(async () => {
  await gw?.stop();
  await Promise.all([mock?.close(), flaky?.close(), backup?.close()]);
});

let serial = 0;
/** A question no other test asks: its first asking is always a miss. */
function fresh(label: string): string {
  serial += 1;
  return `${label} number ${serial} at ${process.pid}`;
}

const upstreamCalls = (m: MockProvider = mock): number => m.stats().total;

async function chatRaw(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
}

describe('exact cache', { timeout: 120_000 }, () => {
  it('a miss then a hit calls the upstream once, and the hit names the candidate that made it', async () => {
    const client = openaiAs(KEYS.a);
    const content = fresh('what is a gateway');
    const calls = upstreamCalls();
    const first = await client.chat.completions.create({ model: 'cached', messages: [{ role: 'user', content }] }).withResponse();
    assert.equal(first.response.headers.get('x-switchyard-cache'), 'miss');
    const key = first.response.headers.get('x-switchyard-cache-key');
    assert.match(key ?? '', /^[0-9a-f]{64}$/);
    const second = await client.chat.completions.create({ model: 'cached', messages: [{ role: 'user', content }] }).withResponse();
    assert.equal(second.response.headers.get('x-switchyard-cache'), 'hit');
    assert.equal(second.response.headers.get('x-switchyard-cache-key'), key, 'the same request gives the same digest');
    assert.equal(second.response.headers.get('x-switchyard-provider'), 'oai');
    assert.equal(second.response.headers.get('x-switchyard-model'), 'gpt-4o-mini');
    assert.match(second.response.headers.get('age') ?? '', /^\d+$/);
    assert.equal(upstreamCalls() - calls, 1, 'one upstream call for two answers');
    assert.equal(second.data.choices[0]?.message.content, first.data.choices[0]?.message.content);
    assert.notEqual(second.data.id, first.data.id, 'a hit has an id of its own');
    assert.equal(second.data.usage?.total_tokens, first.data.usage?.total_tokens);
  });

  it('reordered keys and a default written out hit; a changed tool, seed, temperature or beta header misses', async () => {
    const content = fresh('reorder me');
    const base = { model: 'cached', messages: [{ role: 'user', content }], temperature: 0.2, seed: 7 };
    const first = await chatRaw(KEYS.a, base);
    assert.equal(first.headers.get('x-switchyard-cache'), 'miss');
    const reordered = await chatRaw(KEYS.a, { seed: 7, n: 1, temperature: 0.2, messages: [{ content, role: 'user' }], model: 'cached' });
    assert.equal(reordered.headers.get('x-switchyard-cache'), 'hit');
    const tool = { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } };
    const variants: Array<[string, Record<string, unknown>, Record<string, string>]> = [
      ['a tool', { ...base, tools: [tool] }, {}],
      ['the seed', { ...base, seed: 8 }, {}],
      ['the temperature', { ...base, temperature: 0.3 }, {}],
      ['a beta header', base, { 'openai-beta': 'assistants=v2' }],
    ];
    for (const [what, body, headers] of variants) {
      const res = await chatRaw(KEYS.a, body, headers);
      await res.text();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-switchyard-cache'), 'miss', `a changed ${what} misses`);
    }
  });

  it('under scope team, team B never gets team A’s answer; another key of team A does', async () => {
    const content = fresh('team secret');
    const a = await chatRaw(KEYS.a, { model: 'cached', messages: [{ role: 'user', content }] });
    assert.equal(a.headers.get('x-switchyard-cache'), 'miss');
    const b = await chatRaw(KEYS.b, { model: 'cached', messages: [{ role: 'user', content }] });
    assert.equal(b.headers.get('x-switchyard-cache'), 'miss');
    assert.notEqual(b.headers.get('x-switchyard-cache-key'), a.headers.get('x-switchyard-cache-key'));
    const a2 = await chatRaw(KEYS.a2, { model: 'cached', messages: [{ role: 'user', content }] });
    assert.equal(a2.headers.get('x-switchyard-cache'), 'hit');
  });

  it('a team or key with the cache off bypasses it, and a route without a cache says nothing', async () => {
    const content = fresh('off');
    for (const key of [KEYS.off, KEYS.keyOff]) {
      for (let i = 0; i < 2; i++) {
        const res = await chatRaw(key, { model: 'cached', messages: [{ role: 'user', content }] });
        await res.text();
        assert.equal(res.headers.get('x-switchyard-cache'), 'bypass');
      }
    }
    const plain = await chatRaw(KEYS.a, { model: 'uncached', messages: [{ role: 'user', content }] });
    await plain.text();
    assert.equal(plain.headers.get('x-switchyard-cache'), null);
  });

  it('Cache-Control no-store bypasses, no-cache refreshes the entry, max-age refuses an older one', async () => {
    const content = fresh('controls');
    const body = { model: 'cached', messages: [{ role: 'user', content }] };
    const noStore = await chatRaw(KEYS.a, body, { 'cache-control': 'no-store' });
    await noStore.text();
    assert.equal(noStore.headers.get('x-switchyard-cache'), 'bypass');
    const miss = await chatRaw(KEYS.a, body);
    await miss.text();
    assert.equal(miss.headers.get('x-switchyard-cache'), 'miss', 'no-store stored nothing');
    const calls = upstreamCalls();
    const refresh = await chatRaw(KEYS.a, body, { 'cache-control': 'no-cache' });
    await refresh.text();
    assert.equal(refresh.headers.get('x-switchyard-cache'), 'refresh');
    assert.equal(upstreamCalls() - calls, 1, 'no-cache asks the upstream');
    await new Promise((r) => setTimeout(r, 1100));
    const young = await chatRaw(KEYS.a, body, { 'cache-control': 'max-age=0' });
    await young.text();
    assert.equal(young.headers.get('x-switchyard-cache'), 'miss', 'an entry older than max-age is not served');
    const any = await chatRaw(KEYS.a, body, { 'cache-control': 'max-age=3600' });
    await any.text();
    assert.equal(any.headers.get('x-switchyard-cache'), 'hit');
    const bad = await chatRaw(KEYS.a, body, { 'x-switchyard-cache-ttl': 'soon' });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: { message: string } }).error.message, /x-switchyard-cache-ttl/);
  });

  it('a namespace is a cache of its own within the scope', async () => {
    const content = fresh('namespaced');
    const body = { model: 'cached', messages: [{ role: 'user', content }] };
    await (await chatRaw(KEYS.a, body)).text();
    const other = await chatRaw(KEYS.a, body, { 'x-switchyard-cache-namespace': 'experiment-1' });
    await other.text();
    assert.equal(other.headers.get('x-switchyard-cache'), 'miss');
    const again = await chatRaw(KEYS.a, body, { 'x-switchyard-cache-namespace': 'experiment-1' });
    await again.text();
    assert.equal(again.headers.get('x-switchyard-cache'), 'hit');
  });

  it('an answer from a fallback candidate is not stored under the route, unless store_fallbacks says so', async () => {
    const content = fresh('fallback');
    flaky.addFault({ mode: 'status', status: 500, count: 1 });
    const first = await chatRaw(KEYS.a, { model: 'with-fallback', messages: [{ role: 'user', content }] });
    await first.text();
    assert.equal(first.headers.get('x-switchyard-provider'), 'backup');
    assert.equal(first.headers.get('x-switchyard-cache'), 'miss');
    const second = await chatRaw(KEYS.a, { model: 'with-fallback', messages: [{ role: 'user', content }] });
    await second.text();
    assert.equal(second.headers.get('x-switchyard-cache'), 'miss', "the fallback's answer was not stored");
    assert.equal(second.headers.get('x-switchyard-provider'), 'flaky');
    const third = await chatRaw(KEYS.a, { model: 'with-fallback', messages: [{ role: 'user', content }] });
    await third.text();
    assert.equal(third.headers.get('x-switchyard-cache'), 'hit');
    assert.equal(third.headers.get('x-switchyard-provider'), 'flaky', 'the hit names the primary, whose answer it is');

    const stored = fresh('fallback stored');
    flaky.addFault({ mode: 'status', status: 500, count: 1 });
    await (await chatRaw(KEYS.a, { model: 'fallback-stored', messages: [{ role: 'user', content: stored }] })).text();
    const hit = await chatRaw(KEYS.a, { model: 'fallback-stored', messages: [{ role: 'user', content: stored }] });
    await hit.text();
    assert.equal(hit.headers.get('x-switchyard-cache'), 'hit');
    assert.equal(hit.headers.get('x-switchyard-provider'), 'backup');
  });

  it('a cut stream is not stored', async () => {
    const content = fresh('cut');
    mock.addFault({ mode: 'cut_stream', after_chunks: 1, count: 1 });
    const client = openaiAs(KEYS.a);
    await assert.rejects(async () => {
      const stream = await client.chat.completions.create({ model: 'cached', messages: [{ role: 'user', content }], stream: true });
      for await (const _ of stream) {
        // drained until the cut
      }
    });
    const next = await chatRaw(KEYS.a, { model: 'cached', messages: [{ role: 'user', content }] });
    await next.text();
    assert.equal(next.headers.get('x-switchyard-cache'), 'miss');
  });

  it('an answer that calls a tool is stored only with cache_tool_calls', async () => {
    const tools = [
      { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
    ];
    const content = fresh('use the weather tool for Paris');
    for (const [model, second] of [
      ['cached', 'miss'],
      ['tool-calls-stored', 'hit'],
    ] as const) {
      const first = await chatRaw(KEYS.a, { model, messages: [{ role: 'user', content }], tools });
      const body = (await first.json()) as { choices: Array<{ message: { tool_calls?: unknown[] } }> };
      assert.ok((body.choices[0]?.message.tool_calls?.length ?? 0) > 0, 'the mock called the tool');
      const again = await chatRaw(KEYS.a, { model, messages: [{ role: 'user', content }], tools });
      await again.text();
      assert.equal(again.headers.get('x-switchyard-cache'), second, model);
    }
  });

  it('embeddings are cached exactly', async () => {
    const client = openaiAs(KEYS.a);
    const input = fresh('embed this');
    const calls = upstreamCalls();
    const first = await client.embeddings.create({ model: 'embed', input }).withResponse();
    const second = await client.embeddings.create({ model: 'embed', input }).withResponse();
    assert.equal(first.response.headers.get('x-switchyard-cache'), 'miss');
    assert.equal(second.response.headers.get('x-switchyard-cache'), 'hit');
    assert.deepEqual(second.data.data[0]?.embedding, first.data.data[0]?.embedding);
    assert.equal(upstreamCalls() - calls, 1);
  });
});

describe('streams', { timeout: 120_000 }, () => {
  async function openaiStream(
    client: OpenAI,
    model: string,
    content: string,
  ): Promise<{ text: string; deltas: number; cache: string | null; ids: Set<string> }> {
    const { data: stream, response } = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content }], stream: true, stream_options: { include_usage: true } })
      .withResponse();
    let text = '';
    let deltas = 0;
    const ids = new Set<string>();
    for await (const chunk of stream) {
      ids.add(chunk.id);
      const d = chunk.choices[0]?.delta?.content;
      if (d) {
        text += d;
        deltas += 1;
      }
    }
    return { text, deltas, cache: response.headers.get('x-switchyard-cache'), ids };
  }

  it('an OpenAI streamed miss is replayed as a stream of more than one delta, with fresh ids', async () => {
    const client = openaiAs(KEYS.a);
    const content = fresh('stream me');
    const calls = upstreamCalls();
    const first = await openaiStream(client, 'cached', content);
    const second = await openaiStream(client, 'cached', content);
    assert.equal(first.cache, 'miss');
    assert.equal(second.cache, 'hit');
    assert.equal(second.text, first.text);
    assert.ok(second.deltas > 1, `the hit came in ${second.deltas} deltas`);
    assert.equal(second.deltas, first.deltas, 'the same events');
    assert.equal(second.ids.size, 1);
    assert.ok(![...second.ids].some((id) => first.ids.has(id)), 'fresh ids');
    assert.equal(upstreamCalls() - calls, 1);
  });

  it('crosses between stream and whole, both ways, for an OpenAI client', async () => {
    const client = openaiAs(KEYS.a);
    const streamedFirst = fresh('streamed first');
    const s = await openaiStream(client, 'cached', streamedFirst);
    const whole = await client.chat.completions
      .create({ model: 'cached', messages: [{ role: 'user', content: streamedFirst }] })
      .withResponse();
    assert.equal(whole.response.headers.get('x-switchyard-cache'), 'hit');
    assert.equal(whole.data.choices[0]?.message.content, s.text);
    assert.equal(whole.data.choices[0]?.finish_reason, 'stop');

    // A long answer, so that its replay as a stream has several deltas to cut it into.
    const wholeFirst = `say: ${fresh('whole first')} and then a sentence long enough to be cut into several deltas by the replay`;
    const w = await client.chat.completions.create({ model: 'cached', messages: [{ role: 'user', content: wholeFirst }] });
    const replayed = await openaiStream(client, 'cached', wholeFirst);
    assert.equal(replayed.cache, 'hit');
    assert.equal(replayed.text, w.choices[0]?.message.content);
    assert.ok(replayed.deltas > 1, `a whole answer replayed as ${replayed.deltas} deltas`);
  });

  it('an Anthropic client gets its own events replayed, and crossing works in its protocol', async () => {
    const client = anthropicAs(KEYS.a);
    const content = fresh('claude stream');
    const calls = upstreamCalls();
    const stream1 = client.messages.stream({ model: 'cached-claude', max_tokens: 200, messages: [{ role: 'user', content }] });
    const first = await stream1.finalMessage();
    let deltas = 0;
    const stream2 = client.messages.stream({ model: 'cached-claude', max_tokens: 200, messages: [{ role: 'user', content }] });
    stream2.on('text', () => {
      deltas += 1;
    });
    const second = await stream2.finalMessage();
    const raw2 = await stream2.withResponse();
    assert.equal(raw2.response.headers.get('x-switchyard-cache'), 'hit');
    assert.deepEqual(second.content, first.content);
    assert.notEqual(second.id, first.id);
    assert.ok(deltas > 1, `${deltas} text deltas`);
    assert.equal(second.stop_reason, first.stop_reason);
    const whole = await client.messages
      .create({ model: 'cached-claude', max_tokens: 200, messages: [{ role: 'user', content }] })
      .withResponse();
    assert.equal(whole.response.headers.get('x-switchyard-cache'), 'hit');
    assert.deepEqual(whole.data.content, first.content);
    assert.equal(upstreamCalls() - calls, 1);

    const wholeFirst = `say: ${fresh('claude whole first')} with words enough for a replay to cut into several text deltas`;
    const w = await client.messages.create({ model: 'cached-claude', max_tokens: 200, messages: [{ role: 'user', content: wholeFirst }] });
    let replayedDeltas = 0;
    const replay = client.messages.stream({ model: 'cached-claude', max_tokens: 200, messages: [{ role: 'user', content: wholeFirst }] });
    replay.on('text', () => {
      replayedDeltas += 1;
    });
    const replayed = await replay.finalMessage();
    assert.deepEqual(replayed.content, w.content);
    assert.ok(replayedDeltas > 1);
  });

  it('entries never cross protocols: an Anthropic client does not get an OpenAI client’s entry', async () => {
    const content = fresh('cross protocol');
    const o = await chatRaw(KEYS.a, { model: 'cached-translated', messages: [{ role: 'user', content }], max_tokens: 100 });
    await o.text();
    assert.equal(o.headers.get('x-switchyard-cache'), 'miss');
    const a = await anthropicAs(KEYS.a)
      .messages.create({ model: 'cached-translated', max_tokens: 100, messages: [{ role: 'user', content }] })
      .withResponse();
    assert.equal(a.response.headers.get('x-switchyard-cache'), 'miss');
  });
});

describe('governance of hits', { timeout: 60_000 }, () => {
  it('a hit is admitted by rpm: a key at its rpm gets 429 even for a cached answer', async () => {
    const content = fresh('rpm');
    const body = { model: 'cached', messages: [{ role: 'user', content }] };
    const first = await chatRaw(KEYS.rpm, body);
    await first.text();
    const second = await chatRaw(KEYS.rpm, body);
    await second.text();
    assert.equal(second.headers.get('x-switchyard-cache'), 'hit');
    const third = await chatRaw(KEYS.rpm, body);
    await third.text();
    assert.equal(third.status, 429);
  });

  it('a key that may not use the model gets 403, not a hit', async () => {
    const content = fresh('not allowed');
    await (await chatRaw(KEYS.a, { model: 'cached', messages: [{ role: 'user', content }] })).text();
    const res = await chatRaw(KEYS.narrow, { model: 'cached', messages: [{ role: 'user', content }] });
    await res.text();
    assert.equal(res.status, 403);
  });

  it('a key whose budget cannot cover a new request still gets its team’s cached answers', async () => {
    const content = fresh('budget');
    const body = { model: 'cached', messages: [{ role: 'user', content }] };
    const refused = await chatRaw(KEYS.poor, body);
    await refused.text();
    assert.equal(refused.status, 402, 'a new request does not fit its budget');
    await (await chatRaw(KEYS.a, body)).text();
    const hit = await chatRaw(KEYS.poor, body);
    await hit.text();
    assert.equal(hit.status, 200);
    assert.equal(hit.headers.get('x-switchyard-cache'), 'hit');
    assert.equal(hit.headers.get('x-switchyard-cost-usd'), '0.000000');
  });
});
