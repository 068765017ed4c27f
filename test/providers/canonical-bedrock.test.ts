import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  anthropicRequestToCanonical,
  bedrockResponseToCanonical,
  type CanonicalRequest,
  canonicalToBedrockRequest,
  EventStreamFrames,
  isClaudeModel,
  openaiRequestToCanonical,
  readBedrockAnswer,
  StreamTranslator,
  statusOfBedrockError,
  translateErrorResponse,
  usageFromBedrock,
} from '../../src/providers/index.js';
import { bedrockCodec, bedrockEventFrame } from '../support/bedrock-frames.js';

const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NOVA = 'amazon.nova-pro-v1:0';

function fromOpenai(body: Record<string, unknown>): CanonicalRequest {
  const read = openaiRequestToCanonical({ model: NOVA, ...body });
  assert.ok(read.ok, read.ok ? '' : read.reason);
  return read.value;
}

function fromAnthropic(body: Record<string, unknown>): CanonicalRequest {
  const read = anthropicRequestToCanonical({ model: CLAUDE, max_tokens: 100, ...body });
  assert.ok(read.ok, read.ok ? '' : read.reason);
  return read.value;
}

function written(req: CanonicalRequest, client: 'openai' | 'anthropic' = 'openai') {
  const w = canonicalToBedrockRequest(req, { client });
  assert.ok(w.ok, w.ok ? '' : w.reason);
  return w.value;
}

const PNG = 'iVBORw0KGgo=';

