import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { Translation } from '../../src/providers/index.js';
import {
  anthropicRequestToCanonical,
  anthropicResponseToCanonical,
  canonicalToAnthropicRequest,
  canonicalToAnthropicResponse,
  canonicalToOpenaiRequest,
  canonicalToOpenaiResponse,
  openaiRequestToCanonical,
  openaiResponseToCanonical,
  SseParser,
  StreamTranslator,
  translateErrorResponse,
} from '../../src/providers/index.js';

// A whole tool round trip with the client speaking one protocol and the mock provider
// answering in the other, every hop through the canonical form: what the server will do.

let mock: MockProvider;

function value<T>(t: Translation<T>): T {
  if (!t.ok) assert.fail(`refused ${t.path}: ${t.reason}`);
  return t.value;
}

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${mock.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function translatedStream(res: Response, t: StreamTranslator): Promise<{ event: string; data: string }[]> {
  assert.ok(res.body);
  let out = '';
  for await (const chunk of res.body) out += t.push(Buffer.from(chunk));
  out += t.end();
  const events: { event: string; data: string }[] = [];
  new SseParser().push(out, (event, data) => events.push({ event, data }));
  return events;
}

const weatherTool = { name: 'weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } };

describe('translation against the mock provider', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'east' });
  });
  after(() => mock.close());

  it('an Anthropic client runs a tool round trip against an OpenAI upstream', async () => {
    const ask = { model: 'gpt-4o', max_tokens: 100, tools: [weatherTool], messages: [{ role: 'user', content: 'use the weather tool' }] };
    const upstream = value(canonicalToOpenaiRequest(value(anthropicRequestToCanonical(ask)))).body;
    const first = canonicalToAnthropicResponse(
      value(openaiResponseToCanonical(await (await post('/v1/chat/completions', upstream)).json())),
    );
    assert.equal(first.stop_reason, 'tool_use');
    const [call] = first.content as { type: string; id: string; name: string; input: unknown }[];
    assert.equal(call?.type, 'tool_use');
    assert.deepEqual(call?.input, { city: 'mock' });

    const next = {
      ...ask,
      messages: [
        ...ask.messages,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call?.id, content: 'Sunny' }] },
      ],
    };
    const upstream2 = value(canonicalToOpenaiRequest(value(anthropicRequestToCanonical(next)))).body;
    const final = canonicalToAnthropicResponse(
      value(openaiResponseToCanonical(await (await post('/v1/chat/completions', upstream2)).json())),
    );
    assert.equal(final.stop_reason, 'end_turn');
    assert.deepEqual(final.content, [{ type: 'text', text: 'Hello from east. The tool said: Sunny' }]);
  });

  it('an Anthropic client streams a tool call from an OpenAI upstream', async () => {
    const ask = {
      model: 'gpt-4o',
      max_tokens: 100,
      stream: true,
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'use the weather tool' }],
    };
    const upstream = value(canonicalToOpenaiRequest(value(anthropicRequestToCanonical(ask)))).body;
    const t = new StreamTranslator({ from: 'openai', to: 'anthropic' });
    const events = (await translatedStream(await post('/v1/chat/completions', upstream), t)).map((e) => JSON.parse(e.data));
    assert.equal(events[0].type, 'message_start');
    const json = events
      .filter((e) => e.delta?.type === 'input_json_delta')
      .map((e) => e.delta.partial_json)
      .join('');
    assert.deepEqual(JSON.parse(json), { city: 'mock' });
    assert.equal(events.at(-2).delta.stop_reason, 'tool_use');
    assert.ok(events.at(-2).usage.output_tokens > 0, 'usage arrives because the upstream request asked for it');
    assert.equal(t.complete, true);
  });

  it('an OpenAI client runs a tool round trip against an Anthropic upstream', async () => {
    const tools = [{ type: 'function', function: { name: 'weather', parameters: weatherTool.input_schema } }];
    const ask = { model: 'claude', tools, messages: [{ role: 'user', content: 'use the weather tool' }] };
    const upstream = value(canonicalToAnthropicRequest(value(openaiRequestToCanonical(ask)))).body;
    const first = canonicalToOpenaiResponse(
      value(anthropicResponseToCanonical(await (await post('/v1/messages', upstream)).json())),
    ) as any;
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    const call = first.choices[0].message.tool_calls[0];
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'mock' });

    const next = {
      ...ask,
      messages: [...ask.messages, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'Rain' }],
    };
    const upstream2 = value(canonicalToAnthropicRequest(value(openaiRequestToCanonical(next)))).body;
    const final = canonicalToOpenaiResponse(
      value(anthropicResponseToCanonical(await (await post('/v1/messages', upstream2)).json())),
    ) as any;
    assert.equal(final.choices[0].finish_reason, 'stop');
    assert.equal(final.choices[0].message.content, 'Hello from east. The tool said: Rain');
  });

  it('an OpenAI client streams from an Anthropic upstream, cache usage included', async () => {
    const ask = {
      model: 'claude',
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 's'.repeat(400) },
        { role: 'user', content: 'hi' },
      ],
    };
    const canonical = value(openaiRequestToCanonical(ask));
    const upstream = value(canonicalToAnthropicRequest(canonical)).body;
    // An Anthropic upstream caches only what is marked; mark the system prompt as a server might.
    (upstream as { system: unknown }).system = [{ type: 'text', text: 's'.repeat(400), cache_control: { type: 'ephemeral' } }];
    await (await post('/v1/messages', upstream)).text();
    const t = new StreamTranslator({ from: 'anthropic', to: 'openai', includeUsage: canonical.streamUsage === true });
    const events = await translatedStream(await post('/v1/messages', upstream), t);
    assert.equal(events.at(-1)?.data, '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello from east.');
    const usage = chunks.at(-1).usage;
    assert.deepEqual(usage.prompt_tokens_details, { cached_tokens: 100 });
    assert.equal(usage.prompt_tokens, 101);
    assert.deepEqual(t.usage, { inputTokens: 101, outputTokens: 4, cacheReadTokens: 100 });
  });

  it("an upstream's error reaches the client in the client's protocol", async () => {
    mock.addFault({ mode: 'status', status: 429, count: 1 });
    const res = await post('/v1/chat/completions', { model: 'm', messages: [] });
    const out = translateErrorResponse(res.status, Buffer.from(await res.arrayBuffer()), 'openai', 'anthropic');
    assert.equal(out.status, 429);
    assert.equal(JSON.parse(out.body).error.type, 'rate_limit_error');
  });

  it('a stream cut by the upstream ends with an error event for the client', async () => {
    mock.addFault({ mode: 'cut_stream', after_chunks: 1, count: 1 });
    const t = new StreamTranslator({ from: 'anthropic', to: 'openai' });
    const res = await post('/v1/messages', { model: 'm', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let out = '';
    try {
      for await (const chunk of res.body ?? []) out += t.push(Buffer.from(chunk));
      out += t.end();
    } catch {
      out += t.fail('the upstream connection was closed');
    }
    assert.match(out, /"code":"stream_interrupted"/);
    assert.equal(t.complete, false);
  });
});
