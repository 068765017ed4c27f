import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';

// POST /v1/completions and the stateful Responses API (ADR 0038), through a
// real gateway process to real mock providers, with the official OpenAI client unmodified
// (retries off, so every error reaches the test as the gateway sent it).

let east: MockProvider;
let west: MockProvider;
let anth: MockProvider;
let azure: MockProvider;
let gw: GatewayProcess;
let openai: OpenAI;

/** micro-USD per token (USD per Mtok), integers so the expected cost is exact. */
const PRICE = { input_usd_per_mtok: 10, output_usd_per_mtok: 20, cache_read_usd_per_mtok: 2 };

const keyOf = (id: string): string => `sy-test-${id}-${'k'.repeat(8)}`;
const key = (id: string, team: string) => ({ id, team, sha256: hashKey(keyOf(id)) });
const clientAs = (id: string): OpenAI => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: keyOf(id), maxRetries: 0, timeout: 10_000 });

function config(textCandidates: Array<Record<string, unknown>>): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
    providers: {
      east: { type: 'openai', base_url: east.baseUrl, timeout_ms: 5000 },
      west: { type: 'openai', base_url: west.baseUrl, timeout_ms: 5000 },
      claude: { type: 'anthropic', base_url: anth.baseUrl, timeout_ms: 5000 },
      azure: {
        type: 'azure_openai',
        base_url: azure.origin,
        api_version: '2025-04-01-preview',
        api_key: { env: 'AZURE_KEY' },
        timeout_ms: 5000,
      },
    },
    routing: {
      routes: {
        // Ordered: east first, west only after east fails.
        text: { candidates: textCandidates },
        'claude-only': { candidates: [{ provider: 'claude', model: 'claude-sonnet-4-5' }] },
        mixed: {
          candidates: [
            { provider: 'claude', model: 'claude-sonnet-4-5' },
            { provider: 'east', model: 'gpt-a' },
          ],
        },
        'azure-text': { candidates: [{ provider: 'azure', deployment: 'dep1' }] },
      },
    },
    // Deliberate failures below must never open a breaker and change who serves later tests.
    resilience: { breaker: { failure_threshold: 1000 } },
    pricing: { models: { 'gpt-a': PRICE, 'gpt-b': PRICE, dep1: PRICE } },
    teams: { alpha: {}, beta: {}, narrow: { allowed_models: ['claude-*'] } },
    keys: [key('alpha', 'alpha'), key('alpha2', 'alpha'), key('beta', 'beta'), key('narrow', 'narrow')],
  };
}

const BOTH = [
  { provider: 'east', model: 'gpt-a' },
  { provider: 'west', model: 'gpt-b' },
];

function logLine(requestId: string): Promise<Record<string, unknown>> {
  return gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
}

function cost(u: { input: number; cached?: number; output: number }): number {
  const cached = u.cached ?? 0;
  return (u.input - cached) * PRICE.input_usd_per_mtok + cached * PRICE.cache_read_usd_per_mtok + u.output * PRICE.output_usd_per_mtok;
}

function requestId(name: string): { headers: { 'x-request-id': string } } {
  return { headers: { 'x-request-id': `${name}-${Date.now()}-${Math.floor(Math.random() * 1e6)}` } };
}

/** Creates a response on west: east, the route's first candidate, fails once first. */
async function createdOnWest(): Promise<string> {
  east.addFault({ mode: 'status', status: 500, count: 1 });
  const { data, response } = await openai.responses.create({ model: 'text', input: 'hello' }).withResponse();
  assert.equal(response.headers.get('x-switchyard-provider'), 'west');
  return data.id;
}