describe('canonical -> Bedrock Converse request', () => {
  it('puts system messages in system, sampling in inferenceConfig, and leaves the model out of the body', () => {
    const { body, dropped } = written(
      fromOpenai({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello' },
          { role: 'user', content: 'Again' },
        ],
        max_tokens: 40,
        temperature: 0.5,
        top_p: 0.9,
        stop: ['END'],
      }),
    );
    assert.deepEqual(body, {
      messages: [
        { role: 'user', content: [{ text: 'Hi' }] },
        { role: 'assistant', content: [{ text: 'Hello' }] },
        { role: 'user', content: [{ text: 'Again' }] },
      ],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 40, temperature: 0.5, topP: 0.9, stopSequences: ['END'] },
    });
    assert.deepEqual(dropped, []);
  });

  it('clamps an OpenAI temperature above 1 and lists it', () => {
    const { body, dropped } = written(fromOpenai({ messages: [{ role: 'user', content: 'x' }], temperature: 1.6 }));
    assert.deepEqual(body.inferenceConfig, { temperature: 1 });
    assert.deepEqual(dropped, ['temperature']);
  });

  it("writes tool calls and results, merging an OpenAI client's tool messages and next user message into one user turn", () => {
    const { body } = written(
      fromOpenai({
        messages: [
          { role: 'user', content: 'Weather in Paris and Rome?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
              { id: 'c2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
          { role: 'tool', tool_call_id: 'c2', content: 'rain' },
          { role: 'user', content: 'Thanks' },
        ],
        tools: [{ type: 'function', function: { name: 'weather', description: 'Weather now', parameters: { type: 'object' } } }],
        tool_choice: 'auto',
      }),
    );
    assert.deepEqual(body.messages, [
      { role: 'user', content: [{ text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { toolUse: { toolUseId: 'c1', name: 'weather', input: { city: 'Paris' } } },
          { toolUse: { toolUseId: 'c2', name: 'weather', input: { city: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'c1', content: [{ text: 'sunny' }] } },
          { toolResult: { toolUseId: 'c2', content: [{ text: 'rain' }] } },
          { text: 'Thanks' },
        ],
      },
    ]);
    assert.deepEqual(body.toolConfig, {
      tools: [{ toolSpec: { name: 'weather', description: 'Weather now', inputSchema: { json: { type: 'object' } } } }],
      toolChoice: { auto: {} },
    });
  });

  it("writes an Anthropic client's error result as status error, with its image, and strict tools as strict", () => {
    const { body } = written(
      fromAnthropic({
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'shot', input: {} }] },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                is_error: true,
                content: [
                  { type: 'text', text: 'partly failed' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
                ],
              },
            ],
          },
        ],
        tools: [{ name: 'shot', input_schema: { type: 'object' }, strict: true }],
      }),
      'anthropic',
    );
    assert.deepEqual((body.messages as unknown[])[2], {
      role: 'user',
      content: [
        {
          toolResult: {
            toolUseId: 'toolu_1',
            content: [{ text: 'partly failed' }, { image: { format: 'png', source: { bytes: PNG } } }],
            status: 'error',
          },
        },
      ],
    });
    assert.deepEqual(body.toolConfig, { tools: [{ toolSpec: { name: 'shot', inputSchema: { json: { type: 'object' } }, strict: true } }] });
  });

  it('sends a data: URL image inline and refuses one by web URL or of a format Bedrock does not take', () => {
    const image = (url: string) => fromOpenai({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] });
    const { body } = written(image(`data:image/jpeg;base64,${PNG}`));
    assert.deepEqual(body.messages, [{ role: 'user', content: [{ image: { format: 'jpeg', source: { bytes: PNG } } }] }]);
    const byUrl = canonicalToBedrockRequest(image('https://example.com/a.png'), { client: 'openai' });
    assert.ok(!byUrl.ok && byUrl.kind === 'unsupported' && byUrl.path === 'messages[0].content[0]');
    const tiff = canonicalToBedrockRequest(image(`data:image/tiff;base64,${PNG}`), { client: 'openai' });
    assert.ok(!tiff.ok && tiff.kind === 'unsupported');
  });

  it('maps tool choice required to any and a named function to tool', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const messages = [{ role: 'user', content: 'x' }];
    const any = written(fromOpenai({ messages, tools, tool_choice: 'required' })).body.toolConfig as Record<string, unknown>;
    assert.deepEqual(any.toolChoice, { any: {} });
    const named = written(fromOpenai({ messages, tools, tool_choice: { type: 'function', function: { name: 'f' } } })).body
      .toolConfig as Record<string, unknown>;
    assert.deepEqual(named.toolChoice, { tool: { name: 'f' } });
  });

  it('sends no tools for tool choice none, unless the history holds tool calls, which Converse needs toolConfig for', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const plain = written(fromOpenai({ messages: [{ role: 'user', content: 'x' }], tools, tool_choice: 'none' }));
    assert.equal(plain.body.toolConfig, undefined);
    assert.deepEqual(plain.dropped, []);
    const loop = written(
      fromOpenai({
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'done' },
        ],
        tools,
        tool_choice: 'none',
      }),
    );
    assert.deepEqual(loop.body.toolConfig, { tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }] });
    assert.deepEqual(loop.dropped, ['tool_choice']);
  });

  it('leaves out empty text, which Converse refuses, and gives an empty tool result as an empty JSON object', () => {
    const { body } = written(
      fromOpenai({
        messages: [
          { role: 'system', content: '' },
          { role: 'user', content: 'x' },
          { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: '' },
        ],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      }),
    );
    assert.equal(body.system, undefined);
    assert.deepEqual(body.messages, [
      { role: 'user', content: [{ text: 'x' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'c1', name: 'f', input: {} } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'c1', content: [{ json: {} }] } }] },
    ]);
  });

  it('declares the tools a history called when the request offers none, as Converse needs toolConfig then', () => {
    const { body, dropped } = written(
      fromOpenai({
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'found' },
          { role: 'user', content: 'Summarise.' },
        ],
      }),
    );
    const config = body.toolConfig as { tools: { toolSpec: Record<string, unknown> }[]; toolChoice?: unknown };
    assert.deepEqual(
      config.tools.map((t) => t.toolSpec.name),
      ['lookup'],
    );
    assert.equal(config.toolChoice, undefined);
    assert.deepEqual(dropped, []);
  });

  it('lists what Converse has no place for, by the name each client sent it by', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const o = written(fromOpenai({ messages: [{ role: 'user', content: 'x' }], tools, parallel_tool_calls: false, user: 'u1' }));
    assert.deepEqual(o.dropped, ['parallel_tool_calls', 'user']);
    const a = written(
      fromAnthropic({
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
        metadata: { user_id: 'u1' },
      }),
      'anthropic',
    );
    assert.deepEqual(a.dropped, ['tool_choice.disable_parallel_tool_use', 'metadata']);
  });

  it("turns cache_control into cache points after the marked system block, content block and tool, keeping Bedrock's ttls", () => {
    const { body, dropped } = written(
      fromAnthropic({
        system: [{ type: 'text', text: 'Long prompt', cache_control: { type: 'ephemeral', ttl: '1h' } }],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Doc', cache_control: { type: 'ephemeral' } },
              { type: 'text', text: 'Q' },
            ],
          },
        ],
        tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } }],
      }),
      'anthropic',
    );
    assert.deepEqual(body.system, [{ text: 'Long prompt' }, { cachePoint: { type: 'default', ttl: '1h' } }]);
    assert.deepEqual(body.messages, [{ role: 'user', content: [{ text: 'Doc' }, { cachePoint: { type: 'default' } }, { text: 'Q' }] }]);
    assert.deepEqual((body.toolConfig as Record<string, unknown>).tools, [
      { toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } },
      { cachePoint: { type: 'default' } },
    ]);
    assert.deepEqual(dropped, []);
  });

  it("carries Anthropic's top_k and thinking in additionalModelRequestFields for a Claude model only", () => {
    const request = {
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 4000,
      top_k: 5,
      temperature: 0.3,
      thinking: { type: 'enabled', budget_tokens: 2000 },
    };
    const claude = written(fromAnthropic(request), 'anthropic');
    assert.deepEqual(claude.body.additionalModelRequestFields, { top_k: 5, thinking: { type: 'enabled', budget_tokens: 2000 } });
    assert.deepEqual(claude.body.inferenceConfig, { maxTokens: 4000 });
    assert.deepEqual(claude.carried, ['top_k']);
    assert.deepEqual(claude.dropped, ['temperature']);
    const nova = anthropicRequestToCanonical({ model: NOVA, ...request });
    assert.ok(nova.ok);
    const other = written(nova.value, 'anthropic');
    assert.equal(other.body.additionalModelRequestFields, undefined);
    assert.equal(other.carried, undefined);
    assert.deepEqual(other.dropped, ['thinking']);
    assert.deepEqual(other.body.inferenceConfig, { maxTokens: 4000, temperature: 0.3 });
  });

  it("gives an OpenAI client's reasoning_effort a thinking budget on Claude, and lists it elsewhere", () => {
    const claude = openaiRequestToCanonical({ model: CLAUDE, messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'low' });
    assert.ok(claude.ok);
    const w = written(claude.value);
    assert.deepEqual(w.body.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 2048 } });
    assert.deepEqual(w.body.inferenceConfig, { maxTokens: 4096 });
    assert.deepEqual(written(fromOpenai({ messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'low' })).dropped, [
      'reasoning_effort',
    ]);
  });

  it("writes structured output as Converse's outputConfig, the schema as JSON text", () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const { body } = written(
      fromOpenai({
        messages: [{ role: 'user', content: 'x' }],
        response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
      }),
    );
    assert.deepEqual(body.outputConfig, {
      textFormat: { type: 'json_schema', structure: { jsonSchema: { schema: JSON.stringify(schema), name: 'answer' } } },
    });
  });

  it('knows a Claude model by its id, an inference profile or an ARN naming one', () => {
    assert.ok(isClaudeModel('anthropic.claude-3-haiku-20240307-v1:0'));
    assert.ok(isClaudeModel('global.anthropic.claude-opus-4-5-20251101-v1:0'));
    assert.ok(isClaudeModel('arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0'));
    assert.ok(!isClaudeModel(NOVA));
    assert.ok(!isClaudeModel('meta.llama3-70b-instruct-v1:0'));
  });
});

