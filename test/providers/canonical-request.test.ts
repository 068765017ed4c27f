import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CanonicalRequest, Translation, WrittenRequest } from '../../src/providers/index.js';
import {
  anthropicRequestToCanonical,
  canonicalToAnthropicRequest,
  canonicalToOpenaiRequest,
  openaiRequestToCanonical,
} from '../../src/providers/index.js';

function value<T>(t: Translation<T>): T {
  if (!t.ok) assert.fail(`refused ${t.path}: ${t.reason}`);
  return t.value;
}

/** A written request's body (what goes upstream). */
function bodyOf(t: Translation<WrittenRequest>): Record<string, unknown> {
  return value(t).body;
}

function refusedAt<T>(t: Translation<T>, path: string, kind: 'unsupported' | 'invalid' = 'unsupported'): void {
  assert.equal(t.ok, false, `expected a refusal at ${path}`);
  if (t.ok) return;
  assert.equal(t.path, path, t.reason);
  assert.equal(t.kind, kind);
}

const PNG = 'iVBORw0KGgo=';

/** An OpenAI request using every field the canonical form carries. */
const openaiRequest = {
  model: 'gpt-4o',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'developer', content: [{ type: 'text', text: 'Use tools.' }] },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'auto' } },
      ],
    },
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cat"}' } },
        { id: 'call_2', type: 'function', function: { name: 'lookup', arguments: '{"q":"dog"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'a cat' },
    { role: 'tool', tool_call_id: 'call_2', content: '[tool error] not found' },
    { role: 'user', content: 'Thanks' },
  ],
  max_completion_tokens: 300,
  temperature: 0.5,
  top_p: 0.9,
  stop: ['END'],
  stream: true,
  stream_options: { include_usage: true },
  tools: [
    {
      type: 'function',
      function: { name: 'lookup', description: 'Looks up', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
    },
  ],
  tool_choice: 'required',
  parallel_tool_calls: false,
  user: 'u-42',
};

const canonicalFromOpenai: CanonicalRequest = {
  model: 'gpt-4o',
  system: [
    { type: 'text', text: 'Be brief.' },
    { type: 'text', text: 'Use tools.' },
  ],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: PNG } },
        { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.jpg' } },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'tool_call', id: 'call_1', name: 'lookup', input: { q: 'cat' } },
        { type: 'tool_call', id: 'call_2', name: 'lookup', input: { q: 'dog' } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', toolCallId: 'call_1', content: [{ type: 'text', text: 'a cat' }], isError: false }] },
    {
      role: 'user',
      content: [{ type: 'tool_result', toolCallId: 'call_2', content: [{ type: 'text', text: 'not found' }], isError: true }],
    },
    { role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
  ],
  maxOutputTokens: 300,
  temperature: 0.5,
  topP: 0.9,
  stopSequences: ['END'],
  stream: true,
  streamUsage: true,
  tools: [{ name: 'lookup', description: 'Looks up', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } }],
  toolChoice: { type: 'any' },
  parallelToolCalls: false,
  user: 'u-42',
  dropped: [],
};

/** An Anthropic request using every field the canonical form carries. */
const anthropicRequest = {
  model: 'claude-sonnet-4-5',
  system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Look at this', cache_control: { type: 'ephemeral', ttl: '1h' } },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'cat' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'no such animal' }], is_error: true },
        { type: 'text', text: 'Try again' },
      ],
    },
  ],
  max_tokens: 1024,
  temperature: 0.2,
  top_p: 0.8,
  stop_sequences: ['STOP'],
  stream: false,
  tools: [{ name: 'lookup', description: 'Looks up', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } }],
  tool_choice: { type: 'tool', name: 'lookup', disable_parallel_tool_use: true },
  metadata: { user_id: 'u-7' },
};

const canonicalFromAnthropic: CanonicalRequest = {
  model: 'claude-sonnet-4-5',
  system: [{ type: 'text', text: 'Be brief.', cacheControl: { type: 'ephemeral' } }],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Look at this', cacheControl: { type: 'ephemeral', ttl: '1h' } },
        { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: PNG } },
        { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.jpg' } },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_call', id: 'toolu_1', name: 'lookup', input: { q: 'cat' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', toolCallId: 'toolu_1', content: [{ type: 'text', text: 'no such animal' }], isError: true },
        { type: 'text', text: 'Try again' },
      ],
    },
  ],
  maxOutputTokens: 1024,
  temperature: 0.2,
  topP: 0.8,
  stopSequences: ['STOP'],
  stream: false,
  tools: [{ name: 'lookup', description: 'Looks up', inputSchema: { type: 'object' }, cacheControl: { type: 'ephemeral' } }],
  toolChoice: { type: 'tool', name: 'lookup' },
  parallelToolCalls: false,
  user: 'u-7',
  dropped: [],
};

