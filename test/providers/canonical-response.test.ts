import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CanonicalResponse, StopReason, TokenUsage, Translation } from '../../src/providers/index.js';
import {
  anthropicErrorBodyFor,
  anthropicResponseToCanonical,
  canonicalToAnthropicResponse,
  canonicalToOpenaiResponse,
  openaiResponseToCanonical,
  stopReasonFromAnthropic,
  stopReasonFromOpenai,
  stopReasonToAnthropic,
  stopReasonToOpenai,
  translateErrorResponse,
  usageFromAnthropic,
  usageFromOpenai,
  usageToAnthropic,
  usageToOpenai,
} from '../../src/providers/index.js';

function value<T>(t: Translation<T>): T {
  if (!t.ok) assert.fail(`refused ${t.path}: ${t.reason}`);
  return t.value;
}

const openaiCompletion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'gpt-4o',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Checking.',
        refusal: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cat"}' } }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 120, completion_tokens: 15, total_tokens: 135, prompt_tokens_details: { cached_tokens: 100 } },
};

const anthropicMessage = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [
    { type: 'text', text: 'Checking.' },
    { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'cat' } },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: { input_tokens: 20, output_tokens: 15, cache_creation_input_tokens: 30, cache_read_input_tokens: 100 },
};

describe('usage between the protocols', () => {
  it('OpenAI prompt_tokens already include cached tokens; canonical inputTokens counts every prompt token', () => {
    assert.deepEqual(usageFromOpenai(openaiCompletion.usage), { inputTokens: 120, outputTokens: 15, cacheReadTokens: 100 });
  });

  it('Anthropic input_tokens exclude cache reads and writes, which the canonical count adds back', () => {
    assert.deepEqual(usageFromAnthropic(anthropicMessage.usage), {
      inputTokens: 150,
      outputTokens: 15,
      cacheReadTokens: 100,
      cacheWriteTokens: 30,
    });
  });

  it('an OpenAI count becomes Anthropic input_tokens minus the cached part, and back, exactly', () => {
    const usage = usageFromOpenai(openaiCompletion.usage) as TokenUsage;
    assert.deepEqual(usageToAnthropic(usage), {
      input_tokens: 20,
      output_tokens: 15,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 100,
    });
    assert.deepEqual(usageFromAnthropic(usageToAnthropic(usage)), usage);
  });

  it('Anthropic cache writes reach an OpenAI client as prompt_tokens_details.cache_write_tokens, and back, exactly', () => {
    const usage = usageFromAnthropic(anthropicMessage.usage) as TokenUsage;
    assert.deepEqual(usageToOpenai(usage), {
      prompt_tokens: 150,
      completion_tokens: 15,
      total_tokens: 165,
      prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 30 },
    });
    assert.deepEqual(usageFromOpenai(usageToOpenai(usage)), usage);
    assert.deepEqual(usageToAnthropic(usageFromOpenai(usageToOpenai(usage)) as TokenUsage), anthropicMessage.usage);
  });

  it('every combination of counts survives both directions', () => {
    for (const input of [0, 1, 7, 1000, 123_456_789]) {
      for (const read of [0, 1, 50]) {
        for (const write of [0, 3]) {
          const anthropic = {
            input_tokens: input,
            output_tokens: input % 97,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: write,
          };
          const canonical = usageFromAnthropic(anthropic) as TokenUsage;
          assert.equal(canonical.inputTokens, input + read + write);
          assert.deepEqual(usageToAnthropic(usageFromOpenai(usageToOpenai(canonical)) as TokenUsage), anthropic);
          assert.deepEqual(usageFromOpenai(usageToOpenai(canonical)), canonical);
        }
      }
    }
  });

  it('usage without counts reads as null', () => {
    assert.equal(usageFromOpenai(null), null);
    assert.equal(usageFromOpenai({}), null);
    assert.equal(usageFromAnthropic({ output_tokens: 3 }), null);
  });
});

describe('finish reasons', () => {
  it('map OpenAI stop/length/tool_calls/content_filter to Anthropic end_turn/max_tokens/tool_use/refusal and back', () => {
    const pairs: [string, string][] = [
      ['stop', 'end_turn'],
      ['length', 'max_tokens'],
      ['tool_calls', 'tool_use'],
      ['content_filter', 'refusal'],
    ];
    for (const [openai, anthropic] of pairs) {
      assert.equal(stopReasonToAnthropic(stopReasonFromOpenai(openai) as StopReason), anthropic);
      assert.equal(stopReasonToOpenai(stopReasonFromAnthropic(anthropic) as StopReason), openai);
    }
  });

  it('an Anthropic stop_sequence is OpenAI stop; pause_turn ends the turn; a context-window stop is a length stop', () => {
    assert.equal(stopReasonToOpenai(stopReasonFromAnthropic('stop_sequence') as StopReason), 'stop');
    assert.equal(stopReasonFromAnthropic('pause_turn'), 'end_turn');
    assert.equal(stopReasonFromAnthropic('model_context_window_exceeded'), 'max_tokens');
    assert.equal(stopReasonFromOpenai('function_call'), 'tool_use');
    assert.equal(stopReasonFromOpenai(null), null);
  });
});