describe('Bedrock Converse response -> canonical', () => {
  const answer = (content: unknown[], stopReason: string, usage: unknown = { inputTokens: 10, outputTokens: 5, totalTokens: 15 }) => ({
    output: { message: { role: 'assistant', content } },
    stopReason,
    usage,
    metrics: { latencyMs: 120 },
  });

  it('reads text, reasoning with its signature and tool uses', () => {
    const read = bedrockResponseToCanonical(
      answer(
        [
          { reasoningContent: { reasoningText: { text: 'think', signature: 'sig' } } },
          { text: 'Calling.' },
          { toolUse: { toolUseId: 'tooluse_1', name: 'weather', input: { city: 'Paris' } } },
        ],
        'tool_use',
      ),
    );
    assert.ok(read.ok);
    assert.deepEqual(read.value.content, [
      { type: 'thinking', text: 'think', signature: 'sig' },
      { type: 'text', text: 'Calling.' },
      { type: 'tool_call', id: 'tooluse_1', name: 'weather', input: { city: 'Paris' } },
    ]);
    assert.equal(read.value.stopReason, 'tool_use');
    assert.deepEqual(read.value.usage, { inputTokens: 10, outputTokens: 5 });
  });

  it('maps every stop reason', () => {
    const expected: Record<string, string | null> = {
      end_turn: 'end_turn',
      tool_use: 'tool_use',
      max_tokens: 'max_tokens',
      stop_sequence: 'stop_sequence',
      guardrail_intervened: 'content_filter',
      content_filtered: 'content_filter',
      model_context_window_exceeded: 'max_tokens',
      malformed_model_output: 'end_turn',
      something_new: null,
    };
    for (const [reason, stop] of Object.entries(expected)) {
      const read = bedrockResponseToCanonical(answer([{ text: 'x' }], reason));
      assert.ok(read.ok);
      assert.equal(read.value.stopReason, stop, reason);
    }
  });

  it('counts cache reads and writes into the input, which Bedrock reports apart', () => {
    const usage = { inputTokens: 100, outputTokens: 7, totalTokens: 2107, cacheReadInputTokens: 1500, cacheWriteInputTokens: 500 };
    assert.deepEqual(usageFromBedrock(usage), { inputTokens: 2100, outputTokens: 7, cacheReadTokens: 1500, cacheWriteTokens: 500 });
    assert.deepEqual(usageFromBedrock({ inputTokens: 3, outputTokens: 1, cacheReadInputTokens: 0 }), { inputTokens: 3, outputTokens: 1 });
    assert.equal(usageFromBedrock({ outputTokens: 1 }), null);
  });

  it('refuses a body without an output message', () => {
    assert.equal(bedrockResponseToCanonical({ stopReason: 'end_turn' }).ok, false);
    assert.equal(bedrockResponseToCanonical('x').ok, false);
  });
});