/** Adjacent turns of one role as one: how Anthropic reads them, and how OpenAI splits tool results out. */
function mergedTurns(req: CanonicalRequest): CanonicalRequest {
  const messages: { role: 'user' | 'assistant'; content: CanonicalRequest['messages'][number]['content'][number][] }[] = [];
  for (const m of req.messages) {
    const last = messages.at(-1);
    if (last?.role === m.role) last.content.push(...m.content);
    else messages.push({ role: m.role, content: [...m.content] });
  }
  return { ...req, messages };
}

/** What survives a trip through OpenAI: everything but Anthropic's cache markers. */
function withoutCacheControl(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === 'cacheControl' ? undefined : v)));
}

describe('OpenAI requests to the canonical form', () => {
  it('reads every supported field: system and developer prompts, images, tool calls and results, sampling, tools, user', () => {
    assert.deepEqual(value(openaiRequestToCanonical(openaiRequest)), canonicalFromOpenai);
  });

  it('takes the output limit from max_completion_tokens, else max_tokens', () => {
    const base = { model: 'm', messages: [] };
    assert.equal(value(openaiRequestToCanonical({ ...base, max_tokens: 10 })).maxOutputTokens, 10);
    assert.equal(value(openaiRequestToCanonical({ ...base, max_tokens: 10, max_completion_tokens: 20 })).maxOutputTokens, 20);
    assert.equal(value(openaiRequestToCanonical(base)).maxOutputTokens, undefined);
  });

  it('reads a single stop string, each tool_choice form, and null as absent', () => {
    const base = { model: 'm', messages: [] };
    assert.deepEqual(value(openaiRequestToCanonical({ ...base, stop: 'X' })).stopSequences, ['X']);
    assert.deepEqual(value(openaiRequestToCanonical({ ...base, tool_choice: 'auto' })).toolChoice, { type: 'auto' });
    assert.deepEqual(value(openaiRequestToCanonical({ ...base, tool_choice: 'none' })).toolChoice, { type: 'none' });
    assert.deepEqual(value(openaiRequestToCanonical({ ...base, tool_choice: { type: 'function', function: { name: 'f' } } })).toolChoice, {
      type: 'tool',
      name: 'f',
    });
    const nulls = value(openaiRequestToCanonical({ ...base, temperature: null, stop: null, seed: null, n: null, tools: null }));
    assert.deepEqual(nulls, { model: 'm', system: [], messages: [], stream: false, dropped: [] });
  });

  it('reads safety_identifier as the end user, and refuses a different user beside it', () => {
    const base = { model: 'm', messages: [] };
    assert.equal(value(openaiRequestToCanonical({ ...base, safety_identifier: 'h1' })).user, 'h1');
    assert.equal(value(openaiRequestToCanonical({ ...base, safety_identifier: 'h1', user: 'h1' })).user, 'h1');
    refusedAt(openaiRequestToCanonical({ ...base, safety_identifier: 'h1', user: 'u2' }), 'user');
  });

  it('accepts untranslatable fields at their neutral value', () => {
    const neutral = {
      model: 'm',
      messages: [],
      n: 1,
      logprobs: false,
      presence_penalty: 0,
      frequency_penalty: 0,
      logit_bias: {},
      response_format: { type: 'text' },
      store: false,
      service_tier: 'auto',
      modalities: ['text'],
    };
    assert.equal(openaiRequestToCanonical(neutral).ok, true);
  });
});