describe('POST /v1/completions and the Responses API through the gateway', () => {
  before(async () => {
    east = await startMockProvider({ name: 'east', streamChunks: 4 });
    west = await startMockProvider({ name: 'west', streamChunks: 4 });
    anth = await startMockProvider({ name: 'anth' });
    azure = await startMockProvider({ name: 'azure' });
    gw = await startGatewayProcess(config(BOTH), { env: { AZURE_KEY: 'azure-test-key' } });
    openai = clientAs('alpha');
  });

  after(async () => {
    await gw?.stop();
    await Promise.all([east?.close(), west?.close(), anth?.close(), azure?.close()]);
  });

  beforeEach(() => {
    for (const m of [east, west, anth, azure]) m.clearFaults();
  });

  describe('completions', () => {
    it('a plain completion passes through with the upstream model, and is billed and priced from its usage', async () => {
      const opts = requestId('cmpl');
      const { data, response } = await openai.completions.create({ model: 'text', prompt: 'say hello' }, opts).withResponse();
      assert.equal(data.choices[0]?.text, 'Hello from east.');
      assert.equal(data.model, 'gpt-a');
      assert.equal(east.stats().recent.at(-1)?.path, '/v1/completions');
      const usage = data.usage as OpenAI.CompletionUsage;
      const expected = cost({ input: usage.prompt_tokens, output: usage.completion_tokens });
      assert.equal(response.headers.get('x-switchyard-cost-usd'), (expected / 1e6).toFixed(6));
      const line = await logLine(opts.headers['x-request-id']);
      assert.equal(line.input_tokens, usage.prompt_tokens);
      assert.equal(line.output_tokens, usage.completion_tokens);
      assert.equal(line.cost_micro_usd, expected);
    });

    it('a streamed completion is billed on the usage the gateway asked for, which a client that did not ask never sees', async () => {
      const opts = requestId('cmpl-stream');
      const stream = await openai.completions.create({ model: 'text', prompt: 'say hello', stream: true }, opts);
      let text = '';
      for await (const chunk of stream) {
        assert.equal(chunk.usage, undefined, 'no usage chunk for a client that did not ask');
        text += chunk.choices[0]?.text ?? '';
      }
      assert.equal(text, 'Hello from east.');
      const sent = JSON.parse(east.stats().recent.at(-1)?.body ?? '{}') as { stream_options?: unknown };
      assert.deepEqual(sent.stream_options, { include_usage: true });
      const line = await logLine(opts.headers['x-request-id']);
      assert.equal(line.stream, true);
      assert.equal(line.input_tokens, 3);
      assert.equal(line.cost_micro_usd, cost({ input: 3, output: line.output_tokens as number }));
    });

    it('fails over before the first byte: east answers 500, west serves, and the fallback is named', async () => {
      east.addFault({ mode: 'status', status: 500, count: 1 });
      const { data, response } = await openai.completions.create({ model: 'text', prompt: 'hi' }).withResponse();
      assert.equal(data.choices[0]?.text, 'Hello from west.');
      assert.equal(response.headers.get('x-switchyard-provider'), 'west');
      assert.equal(response.headers.get('x-switchyard-fallback'), 'east');
    });

    it('an anthropic candidate is skipped; a route served only by anthropic is a 400 naming the limitation', async () => {
      const { response } = await openai.completions.create({ model: 'mixed', prompt: 'hi' }).withResponse();
      assert.equal(response.headers.get('x-switchyard-provider'), 'east');
      await assert.rejects(openai.completions.create({ model: 'claude-only', prompt: 'hi' }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError);
        assert.match(err.message, /only by anthropic providers, which have no completions endpoint/);
        return true;
      });
      assert.equal(anth.stats().total, 0);
    });

    it("governance applies in OpenAI's shape: a team whose allow-list leaves the model out is refused", async () => {
      await assert.rejects(clientAs('narrow').completions.create({ model: 'text', prompt: 'hi' }), OpenAI.PermissionDeniedError);
    });

    it('Azure serves completions under the deployment', async () => {
      const done = await openai.completions.create({ model: 'azure-text', prompt: 'hi' });
      assert.equal(done.choices[0]?.text, 'Hello from azure.');
      assert.equal(azure.stats().recent.at(-1)?.path, '/openai/deployments/dep1/completions');
    });
  });

  describe('responses', () => {
    it('a plain response passes through; its continuation is sent the whole conversation and billed from its usage', async () => {
      const first = await openai.responses.create({ model: 'text', input: 'hello there' });
      assert.equal(first.output_text, 'Hello from east.');
      const opts = requestId('resp');
      const second = await openai.responses.create({ model: 'text', input: 'again', previous_response_id: first.id }, opts);
      assert.equal(second.previous_response_id, first.id);
      const sent = JSON.parse(east.stats().recent.at(-1)?.body ?? '{}') as Record<string, unknown>;
      assert.equal(sent.previous_response_id, undefined, 'the provider is not asked for state it may not hold');
      assert.match(JSON.stringify(sent.input), /hello there.*Hello from east\..*again/);
      const usage = second.usage as OpenAI.Responses.ResponseUsage;
      const line = await logLine(opts.headers['x-request-id']);
      assert.equal(line.input_tokens, usage.input_tokens);
      assert.equal(
        line.cost_micro_usd,
        cost({ input: usage.input_tokens, cached: usage.input_tokens_details.cached_tokens, output: usage.output_tokens }),
      );
    });

    it('a streamed response reaches the SDK whole and is billed from response.completed; its id is remembered', async () => {
      const opts = requestId('resp-stream');
      const stream = openai.responses.stream({ model: 'text', input: 'hello' }, opts);
      let text = '';
      stream.on('response.output_text.delta', (e) => {
        text += e.delta;
      });
      const final = await stream.finalResponse();
      assert.equal(text, 'Hello from east.');
      const line = await logLine(opts.headers['x-request-id']);
      assert.equal(line.input_tokens, final.usage?.input_tokens);
      assert.equal(line.output_tokens, final.usage?.output_tokens);
      assert.equal(line.cost_micro_usd, cost({ input: final.usage?.input_tokens ?? 0, output: final.usage?.output_tokens ?? 0 }));
      assert.equal((await openai.responses.retrieve(final.id)).id, final.id);
    });

    it('a stream cut after its first bytes ends with an error event the SDK raises, and is logged partial', async () => {
      east.addFault({ mode: 'cut_stream', after_chunks: 2, count: 1 });
      const opts = requestId('resp-cut');
      const stream = await openai.responses.create({ model: 'text', input: 'hello', stream: true }, opts);
      const types: string[] = [];
      await assert.rejects(
        (async () => {
          for await (const event of stream) types.push(event.type);
        })(),
        (err: unknown) => err instanceof OpenAI.APIError && /interrupted/.test(err.message),
      );
      assert.equal(types[0], 'response.created');
      assert.equal((await logLine(opts.headers['x-request-id'])).status, 'partial');
    });

    it('every event of a cut stream carries sequence_number, the gateway error event the next one after the last relayed', async () => {
      east.addFault({ mode: 'cut_stream', after_chunks: 2, count: 1 });
      // The official client's raw response, so that the error event it raises on is read too.
      const res = await openai.responses.create({ model: 'text', input: 'hello', stream: true }).asResponse();
      const events = (await res.text())
        .split('\n\n')
        .map((block) => block.split('\n').find((l) => l.startsWith('data: ')))
        .filter((l) => l !== undefined)
        .map((l) => JSON.parse(l.slice(6)) as OpenAI.Responses.ResponseStreamEvent);
      assert.ok(events.length >= 3, JSON.stringify(events));
      assert.deepEqual(
        events.map((e) => e.sequence_number),
        events.map((_, i) => i),
        JSON.stringify(events.map((e) => [e.type, e.sequence_number])),
      );
      const last = events.at(-1) as OpenAI.Responses.ResponseErrorEvent;
      assert.deepEqual([last.type, last.code], ['error', 'stream_interrupted']);
    });

    it("a continuation is routed like any request: the conversation the gateway holds goes to the route's first choice", async () => {
      const id = await createdOnWest();
      const { data, response } = await openai.responses.create({ model: 'text', input: 'more', previous_response_id: id }).withResponse();
      assert.equal(response.headers.get('x-switchyard-provider'), 'east');
      assert.equal(data.previous_response_id, id);
      assert.match(east.stats().recent.at(-1)?.body ?? '', /Hello from west\./);
    });

    it('a continuation fails over like any request: when one provider fails, the next gets the whole conversation', async () => {
      const id = await createdOnWest();
      east.addFault({ mode: 'status', status: 500, count: 1 });
      const { data, response } = await openai.responses.create({ model: 'text', input: 'more', previous_response_id: id }).withResponse();
      assert.equal(response.headers.get('x-switchyard-provider'), 'west');
      assert.equal(data.output_text, 'Hello from west.');
    });

    it('a previous_response_id the gateway does not know is 404 response_not_found, and no provider is asked', async () => {
      const before = east.stats().total + west.stats().total;
      await assert.rejects(openai.responses.create({ model: 'text', input: 'x', previous_response_id: 'resp_unknown' }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.NotFoundError);
        assert.equal(err.code, 'response_not_found');
        return true;
      });
      assert.equal(east.stats().total + west.stats().total, before);
    });

    it("GET and DELETE are answered from the gateway's store, not the provider; a deleted one is then unknown", async () => {
      const id = await createdOnWest();
      const westBefore = west.stats().total;
      const data = await openai.responses.retrieve(id);
      assert.equal(data.id, id);
      assert.equal(data.output_text, 'Hello from west.');
      await openai.responses.delete(id);
      assert.equal(west.stats().total, westBefore, 'the provider was not asked');
      await assert.rejects(openai.responses.retrieve(id), OpenAI.NotFoundError);
    });

    it('an unknown id is a 404 NotFoundError; so is another team’s, while a key of the same team sees it', async () => {
      await assert.rejects(openai.responses.retrieve('resp_never'), (err: unknown) => {
        assert.ok(err instanceof OpenAI.NotFoundError);
        assert.equal(err.code, 'response_not_found');
        return true;
      });
      const mine = await openai.responses.create({ model: 'text', input: 'private' });
      await assert.rejects(clientAs('beta').responses.retrieve(mine.id), OpenAI.NotFoundError);
      await assert.rejects(
        clientAs('beta').responses.create({ model: 'text', input: 'x', previous_response_id: mine.id }),
        OpenAI.NotFoundError,
      );
      assert.equal((await clientAs('alpha2').responses.retrieve(mine.id)).id, mine.id);
    });

    it('a route served only by anthropic is translated to the Messages API', async () => {
      const res = await openai.responses.create({ model: 'claude-only', input: 'hi' });
      assert.equal(res.output_text, 'Hello from anth.');
      assert.equal(anth.stats().recent.at(-1)?.path, '/v1/messages');
    });

    it('Azure serves responses on the resource, with the deployment as the model, and GET there too', async () => {
      const created = await openai.responses.create({ model: 'azure-text', input: 'hi' });
      const sent = azure.stats().recent.at(-1);
      assert.equal(sent?.path, '/openai/responses');
      assert.equal(sent?.headers['api-key'], 'azure-test-key');
      assert.equal((JSON.parse(sent?.body ?? '{}') as { model: string }).model, 'dep1');
      assert.equal((await openai.responses.retrieve(created.id)).id, created.id);
      assert.equal(azure.stats().recent.at(-1)?.path, '/openai/responses', 'the read is answered by the gateway');
    });

    it('a conversation continues under another model, on another provider', async () => {
      const first = await openai.responses.create({ model: 'text', input: 'hi' });
      const next = await openai.responses.create({ model: 'azure-text', input: 'x', previous_response_id: first.id });
      assert.equal(next.previous_response_id, first.id);
      assert.match(azure.stats().recent.at(-1)?.body ?? '', /Hello from east\./);
    });

    // Last: it reloads the gateway without west.
    it('the store survives a reload, and a conversation whose provider the reload withdrew goes on elsewhere', async () => {
      const onWest = await createdOnWest();
      const onEast = await openai.responses.create({ model: 'text', input: 'hello' });
      gw.writeConfig(config([{ provider: 'east', model: 'gpt-a' }]));
      const reload = await adminReload(gw.adminUrl as string);
      assert.equal(reload.status, 200, reload.text);
      assert.equal((await openai.responses.retrieve(onEast.id)).id, onEast.id, 'kept across the reload');
      assert.equal((await openai.responses.retrieve(onWest)).output_text, 'Hello from west.');
      const { data, response } = await openai.responses
        .create({ model: 'text', input: 'more', previous_response_id: onWest })
        .withResponse();
      assert.equal(response.headers.get('x-switchyard-provider'), 'east');
      assert.equal(data.output_text, 'Hello from east.');
      assert.match(east.stats().recent.at(-1)?.body ?? '', /Hello from west\./);
    });
  });
});
