import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type CanonicalRequest,
  type CanonicalResponse,
  canonicalToAnthropicRequest,
  canonicalToBedrockRequest,
  canonicalToGeminiRequest,
  canonicalToOpenaiRequest,
  canonicalToResponsesObject,
  type ResponsesShape,
  responsesEcho,
  responsesRequestToCanonical,
  TRANSLATION_POLICY,
  type Translation,
  usageFromResponses,
  usageToResponses,
} from '../../src/providers/index.js';

// The Responses API as a client protocol of the canonical form: its requests read, and the
// canonical answer written as its Response object.

function read(parsed: Record<string, unknown>, items: Record<string, unknown>[] = []): Translation<CanonicalRequest> {
  return responsesRequestToCanonical({ model: 'gpt-x', ...parsed }, items);
}

function ok(parsed: Record<string, unknown>, items: Record<string, unknown>[] = []): CanonicalRequest {
  const t = read(parsed, items);
  assert.ok(t.ok, t.ok ? '' : `${t.kind} ${t.path}: ${t.reason}`);
  return t.value;
}

function refusedAt(t: Translation<unknown>, kind: 'unsupported' | 'invalid', path: string): void {
  assert.equal(t.ok, false, `expected a refusal at ${path}`);
  if (!t.ok) assert.deepEqual([t.kind, t.path], [kind, path]);
}

const user = (content: unknown): Record<string, unknown> => ({ type: 'message', role: 'user', content });

function shapeFor(parsed: Record<string, unknown> = {}): ResponsesShape {
  let n = 0;
  return { id: 'resp_1', createdAt: 1700000000, model: 'gpt-x', echo: responsesEcho(parsed), newItemId: (p) => `${p}_${++n}` };
}