describe('canonical requests to OpenAI', () => {
  it('writes the system prompt first, tool results as tool messages, images as data URLs, and asks a stream for usage', () => {
    const body = bodyOf(canonicalToOpenaiRequest(canonicalFromAnthropic));
    assert.deepEqual(body, {
      model: 'claude-sonnet-4-5',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at this' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cat"}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: '[tool error] no such animal' },
        { role: 'user', content: 'Try again' },
      ],
      max_tokens: 1024,
      temperature: 0.2,
      top_p: 0.8,
      stop: ['STOP'],
      tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks up', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'lookup' } },
      parallel_tool_calls: false,
      user: 'u-7',
    });
    const streamed = bodyOf(
      canonicalToOpenaiRequest({ ...canonicalFromAnthropic, stream: true }, { maxTokensField: 'max_completion_tokens' }),
    );
    assert.equal(streamed.stream, true);
    assert.deepEqual(streamed.stream_options, { include_usage: true });
    assert.equal(streamed.max_completion_tokens, 1024);
    assert.equal(streamed.max_tokens, undefined);
  });

  it('refuses an image inside a tool result, which an OpenAI tool message cannot carry', () => {
    const req: CanonicalRequest = {
      model: 'm',
      system: [],
      stream: false,
      dropped: [],
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              toolCallId: 't',
              isError: false,
              content: [{ type: 'image', source: { kind: 'url', url: 'https://x/y.png' } }],
            },
          ],
        },
      ],
    };
    refusedAt(canonicalToOpenaiRequest(req), 'messages[0].content[0].content[0]');
  });
});

