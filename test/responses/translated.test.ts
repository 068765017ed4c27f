import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { APIError } from 'openai';
import { openaiSchema } from '../support/openai-schema.js';
import { expectValid, FAILOVER, GREETING, ROUTES, type RouteKind, upstreamBodies, useResponsesFixture } from './fixture.js';

// The Responses API on every provider protocol: a request read into the canonical form and
// written to OpenAI's own Responses API, Anthropic Messages, Gemini and Bedrock Converse,
// through a real gateway process to real mocks, with the official `openai` use.client. Every
// body and event is checked against OpenAI's published schema when it is on this machine.

const use = useResponsesFixture();

const KINDS = Object.keys(ROUTES) as RouteKind[];
const schema = openaiSchema();

const valid = expectValid;

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  strict: true,
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

describe('the Responses API on every provider', () => {
  for (const kind of KINDS) {
    const model = ROUTES[kind];

    it(`${kind}: a plain response is a Response object with the provider's text and every usage field`, async () => {
      const res = await use.client.responses.create({ model, input: 'Say hello' });
      valid('Response', res);
      assert.equal(res.object, 'response');
      assert.equal(res.status, 'completed');
      assert.match(res.id, /^resp_/);
      assert.equal(res.output_text, GREETING[kind]);
      assert.ok(res.usage !== undefined && res.usage !== null);
      assert.ok(res.usage.input_tokens > 0);
      assert.equal(typeof res.usage.input_tokens_details.cached_tokens, 'number');
      assert.equal(typeof res.usage.output_tokens_details.reasoning_tokens, 'number');
      assert.equal(res.usage.total_tokens, res.usage.input_tokens + res.usage.output_tokens);
      assert.equal(upstreamBodies(use.fx, kind).length, 1, 'the route went to its own provider');
    });

    it(`${kind}: a streamed response is the whole event sequence, numbered, ending in response.completed`, async () => {
      const stream = await use.client.responses.create({ model, input: 'Say hello', stream: true });
      const events: Array<{ type: string; sequence_number: number } & Record<string, unknown>> = [];
      for await (const event of stream) events.push(event as never);
      if (schema !== null) assert.deepEqual(schema.validateResponsesStream(events.map((e) => ({ event: e.type, data: e }))), []);
      const types = events.map((e) => e.type);
      assert.equal(types[0], 'response.created');
      assert.equal(types[1], 'response.in_progress');
      assert.equal(types.at(-1), 'response.completed');
      for (const t of [
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
      ]) {
        assert.ok(types.includes(t), `${t} in ${types.join(', ')}`);
      }
      for (const [i, e] of events.entries()) assert.equal(e.sequence_number, i);
      const text = events
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join('');
      assert.equal(text, GREETING[kind]);
      const completed = events.at(-1)?.response as { output_text?: string; status: string; id: string };
      assert.equal(completed.status, 'completed');
      // The streamed response is stored: it reads back whole.
      const read = await use.client.responses.retrieve(completed.id);
      assert.equal(read.output_text, GREETING[kind]);
    });

    it(`${kind}: a function tool round trip, continued by previous_response_id`, async () => {
      const first = await use.client.responses.create({
        model,
        input: 'What is the weather in Paris? Use the tool.',
        tools: [weatherTool],
      });
      valid('Response', first);
      const call = first.output.find((o) => o.type === 'function_call');
      assert.ok(call !== undefined && call.type === 'function_call', JSON.stringify(first.output));
      assert.equal(call.name, 'get_weather');
      assert.equal(typeof JSON.parse(call.arguments).city, 'string');
      const second = await use.client.responses.create({
        model,
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' }],
        tools: [weatherTool],
      });
      valid('Response', second);
      assert.match(second.output_text, /The tool said: sunny, 21 C/);
      // The provider was sent the whole conversation: the first question is in the second call.
      const bodies = upstreamBodies(use.fx, kind);
      assert.match(JSON.stringify(bodies.at(-1)), /weather in Paris/);
    });

    it(`${kind}: text.format json_schema gives JSON text matching the schema's shape`, async () => {
      const res = await use.client.responses.create({
        model,
        input: 'Give me a city',
        text: {
          format: {
            type: 'json_schema',
            name: 'city',
            strict: true,
            schema: {
              type: 'object',
              properties: { name: { type: 'string' } },
              required: ['name'],
              additionalProperties: false,
            },
          },
        },
      });
      valid('Response', res);
      const parsed = JSON.parse(res.output_text) as Record<string, unknown>;
      assert.equal(typeof parsed.name, 'string');
    });

    it(`${kind}: reasoning asked for comes back as a reasoning item with its summary, before the message`, async () => {
      const res = await use.client.responses.create({ model, input: 'Think first.', reasoning: { effort: 'low', summary: 'auto' } });
      valid('Response', res);
      const types = res.output.map((o) => o.type);
      assert.deepEqual(types, ['reasoning', 'message'], JSON.stringify(res.output));
      const reasoning = res.output[0] as { summary: Array<{ type: string; text: string }> };
      assert.deepEqual(reasoning.summary, [{ type: 'summary_text', text: 'Thinking about it.' }]);
      assert.equal(res.output_text, GREETING[kind]);
    });

    it(`${kind}: a three-turn chain sends the provider every earlier turn`, async () => {
      const one = await use.client.responses.create({ model, input: 'My name is Ada.' });
      const two = await use.client.responses.create({ model, previous_response_id: one.id, input: 'I live in London.' });
      const three = await use.client.responses.create({ model, previous_response_id: two.id, input: 'Where do I live?' });
      assert.equal(three.previous_response_id, two.id);
      const last = JSON.stringify(upstreamBodies(use.fx, kind).at(-1));
      for (const said of ['My name is Ada.', 'I live in London.', 'Where do I live?', GREETING[kind]]) {
        assert.ok(last.includes(said), `${said} in ${last}`);
      }
      // input_items lists only the turn's own input, newest first by default.
      const items = await use.client.responses.inputItems.list(three.id);
      valid('ResponseItemList', {
        object: 'list',
        data: items.data,
        first_id: items.data[0]?.id,
        last_id: items.data.at(-1)?.id,
        has_more: items.has_more,
      });
      assert.equal(items.data.length, 1);
      assert.match(JSON.stringify(items.data[0]), /Where do I live\?/);
    });
  }

  it('an input image reaches a translated provider as an image', async () => {
    const pixel = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const res = await use.client.responses.create({
      model: ROUTES.anthropic,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: pixel, detail: 'auto' },
          ],
        },
      ],
    });
    assert.equal(res.status, 'completed');
    const body = upstreamBodies(use.fx, 'anthropic').at(-1) as { messages: Array<{ content: Array<{ type: string }> }> };
    assert.ok(body.messages[0]?.content.some((p) => p.type === 'image'));
  });

  it('retrieve, input_items and delete are answered from the store; a deleted id is then not found', async () => {
    const res = await use.client.responses.create({ model: ROUTES.anthropic, input: 'Keep this' });
    const read = await use.client.responses.retrieve(res.id);
    valid('Response', read);
    assert.equal(read.id, res.id);
    assert.equal(read.output_text, GREETING.anthropic);
    // The SDK types the answer as void; the API (and the gateway) answer with the deleted object.
    const deleted = (await use.client.responses.delete(res.id)) as unknown;
    assert.deepEqual(deleted, { id: res.id, object: 'response', deleted: true });
    await assert.rejects(use.client.responses.retrieve(res.id), (err: APIError) => {
      assert.equal(err.status, 404);
      assert.equal(err.code, 'response_not_found');
      return true;
    });
    assert.equal(upstreamBodies(use.fx, 'anthropic').length, 1, 'only the create reached the provider');
  });

  it("another team's response is not found: not to read, not to continue, and nothing reaches a provider", async () => {
    const mine = await use.client.responses.create({ model: ROUTES.anthropic, input: 'Secret plans' });
    const other = use.fx.client('beta1');
    use.fx.reset();
    for (const attempt of [
      () => other.responses.retrieve(mine.id),
      () => other.responses.inputItems.list(mine.id),
      () => other.responses.delete(mine.id),
      () => other.responses.create({ model: ROUTES.anthropic, previous_response_id: mine.id, input: 'and?' }),
    ]) {
      await assert.rejects(attempt(), (err: APIError) => {
        assert.equal(err.status, 404);
        assert.equal(err.code, 'response_not_found');
        return true;
      });
    }
    assert.equal(upstreamBodies(use.fx, 'anthropic').length, 0);
    // Still there for its own team.
    assert.equal((await use.client.responses.retrieve(mine.id)).id, mine.id);
  });

  it('an unknown previous_response_id is 404 response_not_found, before any provider is asked', async () => {
    await assert.rejects(
      use.client.responses.create({ model: ROUTES.openai, previous_response_id: 'resp_nosuchthing', input: 'hi' }),
      (err: APIError) => err.status === 404 && err.code === 'response_not_found',
    );
    assert.equal(upstreamBodies(use.fx, 'openai').length, 0);
  });

  it('a conversation survives a failover: turn one on OpenAI, turn two on Anthropic once OpenAI fails', async () => {
    const one = await use.client.responses.create({ model: FAILOVER, input: 'Remember the number 42.' });
    assert.equal(one.output_text, GREETING.openai);
    use.fx.mocks.openai.addFault({ mode: 'status', status: 503, count: 5 });
    const { data: two, response } = await use.client.responses
      .create({ model: FAILOVER, previous_response_id: one.id, input: 'What number?' })
      .withResponse();
    assert.equal(response.headers.get('x-switchyard-provider'), 'claude');
    assert.equal(two.output_text, GREETING.anthropic);
    const sent = JSON.stringify(upstreamBodies(use.fx, 'anthropic').at(-1));
    assert.ok(sent.includes('Remember the number 42.') && sent.includes(GREETING.openai), sent);
    use.fx.mocks.openai.clearFaults();
  });

  it('a built-in tool only OpenAI has skips the other candidates, and with none left is a 400 naming the field', async () => {
    await assert.rejects(
      use.client.responses.create({ model: ROUTES.anthropic, input: 'search', tools: [{ type: 'web_search' }] as never }),
      (err: APIError) => {
        assert.equal(err.status, 400);
        assert.equal(err.param, 'tools[0].type');
        return true;
      },
    );
    assert.equal(upstreamBodies(use.fx, 'anthropic').length, 0);
    await assert.rejects(
      use.client.responses.create({ model: ROUTES.gemini, input: 'later', background: true }),
      (err: APIError) => err.status === 400 && err.param === 'background',
    );
  });

  it('logprobs in include are dropped and listed in x-switchyard-dropped', async () => {
    const { response } = await use.client.responses
      .create({ model: ROUTES.anthropic, input: 'hi', include: ['message.output_text.logprobs'] })
      .withResponse();
    assert.match(response.headers.get('x-switchyard-dropped') ?? '', /include\.message\.output_text\.logprobs/);
  });

  it('store: false is not kept', async () => {
    const res = await use.client.responses.create({ model: ROUTES.anthropic, input: 'forget me', store: false });
    assert.equal((res as unknown as { store: boolean }).store, false);
    await assert.rejects(use.client.responses.retrieve(res.id), (err: APIError) => err.status === 404);
  });

  it('an OpenAI-type candidate is passed the client bytes as they are when the turn needs nothing stored', async () => {
    const body = '{"model":"oai-route","input":"exact bytes","metadata":{"k":"v"} }';
    const res = await fetch(`${use.fx.gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${'sy-test-alpha1-kkkkkkkk'}` },
      body,
    });
    assert.equal(res.status, 200);
    const sent = use.fx.mocks.openai
      .stats()
      .recent.filter((r) => r.path === '/v1/responses')
      .at(-1);
    assert.equal(sent?.body, body.replace('"oai-route"', '"gpt-4o-mini"'));
  });

  it('GET ?stream=true replays a stored response as its event stream', async () => {
    const res = await use.client.responses.create({ model: ROUTES.gemini, input: 'replay me' });
    const replay = await use.client.responses.retrieve(res.id, { stream: true });
    const events: Array<{ type: string; sequence_number: number }> = [];
    for await (const e of replay) events.push(e as never);
    assert.equal(events[0]?.type, 'response.created');
    assert.equal(events.at(-1)?.type, 'response.completed');
    for (const [i, e] of events.entries()) assert.equal(e.sequence_number, i);
  });
});