const codec = bedrockCodec;
const event = bedrockEventFrame;

function exception(type: string, message: string): Buffer {
  return Buffer.from(
    codec.encode({
      headers: {
        ':message-type': { type: 'string', value: 'exception' },
        ':exception-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
      },
      body: Buffer.from(JSON.stringify({ message })),
    }),
  );
}

const TEXT_ANSWER = [
  event('messageStart', { role: 'assistant' }),
  event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hel' } }),
  event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'lo' } }),
  event('contentBlockStop', { contentBlockIndex: 0 }),
  event('messageStop', { stopReason: 'end_turn' }),
  event('metadata', { usage: { inputTokens: 8, outputTokens: 2, totalTokens: 10, cacheReadInputTokens: 4 }, metrics: { latencyMs: 50 } }),
];

function dataOf(out: string): unknown[] {
  return out
    .split('\n\n')
    .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
    .map((e) => JSON.parse(e.slice(6)));
}

describe('a Bedrock ConverseStream, translated', () => {
  it('becomes OpenAI chunks with the usage from metadata, and is complete', () => {
    const t = new StreamTranslator({ from: 'bedrock', to: 'openai', includeUsage: true });
    const out = t.push(Buffer.concat(TEXT_ANSWER)) + t.end();
    assert.ok(t.complete);
    assert.deepEqual(t.usage, { inputTokens: 12, outputTokens: 2, cacheReadTokens: 4 });
    const chunks = dataOf(out) as { choices: { delta: { content?: string }; finish_reason: string | null }[]; usage?: unknown }[];
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello');
    assert.ok(chunks.some((c) => c.choices[0]?.finish_reason === 'stop'));
    assert.deepEqual(chunks.at(-1)?.usage, {
      prompt_tokens: 12,
      completion_tokens: 2,
      total_tokens: 14,
      prompt_tokens_details: { cached_tokens: 4 },
    });
    assert.ok(out.endsWith('data: [DONE]\n\n'));
  });

  it('gives the same bytes however the body is split', () => {
    const whole = Buffer.concat(TEXT_ANSWER);
    const once = new StreamTranslator({ from: 'bedrock', to: 'anthropic' });
    const expected = once.push(whole) + once.end();
    // Ids and timestamps are the encoder's own: compare the events' data without them.
    const strip = (s: string) => s.replace(/"id":"[^"]*"/g, '"id":""').replace(/"created":\d+/g, '"created":0');
    for (let cut = 1; cut < whole.length; cut++) {
      const t = new StreamTranslator({ from: 'bedrock', to: 'anthropic' });
      const out = t.push(whole.subarray(0, cut)) + t.push(whole.subarray(cut)) + t.end();
      assert.equal(strip(out), strip(expected), `split at ${cut}`);
      assert.ok(t.complete);
    }
    const bytewise = new StreamTranslator({ from: 'bedrock', to: 'anthropic' });
    let out = '';
    for (let i = 0; i < whole.length; i++) out += bytewise.push(whole.subarray(i, i + 1));
    assert.equal(strip(out + bytewise.end()), strip(expected));
  });

  it('streams reasoning with its signature and a tool call to an Anthropic client', () => {
    const t = new StreamTranslator({ from: 'bedrock', to: 'anthropic' });
    const out =
      t.push(
        Buffer.concat([
          event('messageStart', { role: 'assistant' }),
          event('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'Hmm.' } } }),
          event('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig1' } } }),
          event('contentBlockStop', { contentBlockIndex: 0 }),
          event('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_9', name: 'weather' } } }),
          event('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' } } }),
          event('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '"Paris"}' } } }),
          event('contentBlockStop', { contentBlockIndex: 1 }),
          event('messageStop', { stopReason: 'tool_use' }),
          event('metadata', { usage: { inputTokens: 5, outputTokens: 9, totalTokens: 14 } }),
        ]),
      ) + t.end();
    assert.ok(t.complete);
    assert.match(out, /"thinking":"Hmm\."/);
    assert.match(out, /"signature":"sig1"/);
    assert.match(out, /"type":"tool_use","id":"tooluse_9","name":"weather"/);
    assert.match(out, /"partial_json":"\{\\"city\\":"/);
    assert.match(out, /"stop_reason":"tool_use"/);
    assert.match(out, /event: message_stop/);
  });

  it('gives a tool call that streamed no input the arguments {}', () => {
    const t = new StreamTranslator({ from: 'bedrock', to: 'openai' });
    const out =
      t.push(
        Buffer.concat([
          event('messageStart', { role: 'assistant' }),
          event('contentBlockStart', { contentBlockIndex: 0, start: { toolUse: { toolUseId: 'tooluse_0', name: 'now' } } }),
          event('contentBlockStop', { contentBlockIndex: 0 }),
          event('messageStop', { stopReason: 'tool_use' }),
          event('metadata', { usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }),
        ]),
      ) + t.end();
    const calls = (dataOf(out) as { choices: { delta: { tool_calls?: { function: { arguments?: string } }[] } }[] }[]).flatMap(
      (c) => c.choices[0]?.delta.tool_calls ?? [],
    );
    assert.equal(calls.map((c) => c.function.arguments ?? '').join(''), '{}');
  });

  it('ends with the client error event of the status an exception frame stands for', () => {
    const t = new StreamTranslator({ from: 'bedrock', to: 'anthropic' });
    const out =
      t.push(
        Buffer.concat([
          TEXT_ANSWER[0] as Buffer,
          TEXT_ANSWER[1] as Buffer,
          exception('throttlingException', 'Too many tokens, please wait before trying again.'),
        ]),
      ) + t.end();
    assert.ok(!t.complete);
    assert.match(out, /event: error\ndata: .*"rate_limit_error".*Too many tokens/);
    const o = new StreamTranslator({ from: 'bedrock', to: 'openai' });
    const failed = o.push(exception('modelStreamErrorException', 'The model failed')) + o.end();
    assert.match(failed, /"type":"server_error"/);
    assert.match(failed, /The model failed/);
  });

  it('is cut, with an error event, when the body ends before messageStop', () => {
    const t = new StreamTranslator({ from: 'bedrock', to: 'openai' });
    const whole = Buffer.concat(TEXT_ANSWER.slice(0, 3));
    // A frame cut in the middle, too.
    const out = t.push(whole.subarray(0, whole.length - 5)) + t.end();
    assert.ok(!t.complete);
    assert.match(out, /ended before the answer was complete/);
  });

  it('is whole at the end of the body after messageStop, even without metadata', () => {
    const t = new StreamTranslator({ from: 'bedrock', to: 'openai' });
    const out = t.push(Buffer.concat(TEXT_ANSWER.slice(0, 5))) + t.end();
    assert.ok(t.complete);
    assert.ok(out.endsWith('data: [DONE]\n\n'));
  });

  it('ends with stream_event_too_large when a frame says it is over the bound, without holding it', () => {
    const big = event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'x'.repeat(2000) } });
    const t = new StreamTranslator({ from: 'bedrock', to: 'openai', maxEventBytes: 1024 });
    const out = t.push(Buffer.concat([TEXT_ANSWER[0] as Buffer, big.subarray(0, 8)]));
    assert.match(out, /stream_event_too_large/);
    assert.equal(t.push(big.subarray(8)), '');
  });

  it('ends with an error event on a frame whose checksum is wrong', () => {
    const bad = Buffer.from(TEXT_ANSWER[1] as Buffer);
    bad[bad.length - 6] = (bad[bad.length - 6] as number) ^ 0xff;
    const t = new StreamTranslator({ from: 'bedrock', to: 'openai' });
    const out = t.push(Buffer.concat([TEXT_ANSWER[0] as Buffer, bad])) + t.end();
    assert.match(out, /corrupt event-stream frame/);
  });

  it('cuts frames by their length for the relay, under the bound', () => {
    const frames = new EventStreamFrames(4096);
    const whole = Buffer.concat(TEXT_ANSWER);
    const first = frames.push(whole.subarray(0, (TEXT_ANSWER[0] as Buffer).length + 3));
    assert.deepEqual(first, TEXT_ANSWER[0]);
    const rest = frames.push(whole.subarray((TEXT_ANSWER[0] as Buffer).length + 3));
    assert.equal(rest?.length, whole.length - (TEXT_ANSWER[0] as Buffer).length);
    assert.equal(frames.events, TEXT_ANSWER.length);
    assert.equal(new EventStreamFrames(16).push(whole), null);
  });
});