describe('Anthropic requests to the canonical form', () => {
  it('reads every supported field: cache markers, images, tool use and results, sampling, tools, tool_choice, metadata', () => {
    assert.deepEqual(value(anthropicRequestToCanonical(anthropicRequest)), canonicalFromAnthropic);
  });

  it('reads a string system prompt and string content, and each tool_choice type', () => {
    const c = value(anthropicRequestToCanonical({ model: 'm', max_tokens: 5, system: 'S', messages: [{ role: 'user', content: 'hi' }] }));
    assert.deepEqual(c.system, [{ type: 'text', text: 'S' }]);
    assert.deepEqual(c.messages, [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    for (const type of ['auto', 'any', 'none'] as const) {
      const r = value(anthropicRequestToCanonical({ model: 'm', max_tokens: 5, messages: [], tool_choice: { type } }));
      assert.deepEqual(r.toolChoice, { type });
      assert.equal(r.parallelToolCalls, undefined);
    }
  });
});

describe('canonical requests to Anthropic', () => {
  it('merges consecutive tool messages into one user turn, hoists the system prompt, and names the user in metadata', () => {
    const body = bodyOf(canonicalToAnthropicRequest(canonicalFromOpenai));
    assert.deepEqual(body.system, [
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'Use tools.' },
    ]);
    const messages = body.messages as { role: string; content: { type: string }[] }[];
    assert.deepEqual(
      messages.map((m) => `${m.role}:${m.content.map((c) => c.type).join(',')}`),
      ['user:text,image,image', 'assistant:tool_use,tool_use', 'user:tool_result,tool_result,text'],
    );
    assert.deepEqual(messages[2]?.content[1], {
      type: 'tool_result',
      tool_use_id: 'call_2',
      content: [{ type: 'text', text: 'not found' }],
      is_error: true,
    });
    assert.deepEqual(messages[0]?.content[1], { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } });
    assert.equal(body.max_tokens, 300);
    assert.deepEqual(body.stop_sequences, ['END']);
    assert.deepEqual(body.tool_choice, { type: 'any', disable_parallel_tool_use: true });
    assert.deepEqual(body.metadata, { user_id: 'u-42' });
    assert.equal(body.stream, true);
  });

  it('fills the required max_tokens when the client set no limit', () => {
    const req = value(openaiRequestToCanonical({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(bodyOf(canonicalToAnthropicRequest(req)).max_tokens, 4096);
    assert.equal(bodyOf(canonicalToAnthropicRequest(req, { defaultMaxTokens: 77 })).max_tokens, 77);
  });

  it('writes parallel_tool_calls false without a tool_choice as auto with parallel use disabled', () => {
    const req = value(openaiRequestToCanonical({ model: 'm', messages: [], parallel_tool_calls: false }));
    assert.deepEqual(bodyOf(canonicalToAnthropicRequest(req)).tool_choice, { type: 'auto', disable_parallel_tool_use: true });
  });

  it('clamps a temperature above 1 to 1, which Anthropic accepts, and lists it', () => {
    const req = value(openaiRequestToCanonical({ model: 'm', messages: [], temperature: 1.5 }));
    const written = value(canonicalToAnthropicRequest(req));
    assert.equal(written.body.temperature, 1);
    assert.deepEqual(written.dropped, ['temperature']);
    assert.deepEqual(value(canonicalToAnthropicRequest({ ...req, temperature: 0.7 })).dropped, []);
  });
});

describe('request round trips', () => {
  it('OpenAI -> canonical -> OpenAI -> canonical gives the same canonical request', () => {
    const once = value(openaiRequestToCanonical(openaiRequest));
    const twice = value(openaiRequestToCanonical(bodyOf(canonicalToOpenaiRequest(once))));
    assert.deepEqual(twice, once);
  });

  it('Anthropic -> canonical -> Anthropic -> canonical gives the same canonical request', () => {
    const once = value(anthropicRequestToCanonical(anthropicRequest));
    const twice = value(anthropicRequestToCanonical(bodyOf(canonicalToAnthropicRequest(once))));
    assert.deepEqual(twice, once);
  });

  it('Anthropic -> canonical -> OpenAI -> canonical keeps everything but the cache markers, is_error included', () => {
    const once = value(anthropicRequestToCanonical(anthropicRequest));
    const back = value(openaiRequestToCanonical(bodyOf(canonicalToOpenaiRequest(once))));
    assert.deepEqual(mergedTurns(back), withoutCacheControl(once));
  });

  it('OpenAI -> canonical -> Anthropic -> canonical keeps every message, merged into alternating turns', () => {
    const once = value(openaiRequestToCanonical(openaiRequest));
    const back = value(anthropicRequestToCanonical(bodyOf(canonicalToAnthropicRequest(once))));
    const { streamUsage: _, ...rest } = once;
    assert.deepEqual(back, mergedTurns(rest));
  });
});

describe('request features the other protocol cannot give are refused by field path', () => {
  const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  const openaiCases: [string, Record<string, unknown>, string][] = [
    ['n above 1', { n: 2 }, 'n'],
    ['logprobs', { logprobs: true }, 'logprobs'],
    ['top_logprobs', { top_logprobs: 3 }, 'top_logprobs'],
    ['response_format json_object', { response_format: { type: 'json_object' } }, 'response_format.type'],
    ['audio output', { modalities: ['text', 'audio'] }, 'modalities'],
    ['audio', { audio: { voice: 'alloy', format: 'wav' } }, 'audio'],
    ['web search', { web_search_options: {} }, 'web_search_options'],
    ['legacy functions', { functions: [] }, 'functions'],
    ['an unknown field', { frobnicate: true }, 'frobnicate'],
    [
      'stream_options other than include_usage',
      { stream_options: { include_usage: true, include_obfuscation: true } },
      'stream_options.include_obfuscation',
    ],
    ['a custom tool', { tools: [{ type: 'custom', custom: { name: 'f' } }] }, 'tools[0].type'],
    [
      'audio input',
      { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: '', format: 'wav' } }] }] },
      'messages[0].content[0].type',
    ],
    [
      'a system message mid-conversation',
      {
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'system', content: 'later' },
        ],
      },
      'messages[1].role',
    ],
    ['a legacy function message', { messages: [{ role: 'function', name: 'f', content: 'x' }] }, 'messages[0].role'],
  ];
  for (const [name, patch, path] of openaiCases) {
    it(`OpenAI: ${name} -> ${path}`, () => refusedAt(openaiRequestToCanonical({ ...base, ...patch }), path));
  }

  const abase = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  const anthropicCases: [string, Record<string, unknown>, string][] = [
    ['a server tool', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools[0].type'],
    ['a document block', { messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] }, 'messages[0].content[0].type'],
    [
      'a file image source',
      { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] },
      'messages[0].content[0].source.type',
    ],
    ['mcp_servers', { mcp_servers: [] }, 'mcp_servers'],
    ['container', { container: 'c' }, 'container'],
    ['an unknown field', { frobnicate: true }, 'frobnicate'],
  ];
  for (const [name, patch, path] of anthropicCases) {
    it(`Anthropic: ${name} -> ${path}`, () => refusedAt(anthropicRequestToCanonical({ ...abase, ...patch }), path));
  }

  it('Anthropic thinking switched off is accepted', () => {
    assert.equal(anthropicRequestToCanonical({ ...abase, thinking: { type: 'disabled' } }).ok, true);
  });

  it('malformed requests are `invalid`, naming the field', () => {
    refusedAt(openaiRequestToCanonical({ messages: [] }), 'model', 'invalid');
    refusedAt(openaiRequestToCanonical({ model: 'm' }), 'messages', 'invalid');
    refusedAt(openaiRequestToCanonical({ model: 'm', messages: [], max_tokens: 0 }), 'max_tokens', 'invalid');
    refusedAt(
      openaiRequestToCanonical({
        model: 'm',
        messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{' } }] }],
      }),
      'messages[0].tool_calls[0].function.arguments',
      'invalid',
    );
    refusedAt(anthropicRequestToCanonical({ model: 'm', messages: [] }), 'max_tokens', 'invalid');
    refusedAt(anthropicRequestToCanonical('nope'), '', 'invalid');
  });
});

