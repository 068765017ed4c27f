import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  anthropicRequestToCanonical,
  type CanonicalRequest,
  canonicalToGeminiRequest,
  geminiErrorDetails,
  geminiResponseToCanonical,
  openaiRequestToCanonical,
  StreamTranslator,
  usageFromGemini,
} from '../../src/providers/index.js';

function canonical(body: Record<string, unknown>): CanonicalRequest {
  const read = openaiRequestToCanonical({ model: 'm', ...body });
  assert.ok(read.ok, read.ok ? '' : read.reason);
  return read.value;
}

function written(req: CanonicalRequest, client: 'openai' | 'anthropic' = 'openai') {
  const w = canonicalToGeminiRequest(req, { client });
  assert.ok(w.ok, w.ok ? '' : w.reason);
  return w.value;
}

describe('canonical -> Gemini request', () => {
  it('puts system messages in systemInstruction and names the assistant "model"', () => {
    const { body, dropped } = written(
      canonical({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello' },
          { role: 'user', content: 'Again' },
        ],
        max_tokens: 40,
        temperature: 1.5,
        top_p: 0.9,
        stop: ['END'],
      }),
    );
    assert.deepEqual(body, {
      contents: [
        { role: 'user', parts: [{ text: 'Hi' }] },
        { role: 'model', parts: [{ text: 'Hello' }] },
        { role: 'user', parts: [{ text: 'Again' }] },
      ],
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { maxOutputTokens: 40, temperature: 1.5, topP: 0.9, stopSequences: ['END'] },
    });
    assert.deepEqual(dropped, []);
  });

  it('writes tools, tool choice, calls and results, matching a result to its call by name', () => {
    const { body } = written(
      canonical({
        messages: [
          { role: 'user', content: 'Weather?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        ],
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'd', parameters: { type: 'object' } } }],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
      }),
    );
    assert.deepEqual(body.contents, [
      { role: 'user', parts: [{ text: 'Weather?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'sunny' } } }] },
    ]);
    assert.deepEqual(body.tools, [
      { functionDeclarations: [{ name: 'get_weather', description: 'd', parametersJsonSchema: { type: 'object' } }] },
    ]);
    assert.deepEqual(body.toolConfig, { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
  });

  it('sends a call back with the thoughtSignature its id carries', () => {
    const read = geminiResponseToCanonical({
      responseId: 'r1',
      candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'f', args: {} }, thoughtSignature: 'c2lnbmVk+/8=' }] } }],
    });
    assert.ok(read.ok);
    const call = read.value.content[0];
    assert.ok(call?.type === 'tool_call');
    assert.match(call.id, /^[A-Za-z0-9_-]+$/);
    const { body } = written({
      ...canonical({ messages: [{ role: 'user', content: 'x' }] }),
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'x' }] },
        { role: 'assistant', content: [call] },
        { role: 'user', content: [{ type: 'tool_result', toolCallId: call.id, content: [{ type: 'text', text: 'no' }], isError: true }] },
      ],
    });
    const contents = body.contents as { parts: Record<string, unknown>[] }[];
    assert.equal(contents[1]?.parts[0]?.thoughtSignature, 'c2lnbmVk+/8=');
    assert.deepEqual(contents[2]?.parts[0], { functionResponse: { name: 'f', response: { error: 'no' } } });
  });

  it('leaves out a turn with nothing left to send, which Gemini would refuse', () => {
    const { body } = written({
      ...canonical({ messages: [{ role: 'user', content: 'x' }] }),
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'a' }] },
        { role: 'assistant', content: [] },
        { role: 'user', content: [{ type: 'text', text: 'b' }] },
      ],
    });
    assert.deepEqual(body.contents, [{ role: 'user', parts: [{ text: 'a' }, { text: 'b' }] }]);
  });

  it('asks for JSON matching the schema, and thinking with its budget', () => {
    const { body } = written(
      canonical({
        messages: [{ role: 'user', content: 'x' }],
        response_format: { type: 'json_schema', json_schema: { name: 'r', schema: { type: 'object' } } },
        reasoning_effort: 'low',
      }),
    );
    assert.deepEqual(body.generationConfig, {
      responseMimeType: 'application/json',
      responseJsonSchema: { type: 'object' },
      thinkingConfig: { thinkingBudget: 2048, includeThoughts: true },
    });
  });

  it('sends a base64 image inline and is unable to send one by URL', () => {
    const image = (url: string) => canonical({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] });
    const { body } = written(image('data:image/png;base64,iVBORw0KGgo='));
    assert.deepEqual(body.contents, [{ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }] }]);
    const refused = canonicalToGeminiRequest(image('https://example.com/cat.png'), { client: 'openai' });
    assert.equal(refused.ok, false);
    if (!refused.ok) assert.deepEqual([refused.kind, refused.path], ['unsupported', 'messages[0].content[0]']);
  });

  it("lists what Gemini has no place for under the client's own field names", () => {
    const req = anthropicRequestToCanonical({
      model: 'm',
      max_tokens: 5,
      metadata: { user_id: 'u' },
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      tools: [{ name: 't', input_schema: { type: 'object' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' } }] }],
    });
    assert.ok(req.ok);
    assert.deepEqual(written(req.value, 'anthropic').dropped, ['tool_choice.disable_parallel_tool_use', 'metadata', 'cache_control']);
  });
});

describe('Gemini response -> canonical', () => {
  it('reads text, thoughts, a function call (stop reason tool_use) and the usage', () => {
    const read = geminiResponseToCanonical({
      responseId: 'resp-1',
      modelVersion: 'gemini-2.5-flash',
      candidates: [
        {
          content: {
            role: 'model',
            parts: [{ text: 'hmm', thought: true }, { text: 'Calling.' }, { functionCall: { name: 'f', args: { a: 1 } } }],
          },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: {
        promptTokenCount: 100,
        cachedContentTokenCount: 60,
        candidatesTokenCount: 7,
        thoughtsTokenCount: 5,
        totalTokenCount: 112,
      },
    });
    assert.ok(read.ok);
    assert.equal(read.value.stopReason, 'tool_use');
    assert.deepEqual(
      read.value.content.map((p) => p.type),
      ['thinking', 'text', 'tool_call'],
    );
    assert.deepEqual(read.value.usage, { inputTokens: 100, outputTokens: 12, cacheReadTokens: 60 });
  });

  it('maps finish reasons: MAX_TOKENS, SAFETY, and a blocked prompt', () => {
    const stop = (body: Record<string, unknown>) => {
      const read = geminiResponseToCanonical(body);
      assert.ok(read.ok);
      return read.value.stopReason;
    };
    assert.equal(stop({ candidates: [{ content: { parts: [{ text: 'a' }] }, finishReason: 'MAX_TOKENS' }] }), 'max_tokens');
    assert.equal(stop({ candidates: [{ finishReason: 'SAFETY' }] }), 'content_filter');
    assert.equal(stop({ promptFeedback: { blockReason: 'SAFETY' } }), 'content_filter');
    assert.equal(geminiResponseToCanonical({}).ok, false);
  });

  it('has no usage without a prompt count', () => {
    assert.equal(usageFromGemini({ candidatesTokenCount: 3 }), null);
    assert.deepEqual(usageFromGemini({ promptTokenCount: 3 }), { inputTokens: 3, outputTokens: 0 });
  });

  it("reads an error's reason and RetryInfo delay", () => {
    const body = JSON.stringify({
      error: {
        code: 429,
        message: 'quota',
        status: 'RESOURCE_EXHAUSTED',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'RATE_LIMIT_EXCEEDED' },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '6.2s' },
        ],
      },
    });
    assert.deepEqual(geminiErrorDetails(body), { status: 'RESOURCE_EXHAUSTED', reason: 'RATE_LIMIT_EXCEEDED', retryDelaySeconds: 7 });
    assert.deepEqual(geminiErrorDetails('nope'), { status: null, reason: null, retryDelaySeconds: null });
  });
});