describe('a Bedrock error answer', () => {
  const header = (type: string) => (name: string) => (name === 'x-amzn-errortype' ? type : undefined);

  it('is a context_length answer when a validation error says the input is over the window', () => {
    for (const message of [
      'Input is too long for requested model.',
      'The model returned the following errors: prompt is too long: 210000 tokens > 200000 maximum',
      'Too many input tokens. Max input tokens: 8192, request input token count: 9000',
    ]) {
      const verdict = readBedrockAnswer(
        400,
        JSON.stringify({ message }),
        header('ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/'),
      );
      assert.equal(verdict.answerClass, 'context_length', message);
      assert.equal(verdict.keyRefused, false);
    }
    assert.equal(
      readBedrockAnswer(400, JSON.stringify({ Message: 'Input is too long for requested model.' })).answerClass,
      'context_length',
    );
    assert.equal(
      readBedrockAnswer(400, JSON.stringify({ message: 'Malformed input request: extraneous key' }), header('ValidationException'))
        .answerClass,
      null,
    );
  });

  it('is a refused credential when its type says so, whatever the status', () => {
    assert.equal(
      readBedrockAnswer(403, '{"message":"The security token included in the request is invalid."}', header('UnrecognizedClientException'))
        .keyRefused,
      true,
    );
    assert.equal(readBedrockAnswer(400, '{"Message":"Signature expired"}', header('InvalidSignatureException:http://x')).keyRefused, true);
    assert.equal(readBedrockAnswer(429, '{"message":"Too many requests"}', header('ThrottlingException')).keyRefused, false);
  });

  it('has the status of its type', () => {
    assert.equal(statusOfBedrockError('ThrottlingException:http://internal.amazon.com/coral/', 0), 429);
    assert.equal(statusOfBedrockError('modelNotReadyException', 0), 429);
    assert.equal(statusOfBedrockError('serviceUnavailableException', 0), 503);
    assert.equal(statusOfBedrockError('InternalServerException', 0), 500);
    assert.equal(statusOfBedrockError('validationException', 0), 400);
    assert.equal(statusOfBedrockError('AccessDeniedException', 0), 403);
    assert.equal(statusOfBedrockError('SomethingNew', 502), 502);
  });

  it("reaches a client in its own protocol's error shape, with Bedrock's message", () => {
    const body = JSON.stringify({ message: 'Input is too long for requested model.' });
    const openai = translateErrorResponse(400, body, 'bedrock', 'openai');
    assert.equal(openai.status, 400);
    assert.deepEqual(JSON.parse(openai.body), {
      error: { message: 'Input is too long for requested model.', type: 'invalid_request_error', param: null, code: null },
    });
    const anthropic = translateErrorResponse(429, '{"Message":"slow down"}', 'bedrock', 'anthropic');
    assert.deepEqual(JSON.parse(anthropic.body), { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
  });
});