describe('hints the other protocol has no field for are dropped and listed', () => {
  const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  const openaiCases: [string, Record<string, unknown>, string][] = [
    ['seed', { seed: 7 }, 'seed'],
    ['frequency_penalty', { frequency_penalty: -0.5 }, 'frequency_penalty'],
    ['presence_penalty', { presence_penalty: 0.5 }, 'presence_penalty'],
    ['logit_bias', { logit_bias: { '50256': -100 } }, 'logit_bias'],
    ['store', { store: true }, 'store'],
    ['prediction', { prediction: { type: 'content', content: 'x' } }, 'prediction'],
    ['service_tier', { service_tier: 'flex' }, 'service_tier'],
    ['metadata beyond user_id', { metadata: { trace: 't1' } }, 'metadata'],
    ['a participant name', { messages: [{ role: 'user', content: 'hi', name: 'ann' }] }, 'messages.name'],
    [
      'an image detail level',
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'high' } }] }] },
      'messages.content.image_url.detail',
    ],
    [
      "an earlier turn's reasoning",
      {
        messages: [
          { role: 'assistant', content: 'a', reasoning_content: 'hm' },
          { role: 'user', content: 'b' },
        ],
      },
      'messages.reasoning_content',
    ],
  ];
  for (const [name, patch, listed] of openaiCases) {
    it(`OpenAI: ${name} is dropped as ${listed}`, () => {
      const c = value(openaiRequestToCanonical({ ...base, ...patch }));
      assert.deepEqual(c.dropped, [listed]);
      const written = JSON.stringify(bodyOf(canonicalToAnthropicRequest(c)));
      for (const key of Object.keys(patch)) if (key !== 'messages') assert.ok(!written.includes(`"${key}"`) || key === 'metadata', written);
    });
  }

  const abase = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  const anthropicCases: [string, Record<string, unknown>, string][] = [
    ['top_k', { top_k: 5 }, 'top_k'],
    ['service_tier', { service_tier: 'standard_only' }, 'service_tier'],
    ['a request-wide cache_control', { cache_control: { type: 'ephemeral' } }, 'cache_control'],
    [
      'eager_input_streaming on a tool',
      { tools: [{ name: 't', input_schema: { type: 'object' }, eager_input_streaming: true }] },
      'tools.eager_input_streaming',
    ],
    [
      'citations on text',
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'x', citations: [{}] }] }] },
      'messages.content.citations',
    ],
    [
      'thinking in history',
      {
        messages: [
          { role: 'user', content: 'q' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hm', signature: 's' },
              { type: 'text', text: 'a' },
            ],
          },
          { role: 'user', content: 'again' },
        ],
      },
      'messages.content.thinking',
    ],
  ];
  for (const [name, patch, listed] of anthropicCases) {
    it(`Anthropic: ${name} is dropped as ${listed}`, () => {
      const c = value(anthropicRequestToCanonical({ ...abase, ...patch }));
      assert.deepEqual(c.dropped, [listed]);
    });
  }

  it('Anthropic cache markers are listed once when written for OpenAI', () => {
    const c = value(anthropicRequestToCanonical(anthropicRequest));
    assert.deepEqual(c.dropped, []);
    assert.deepEqual(value(canonicalToOpenaiRequest(c)).dropped, ['cache_control']);
  });

  it('values that ask for nothing are not listed', () => {
    const c = value(openaiRequestToCanonical({ ...base, frequency_penalty: 0, presence_penalty: 0, store: false, logit_bias: {}, n: 1 }));
    assert.deepEqual(c.dropped, []);
    const withAuto = {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'auto' } }] }],
    };
    assert.deepEqual(value(openaiRequestToCanonical({ ...base, ...withAuto })).dropped, []);
  });
});