describe('a Responses API request read into the canonical form', () => {
  it('puts instructions and leading system/developer messages in the system prompt, in order', () => {
    const req = ok({ instructions: 'Be brief.' }, [
      { role: 'developer', content: 'Use metric units.' },
      { role: 'system', content: [{ type: 'input_text', text: 'No emoji.' }] },
      { role: 'user', content: 'Hi' },
    ]);
    assert.deepEqual(
      req.system.map((p) => p.text),
      ['Be brief.', 'Use metric units.', 'No emoji.'],
    );
    assert.deepEqual(req.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
  });

  it('reads messages without a type (EasyInputMessage) and assistant output_text and refusal parts', () => {
    const req = ok({}, [
      { role: 'user', content: 'Q' },
      {
        type: 'message',
        id: 'msg_0',
        status: 'completed',
        role: 'assistant',
        content: [
          { type: 'output_text', text: 'A', annotations: [], logprobs: [] },
          { type: 'refusal', refusal: 'No.' },
        ],
      },
    ]);
    assert.deepEqual(req.messages[1], {
      role: 'assistant',
      content: [
        { type: 'text', text: 'A' },
        { type: 'text', text: 'No.' },
      ],
    });
  });

  it('merges consecutive function calls into one assistant turn and their outputs into one user turn', () => {
    const req = ok({}, [
      user('Weather in Oslo and the time?'),
      { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}', status: 'completed' },
      { type: 'function_call', call_id: 'call_b', name: 'time', arguments: '' },
      { type: 'function_call_output', call_id: 'call_a', output: 'rain' },
      { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: '12:00' }] },
    ]);
    assert.equal(req.messages.length, 3);
    assert.deepEqual(req.messages[1], {
      role: 'assistant',
      content: [
        { type: 'tool_call', id: 'call_a', name: 'weather', input: { city: 'Oslo' } },
        { type: 'tool_call', id: 'call_b', name: 'time', input: {} },
      ],
    });
    assert.deepEqual(req.messages[2], {
      role: 'user',
      content: [
        { type: 'tool_result', toolCallId: 'call_a', content: [{ type: 'text', text: 'rain' }], isError: false },
        { type: 'tool_result', toolCallId: 'call_b', content: [{ type: 'text', text: '12:00' }], isError: false },
      ],
    });
  });

  it('reads an mcp_call as a tool call and its result, and skips the gateway-only MCP items', () => {
    const req = ok({}, [
      user('Search'),
      { type: 'mcp_list_tools', id: 'mcpl_1', server_label: 'docs', tools: [] },
      { type: 'mcp_approval_request', id: 'mcpr_1', server_label: 'docs', name: 'find', arguments: '{}' },
      { type: 'mcp_approval_response', approval_request_id: 'mcpr_1', approve: true },
      { type: 'mcp_call', id: 'mcp_1', server_label: 'docs', name: 'find', arguments: '{"q":"x"}', output: 'found', error: null },
      { type: 'mcp_call', id: 'mcp_2', server_label: 'docs', name: 'find', arguments: '{}', output: null, error: 'boom' },
    ]);
    assert.deepEqual(req.messages.slice(1), [
      {
        role: 'assistant',
        content: [{ type: 'tool_call', id: 'mcp_1', name: 'find', input: { q: 'x' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', toolCallId: 'mcp_1', content: [{ type: 'text', text: 'found' }], isError: false }] },
      { role: 'assistant', content: [{ type: 'tool_call', id: 'mcp_2', name: 'find', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', toolCallId: 'mcp_2', content: [{ type: 'text', text: 'boom' }], isError: true }] },
    ]);
  });

  it('lists an earlier reasoning summary as dropped and its encrypted content not at all', () => {
    const summarised = ok({}, [
      user('Q'),
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thought' }], encrypted_content: 'opaque' },
    ]);
    assert.deepEqual(summarised.dropped, ['input.reasoning']);
    assert.deepEqual(ok({}, [user('Q'), { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' }]).dropped, []);
  });

  it('reads images by URL and data: URL, and files inline or by URL', () => {
    const req = ok({}, [
      user([
        { type: 'input_image', image_url: 'https://x/cat.png', detail: 'auto' },
        { type: 'input_image', image_url: 'data:image/png;base64,iVBO' },
        { type: 'input_file', file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' },
        { type: 'input_file', file_url: 'https://x/b.pdf' },
      ]),
    ]);
    assert.deepEqual(req.messages[0]?.content, [
      { type: 'image', source: { kind: 'url', url: 'https://x/cat.png' } },
      { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBO' } },
      { type: 'file', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBE' }, filename: 'a.pdf' },
      { type: 'file', source: { kind: 'url', url: 'https://x/b.pdf' } },
    ]);
    assert.deepEqual(req.dropped, []);
    assert.deepEqual(ok({}, [user([{ type: 'input_image', image_url: 'https://x', detail: 'high' }])]).dropped, ['input.content.detail']);
  });

  it('refuses what OpenAI alone holds (file ids) by the path of the part', () => {
    refusedAt(read({}, [user([{ type: 'input_image', file_id: 'file-1' }])]), 'unsupported', 'input[0].content[0].file_id');
    refusedAt(read({}, [user('a'), user([{ type: 'input_file', file_id: 'file-1' }])]), 'unsupported', 'input[1].content[0].file_id');
    refusedAt(read({}, [user([{ type: 'input_audio', input_audio: {} }])]), 'unsupported', 'input[0].content[0].type');
    refusedAt(read({}, [{ type: 'web_search_call', id: 'ws_1', status: 'completed' }]), 'unsupported', 'input[0].type');
  });

  it('refuses malformed input by its OpenAI param path', () => {
    refusedAt(read({}, [user([{ type: 'input_image', image_url: 7 }])]), 'invalid', 'input[0].content[0].image_url');
    refusedAt(read({}, [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{' }]), 'invalid', 'input[0].arguments');
    refusedAt(read({}, [{ role: 'tool', content: 'x' }]), 'invalid', 'input[0].role');
    refusedAt(read({}, [user([{ type: 'input_file', file_data: 'JVBE' }])]), 'invalid', 'input[0].content[0].file_data');
  });

  it('refuses a system message after the conversation started, as the chat reader does', () => {
    refusedAt(read({}, [user('a'), { role: 'developer', content: 'b' }]), 'unsupported', 'input[1].role');
  });

  it('maps function tools and refuses every other tool type at tools[i].type', () => {
    const req = ok({
      tools: [{ type: 'function', name: 'weather', description: 'Weather', parameters: { type: 'object' }, strict: true }],
      tool_choice: { type: 'function', name: 'weather' },
      parallel_tool_calls: false,
    });
    assert.deepEqual(req.tools, [{ name: 'weather', description: 'Weather', inputSchema: { type: 'object' }, strict: true }]);
    assert.deepEqual(req.toolChoice, { type: 'tool', name: 'weather' });
    assert.equal(req.parallelToolCalls, false);
    for (const type of [
      'web_search',
      'web_search_preview',
      'file_search',
      'code_interpreter',
      'computer_use_preview',
      'image_generation',
      'local_shell',
      'mcp',
      'custom',
    ]) {
      refusedAt(read({ tools: [{ type: 'function', name: 'f' }, { type }] }), 'unsupported', 'tools[1].type');
    }
    assert.deepEqual(ok({ tool_choice: 'required' }).toolChoice, { type: 'any' });
    refusedAt(read({ tool_choice: { type: 'web_search_preview' } }), 'unsupported', 'tool_choice');
  });

  it('reads text.format json_schema as structured output, text as nothing, and refuses json_object', () => {
    const req = ok({ text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } } });
    assert.deepEqual(req.responseFormat, { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true });
    assert.equal(ok({ text: { format: { type: 'text' } } }).responseFormat, undefined);
    refusedAt(read({ text: { format: { type: 'json_object' } } }), 'unsupported', 'text.format.type');
    assert.deepEqual(ok({ text: { verbosity: 'low' } }).dropped, ['text.verbosity']);
  });

  it('reads reasoning.effort as the canonical effort; none asks for nothing', () => {
    assert.deepEqual(ok({ reasoning: { effort: 'high', summary: 'auto' } }).reasoning, { effort: 'high', budgetTokens: null });
    assert.equal(ok({ reasoning: { effort: 'none' } }).reasoning, undefined);
    refusedAt(read({ reasoning: { effort: 'max' } }), 'invalid', 'reasoning.effort');
  });

  it('maps the sampling settings, the output limit, the stream flag and the end user', () => {
    const req = ok({ max_output_tokens: 99, temperature: 0.5, top_p: 0.9, stream: true, safety_identifier: 'u1' });
    assert.deepEqual([req.maxOutputTokens, req.temperature, req.topP, req.stream, req.user], [99, 0.5, 0.9, true, 'u1']);
    assert.equal(ok({ user: 'u2' }).user, 'u2');
  });

  it('refuses background and stored prompts by their field', () => {
    refusedAt(read({ background: true }), 'unsupported', 'background');
    refusedAt(read({ prompt: { id: 'pmpt_1' } }), 'unsupported', 'prompt');
    assert.ok(read({ background: false }).ok);
  });

  it('drops the logprobs include and ignores the other include values', () => {
    assert.deepEqual(ok({ include: ['message.output_text.logprobs', 'reasoning.encrypted_content'] }).dropped, [
      'include.message.output_text.logprobs',
    ]);
    assert.deepEqual(ok({ include: ['reasoning.encrypted_content', 'file_search_call.results'] }).dropped, []);
  });

  it("takes the gateway's and echo-only fields without listing them", () => {
    const req = ok({
      metadata: { k: 'v' },
      store: true,
      previous_response_id: 'resp_0',
      conversation: 'conv_1',
      truncation: 'auto',
      stream_options: { include_obfuscation: false },
      service_tier: 'flex',
      prompt_cache_key: 'k',
      input: 'not read',
    });
    assert.deepEqual(req.dropped, []);
    assert.deepEqual(req.messages, []);
  });

  it('refuses a field the table does not name', () => {
    refusedAt(read({ frobnicate: 1 }), 'unsupported', 'frobnicate');
  });
});

describe('a Responses API request written for each provider protocol', () => {
  const request = ok(
    {
      instructions: 'Be brief.',
      tools: [{ type: 'function', name: 'weather', parameters: { type: 'object' } }],
      parallel_tool_calls: false,
      safety_identifier: 'u1',
      reasoning: { effort: 'low' },
    },
    [
      user([
        { type: 'input_text', text: 'Read this' },
        { type: 'input_file', file_data: 'data:application/pdf;base64,JVBE', filename: 'report.v2.pdf' },
      ]),
    ],
  );

  it('OpenAI chat completions: a file part with its data URL', () => {
    const w = canonicalToOpenaiRequest(request);
    assert.ok(w.ok);
    const messages = w.value.body.messages as Record<string, unknown>[];
    assert.deepEqual(messages[1]?.content, [
      { type: 'text', text: 'Read this' },
      { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBE', filename: 'report.v2.pdf' } },
    ]);
    assert.equal(w.value.body.reasoning_effort, 'low');
  });

  it('Anthropic: a document block, titled by the file name', () => {
    const w = canonicalToAnthropicRequest(request, { client: 'responses' });
    assert.ok(w.ok);
    const messages = w.value.body.messages as { content: unknown[] }[];
    assert.deepEqual(messages[0]?.content[1], {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' },
      title: 'report.v2.pdf',
    });
  });

  it('Gemini: inline data, with the dropped fields named as a Responses client sent them', () => {
    const w = canonicalToGeminiRequest(request, { client: 'responses' });
    assert.ok(w.ok);
    const contents = w.value.body.contents as { parts: unknown[] }[];
    assert.deepEqual(contents[0]?.parts[1], { inlineData: { mimeType: 'application/pdf', data: 'JVBE' } });
    assert.deepEqual(w.value.dropped, ['parallel_tool_calls', 'user']);
  });

  it('Bedrock: a document with its format and a name Converse accepts; reasoning for a non-Claude model listed as reasoning', () => {
    const w = canonicalToBedrockRequest({ ...request, model: 'amazon.nova-pro-v1:0' }, { client: 'responses' });
    assert.ok(w.ok);
    const messages = w.value.body.messages as { content: unknown[] }[];
    assert.deepEqual(messages[0]?.content[1], { document: { format: 'pdf', name: 'report-v2', source: { bytes: 'JVBE' } } });
    assert.deepEqual(w.value.dropped, ['reasoning', 'parallel_tool_calls', 'user']);
  });

  it('refuses a file by URL where the provider takes files inline only', () => {
    const byUrl = ok({}, [user([{ type: 'input_file', file_url: 'https://x/a.pdf' }])]);
    assert.equal(canonicalToOpenaiRequest(byUrl).ok, false);
    assert.equal(canonicalToGeminiRequest(byUrl, { client: 'responses' }).ok, false);
    assert.equal(canonicalToBedrockRequest(byUrl, { client: 'responses' }).ok, false);
    const anthropic = canonicalToAnthropicRequest(byUrl);
    assert.ok(anthropic.ok);
    assert.deepEqual((anthropic.value.body.messages as { content: unknown[] }[])[0]?.content[0], {
      type: 'document',
      source: { type: 'url', url: 'https://x/a.pdf' },
    });
  });
});

describe('the responses rows of the translation policy', () => {
  it('has a row for every field in every direction, towards all four provider protocols', () => {
    const fields = (to: string) =>
      TRANSLATION_POLICY.filter((r) => r.from === 'responses' && r.to === to)
        .map((r) => r.field)
        .sort();
    for (const to of ['anthropic', 'gemini', 'bedrock']) assert.deepEqual(fields(to), fields('openai'), to);
  });

  it('names each top-level field the reader drops or refuses as the table says', () => {
    const samples: Record<string, unknown> = {
      prompt_cache_retention: '24h',
      prompt_cache_options: { ttl: '24h' },
      context_management: [{ type: 'compaction' }],
      moderation: { model: 'omni-moderation-latest' },
      max_tool_calls: 3,
      top_logprobs: 2,
      background: true,
      prompt: { id: 'p' },
    };
    for (const rule of TRANSLATION_POLICY.filter(
      (r) => r.from === 'responses' && r.to === 'openai' && r.outcome !== 'mapped' && !r.field.includes('.'),
    )) {
      assert.ok(Object.hasOwn(samples, rule.field), `add a sample value for ${rule.field}`);
      const t = read({ [rule.field]: samples[rule.field] });
      if (rule.outcome === 'dropped') assert.ok(t.ok && t.value.dropped.includes(rule.field), rule.field);
      else refusedAt(t, 'unsupported', rule.field);
    }
  });
});

describe('the canonical answer as a Response object', () => {
  const answer: CanonicalResponse = {
    id: 'up_1',
    model: 'claude-x',
    content: [
      { type: 'thinking', text: 'Let me ', signature: 's' },
      { type: 'thinking', text: 'see.', signature: 's' },
      { type: 'text', text: 'Calling ' },
      { type: 'text', text: 'now.' },
      { type: 'tool_call', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } },
    ],
    stopReason: 'tool_use',
    usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 60 },
  };

  it('gives reasoning, message and function_call items with gateway ids and the upstream call id', () => {
    const obj = canonicalToResponsesObject(answer, shapeFor(), 1700000005);
    assert.deepEqual(obj.output, [
      { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Let me see.' }] },
      {
        id: 'msg_2',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Calling now.', annotations: [], logprobs: [] }],
      },
      { id: 'fc_3', type: 'function_call', status: 'completed', call_id: 'toolu_1', name: 'weather', arguments: '{"city":"Oslo"}' },
    ]);
    assert.equal(obj.status, 'completed');
    assert.equal(obj.completed_at, 1700000005);
    assert.equal(obj.object, 'response');
    assert.equal(obj.id, 'resp_1');
    assert.equal(obj.model, 'gpt-x');
    assert.equal(Object.hasOwn(obj, 'output_text'), false);
  });

  it('reports usage with cached tokens and no reasoning tokens, which round-trips', () => {
    const obj = canonicalToResponsesObject(answer, shapeFor());
    assert.deepEqual(obj.usage, {
      input_tokens: 100,
      input_tokens_details: { cached_tokens: 60, cache_write_tokens: 0 },
      output_tokens: 20,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 120,
    });
    assert.deepEqual(usageFromResponses(usageToResponses(answer.usage)), answer.usage);
  });

  it('is incomplete, and says why, when the answer hit its limit or a content filter', () => {
    const cut = canonicalToResponsesObject({ ...answer, content: [{ type: 'text', text: 'Part' }], stopReason: 'max_tokens' }, shapeFor());
    assert.equal(cut.status, 'incomplete');
    assert.deepEqual(cut.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(cut.completed_at, null);
    assert.equal((cut.output as { status: string }[])[0]?.status, 'incomplete');
    const filtered = canonicalToResponsesObject({ ...answer, stopReason: 'content_filter' }, shapeFor());
    assert.deepEqual(filtered.incomplete_details, { reason: 'content_filter' });
  });

  it("echoes the request's settings, with the API's defaults for those left out", () => {
    const obj = canonicalToResponsesObject(
      answer,
      shapeFor({ temperature: 0.2, metadata: { k: 'v' }, text: { format: { type: 'text' } } }),
    );
    assert.equal(obj.temperature, 0.2);
    assert.deepEqual(obj.metadata, { k: 'v' });
    assert.equal(obj.top_p, 1);
    assert.equal(obj.tool_choice, 'auto');
    assert.deepEqual(obj.tools, []);
    assert.equal(obj.parallel_tool_calls, true);
    assert.equal(obj.instructions, null);
    assert.deepEqual(obj.reasoning, { effort: null, summary: null });
    assert.deepEqual(obj.text, { format: { type: 'text' }, verbosity: 'medium' });
    assert.equal(obj.truncation, 'disabled');
    assert.equal(obj.store, true);
    assert.equal(Object.hasOwn(obj, 'user'), false);
  });
});