describe('whole responses', () => {
  const canonical: CanonicalResponse = {
    id: 'chatcmpl-1',
    model: 'gpt-4o',
    content: [
      { type: 'text', text: 'Checking.' },
      { type: 'tool_call', id: 'call_1', name: 'lookup', input: { q: 'cat' } },
    ],
    stopReason: 'tool_use',
    usage: { inputTokens: 120, outputTokens: 15, cacheReadTokens: 100 },
  };

  it('an OpenAI completion with text, tool calls and cached usage reads into the canonical form', () => {
    assert.deepEqual(value(openaiResponseToCanonical(openaiCompletion)), canonical);
  });

  it('an OpenAI completion becomes an Anthropic message: text and tool_use blocks, tool_use stop, split usage', () => {
    assert.deepEqual(canonicalToAnthropicResponse(value(openaiResponseToCanonical(openaiCompletion))), {
      id: 'chatcmpl-1',
      type: 'message',
      role: 'assistant',
      model: 'gpt-4o',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'call_1', name: 'lookup', input: { q: 'cat' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 15, cache_creation_input_tokens: 0, cache_read_input_tokens: 100 },
    });
  });

  it('an Anthropic message becomes an OpenAI completion: content, tool_calls with JSON arguments, tool_calls finish', () => {
    const body = canonicalToOpenaiResponse(value(anthropicResponseToCanonical(anthropicMessage)), 1_700_000_000);
    assert.deepEqual(body, {
      id: 'msg_1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'claude-sonnet-4-5',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking.',
            refusal: null,
            tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cat"}' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: {
        prompt_tokens: 150,
        completion_tokens: 15,
        total_tokens: 165,
        prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 30 },
      },
    });
  });

  it('round trips through the other protocol keep content, stop reason and usage', () => {
    const fromOpenai = value(openaiResponseToCanonical(openaiCompletion));
    assert.deepEqual(value(anthropicResponseToCanonical(canonicalToAnthropicResponse(fromOpenai))), fromOpenai);
    const fromAnthropic = value(anthropicResponseToCanonical(anthropicMessage));
    assert.deepEqual(value(openaiResponseToCanonical(canonicalToOpenaiResponse(fromAnthropic))), fromAnthropic);
  });

  it('an Anthropic stop sequence is kept; thinking blocks travel as reasoning_content, redacted ones are not passed on', () => {
    const r = value(
      anthropicResponseToCanonical({
        ...anthropicMessage,
        content: [
          { type: 'thinking', thinking: 'hm', signature: 's' },
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'text', text: 'A' },
        ],
        stop_reason: 'stop_sequence',
        stop_sequence: '###',
      }),
    );
    assert.deepEqual(r.content, [
      { type: 'thinking', text: 'hm', signature: 's' },
      { type: 'text', text: 'A' },
    ]);
    assert.equal(r.stopReason, 'stop_sequence');
    assert.equal(canonicalToAnthropicResponse(r).stop_sequence, '###');
    const message = (canonicalToOpenaiResponse(r).choices as { message: Record<string, unknown> }[])[0]?.message;
    assert.equal(message?.reasoning_content, 'hm');
    assert.equal(message?.content, 'A');
  });

  it("an OpenAI-compatible server's reasoning_content comes back to an Anthropic client as an unsigned thinking block first", () => {
    const r = value(
      openaiResponseToCanonical({
        id: 'c1',
        model: 'llama',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Yes.', reasoning_content: 'Let me see.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
      }),
    );
    assert.deepEqual((canonicalToAnthropicResponse(r).content as unknown[]).slice(0, 2), [
      { type: 'thinking', thinking: 'Let me see.', signature: '' },
      { type: 'text', text: 'Yes.' },
    ]);
  });

  it('malformed upstream bodies and tool arguments that are not JSON are `invalid`', () => {
    assert.equal(openaiResponseToCanonical({ choices: [] }).ok, false);
    assert.equal(anthropicResponseToCanonical({}).ok, false);
    const bad = structuredClone(openaiCompletion);
    (bad.choices[0] as { message: { tool_calls: { function: { arguments: string } }[] } }).message.tool_calls[0]!.function.arguments =
      '{"q":';
    const t = openaiResponseToCanonical(bad);
    assert.equal(t.ok, false);
    if (!t.ok) assert.equal(t.path, 'choices[0].message.tool_calls[0].function.arguments');
  });
});

describe('errors in the client protocol', () => {
  it('each status maps to Anthropic error type', () => {
    const types: [number, string][] = [
      [400, 'invalid_request_error'],
      [401, 'authentication_error'],
      [403, 'permission_error'],
      [404, 'not_found_error'],
      [413, 'request_too_large'],
      [429, 'rate_limit_error'],
      [500, 'api_error'],
      [502, 'api_error'],
      [503, 'overloaded_error'],
      [529, 'overloaded_error'],
    ];
    for (const [status, type] of types) {
      assert.deepEqual(JSON.parse(anthropicErrorBodyFor(status, null, 'm')), { type: 'error', error: { type, message: 'm' } });
    }
  });

  it("an OpenAI upstream's error reaches an Anthropic client in Anthropic's shape, with its message and status", () => {
    const body = JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } });
    const out = translateErrorResponse(429, Buffer.from(body), 'openai', 'anthropic');
    assert.equal(out.status, 429);
    assert.deepEqual(JSON.parse(out.body), { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit reached' } });
  });

  it("an Anthropic upstream's overload reaches an OpenAI client as 503 server_error keeping the Anthropic type as code", () => {
    const body = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const out = translateErrorResponse(529, body, 'anthropic', 'openai');
    assert.equal(out.status, 503);
    assert.deepEqual(JSON.parse(out.body), {
      error: { message: 'Overloaded', type: 'server_error', param: null, code: 'overloaded_error' },
    });
  });

  it('a body that is not an error object keeps only its status; same protocols pass through', () => {
    const out = translateErrorResponse(502, '<html>bad gateway</html>', 'openai', 'anthropic');
    assert.deepEqual(JSON.parse(out.body), { type: 'error', error: { type: 'api_error', message: 'the provider answered HTTP 502' } });
    assert.deepEqual(translateErrorResponse(400, 'x', 'openai', 'openai'), { status: 400, body: 'x' });
  });
});