describe('features with an equivalent are mapped', () => {
  const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };

  it('OpenAI json_schema response_format becomes Anthropic output_config.format, and back', () => {
    const c = value(
      openaiRequestToCanonical({ ...base, response_format: { type: 'json_schema', json_schema: { name: 'place', schema, strict: true } } }),
    );
    const a = bodyOf(canonicalToAnthropicRequest(c));
    assert.deepEqual(a.output_config, { format: { type: 'json_schema', schema } });
    const back = value(anthropicRequestToCanonical(a));
    assert.deepEqual(bodyOf(canonicalToOpenaiRequest(back)).response_format, {
      type: 'json_schema',
      json_schema: { name: 'response', schema, strict: true },
    });
  });

  it("the structured-outputs beta's output_format reads like output_config.format", () => {
    const c = value(
      anthropicRequestToCanonical({ model: 'm', max_tokens: 9, messages: [], output_format: { type: 'json_schema', schema } }),
    );
    assert.deepEqual(c.responseFormat, { type: 'json_schema', name: 'response', schema, strict: true });
  });

  it('reasoning_effort becomes a thinking budget below max_tokens, and temperature is dropped beside it', () => {
    const c = value(openaiRequestToCanonical({ ...base, reasoning_effort: 'medium', max_tokens: 20_000, temperature: 0.3 }));
    const written = value(canonicalToAnthropicRequest(c));
    assert.deepEqual(written.body.thinking, { type: 'enabled', budget_tokens: 8192 });
    assert.equal(written.body.temperature, undefined);
    assert.deepEqual(written.dropped, ['temperature']);
    const tight = value(canonicalToAnthropicRequest({ ...c, maxOutputTokens: 3000, temperature: undefined }));
    assert.deepEqual(tight.body.thinking, { type: 'enabled', budget_tokens: 2999 });
  });

  it('reasoning_effort is dropped when there is no room for the smallest budget, or a tool is forced', () => {
    const small = value(openaiRequestToCanonical({ ...base, reasoning_effort: 'high', max_tokens: 500 }));
    assert.deepEqual(value(canonicalToAnthropicRequest(small)).dropped, ['reasoning_effort']);
    assert.equal(bodyOf(canonicalToAnthropicRequest(small)).thinking, undefined);
    const forced = value(
      openaiRequestToCanonical({
        ...base,
        reasoning_effort: 'low',
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: 'required',
      }),
    );
    assert.deepEqual(value(canonicalToAnthropicRequest(forced)).dropped, ['reasoning_effort']);
    assert.equal(value(openaiRequestToCanonical({ ...base, reasoning_effort: 'none' })).reasoning, undefined);
  });

  it('an Anthropic thinking budget becomes the reasoning_effort that spends about as much', () => {
    const effort = (thinking: unknown): unknown =>
      bodyOf(canonicalToOpenaiRequest(value(anthropicRequestToCanonical({ model: 'm', max_tokens: 40_000, messages: [], thinking }))))
        .reasoning_effort;
    assert.equal(effort({ type: 'enabled', budget_tokens: 1024 }), 'low');
    assert.equal(effort({ type: 'enabled', budget_tokens: 8000 }), 'medium');
    assert.equal(effort({ type: 'enabled', budget_tokens: 30_000 }), 'high');
    assert.equal(effort({ type: 'adaptive' }), 'medium');
    assert.equal(effort({ type: 'disabled' }), undefined);
  });

  it('OpenAI-style cache_control on a content part reaches Anthropic as its cache_control', () => {
    const c = value(
      openaiRequestToCanonical({
        model: 'm',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'long doc', cache_control: { type: 'ephemeral' } }] }],
      }),
    );
    const messages = bodyOf(canonicalToAnthropicRequest(c)).messages as { content: unknown[] }[];
    assert.deepEqual(messages[0]?.content[0], { type: 'text', text: 'long doc', cache_control: { type: 'ephemeral' } });
  });

  it('metadata.user_id is the end user, and strict tools stay strict both ways', () => {
    const c = value(
      openaiRequestToCanonical({
        ...base,
        metadata: { user_id: 'u-1' },
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: true } }],
      }),
    );
    const a = bodyOf(canonicalToAnthropicRequest(c));
    assert.deepEqual(a.metadata, { user_id: 'u-1' });
    assert.deepEqual(a.tools, [{ name: 'f', input_schema: { type: 'object' }, strict: true }]);
    const o = bodyOf(canonicalToOpenaiRequest(value(anthropicRequestToCanonical(a))));
    assert.deepEqual(o.tools, [{ type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: true } }]);
    assert.equal(o.user, 'u-1');
  });
});
