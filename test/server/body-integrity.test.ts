import assert from 'node:assert/strict';
import { before, beforeEach, describe, it } from 'node:test';
import Anthropic, { APIError as AnthropicApiError } from '@anthropic-ai/sdk';
import OpenAI, { APIError as OpenaiApiError } from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { postChat } from '../support/http.js';
import { fileResources } from '../support/resources.js';

// What a real gateway process does to the bytes of a client's body: a rewrite (the model
// renamed, a stream's usage asked for) changes only what it sets, so a seed beyond 2^53
// reaches the provider as the client wrote it; and a body that names a top-level key twice
// is refused at the edge, in the client's protocol, before anything goes upstream.

const resources = fileResources('switchyard-body-integrity-');
let mock: MockProvider;
let gw: GatewayProcess;

before(async () => {
  mock = await resources.startMock({ name: 'east', streamChunks: 3 });
  gw = await resources.startGw(
    {
      server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
      providers: {
        east: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 5000 },
        anth: { type: 'anthropic', base_url: mock.baseUrl, api_key: { env: 'ANTH_KEY' }, timeout_ms: 5000 },
      },
      routing: {
        routes: {
          ok: { candidates: [{ provider: 'east' }] },
          alias: { candidates: [{ provider: 'east', model: 'gpt-4o-mini' }] },
          claude: { candidates: [{ provider: 'anth', model: 'claude-sonnet-4-5' }] },
        },
      },
    },
    { env: { ANTH_KEY: 'sk-ant-body-integrity' } },
  );
});

beforeEach(() => mock.reset());

/** The one body the upstream received since the last reset. */
function received(): string {
  const recent = mock.stats().recent;
  assert.equal(recent.length, 1, 'one request reached the upstream');
  return recent[0]!.body;
}

describe('bytes the gateway rewrites lose nothing', () => {
  // A re-encoded body would say 9007199254740992, 1, "café" and drop the spacing.
  const fields = '"seed" : 9007199254740993, "temperature":1.0,\n "user":"caf\\u00e9 \\"}\\"", "metadata":{"n":12345678901234567890}';
  const messages = '"messages":[{"role":"user","content":"hi"}]';

  for (const [route, upstream] of [
    ['ok', 'ok'],
    ['alias', 'gpt-4o-mini'],
  ] as const) {
    it(`a stream sent with stream_options {} reaches the upstream byte for byte, include_usage added (${route} -> ${upstream})`, async () => {
      const body = (model: string, options: string) =>
        `{"model":"${model}", ${fields}, "stream":true, "stream_options":${options}, ${messages}}`;
      const r = await postChat(gw.url, body(route, '{}'));
      assert.equal(r.status, 200, r.text);
      assert.match(r.text, /data: \[DONE\]/);
      assert.doesNotMatch(r.text, /"usage":\{/, 'the client did not ask for the usage event');
      assert.equal(received(), body(upstream, '{"include_usage":true}'));
    });
  }

  it('include_usage false is turned true in place; a renamed plain request changes only its model', async () => {
    const streamed = `{"model":"alias",${fields},"stream":true,"stream_options":{ "include_usage" : false },${messages}}`;
    assert.equal((await postChat(gw.url, streamed)).status, 200);
    assert.equal(received(), streamed.replace('"alias"', '"gpt-4o-mini"').replace('false', 'true'));
    mock.reset();
    const plain = `{${fields}, ${messages}, "model" : "alias" }`;
    assert.equal((await postChat(gw.url, plain)).status, 200);
    assert.equal(received(), plain.replace('"alias"', '"gpt-4o-mini"'));
  });

  it('an Anthropic message renamed for its provider keeps its big integers', async () => {
    const body = `{"model":"claude","max_tokens":64,"metadata":{"user_id":"u"},"x_trace":9007199254740993,${messages}}`;
    const r = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body,
    });
    assert.equal(r.status, 200, await r.text());
    assert.equal(received(), body.replace('"claude"', '"claude-sonnet-4-5"'));
  });
});

/** A fetch that writes a second, earlier `model` key into the body an SDK serialised. */
function withExpensiveFirstModel(): typeof fetch {
  return (input, init) => {
    const body = String(init?.body);
    return fetch(input, { ...init, body: body.replace('{', '{"model":"gpt-4-EXPENSIVE",') });
  };
}

describe('a body that names a top-level key twice', () => {
  it('is refused 400 duplicate_key to the openai client, naming the key, and nothing reaches the upstream', async () => {
    const client = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'unused',
      maxRetries: 0,
      timeout: 10_000,
      fetch: withExpensiveFirstModel(),
    });
    const err = await client.chat.completions.create({ model: 'ok', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('the duplicate was served'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenaiApiError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.code, 'duplicate_key');
    assert.equal(err.param, 'model');
    assert.equal(err.type, 'invalid_request_error');
    assert.equal(mock.stats().recent.length, 0);
  });

  it('is refused 400 in the Anthropic shape to the Anthropic client on /v1/messages, and nothing reaches the upstream', async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, timeout: 10_000, fetch: withExpensiveFirstModel() });
    const err = await client.messages.create({ model: 'claude', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('the duplicate was served'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AnthropicApiError, String(err));
    assert.equal(err.status, 400);
    const body = err.error as { type?: string; error?: { type?: string; message?: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error?.type, 'invalid_request_error');
    assert.match(body.error?.message ?? '', /"model"/);
    assert.equal(mock.stats().recent.length, 0);
  });

  it('a key repeated only inside a nested object is forwarded untouched', async () => {
    const body = '{"model":"ok","metadata":{"a":1,"a":2},"messages":[{"role":"user","content":"hi"}]}';
    const r = await postChat(gw.url, body);
    assert.equal(r.status, 200, r.text);
    assert.equal(received(), body);
  });
});