function geminiSse(chunks: Record<string, unknown>[]): string {
  return chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join('');
}

const streamed = geminiSse([
  {
    responseId: 'r9',
    modelVersion: 'gemini-2.5-flash',
    candidates: [{ content: { role: 'model', parts: [{ text: 'plan', thought: true }] } }],
  },
  { responseId: 'r9', candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] } }], usageMetadata: { promptTokenCount: 9 } },
  {
    responseId: 'r9',
    candidates: [{ content: { role: 'model', parts: [{ text: 'lo' }] }, finishReason: 'STOP' }],
    usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 2, thoughtsTokenCount: 3, totalTokenCount: 14 },
  },
]);

describe('a Gemini stream, translated', () => {
  it('to OpenAI chunks, with the usage chunk and [DONE]', () => {
    const t = new StreamTranslator({ from: 'gemini', to: 'openai', includeUsage: true });
    // Split anywhere: mid-event and mid-character.
    const out = t.push(streamed.slice(0, 37)) + t.push(streamed.slice(37)) + t.end();
    const datas = out
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => e.slice(6));
    assert.equal(datas.at(-1), '[DONE]');
    const chunks = datas.slice(0, -1).map((d) => JSON.parse(d));
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    const reasoning = chunks.map((c) => c.choices[0]?.delta?.reasoning_content ?? '').join('');
    assert.equal(text, 'Hello');
    assert.equal(reasoning, 'plan');
    assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1).usage.completion_tokens, 5);
    assert.deepEqual(t.usage, { inputTokens: 9, outputTokens: 5 });
    assert.equal(t.complete, true);
  });

  it('to Anthropic events, a function call as a tool_use block', () => {
    const t = new StreamTranslator({ from: 'gemini', to: 'anthropic' });
    const sse = geminiSse([
      {
        responseId: 'r2',
        candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: { q: 'x' } } }] }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 6 },
      },
    ]);
    const out = t.push(sse) + t.end();
    assert.match(out, /"content_block":\{"type":"tool_use","id":"call_r20","name":"f"/);
    assert.match(out, /"partial_json":"\{\\"q\\":\\"x\\"\}"/);
    assert.match(out, /"stop_reason":"tool_use"/);
    assert.match(out, /event: message_stop/);
  });

  it('that ends before a finishReason ends with the error event', () => {
    const t = new StreamTranslator({ from: 'gemini', to: 'anthropic' });
    const out = t.push(geminiSse([{ candidates: [{ content: { parts: [{ text: 'a' }] } }] }])) + t.end();
    assert.match(out, /event: error/);
  });
});
