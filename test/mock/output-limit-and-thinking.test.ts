import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import type { ConverseStreamOutput } from '@aws-sdk/client-bedrock-runtime';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

// Two knobs a gateway test turns on the mock: an output limit (`x-mock-max-tokens`) that stops
// a text answer as each provider reports a cap reached, and Claude's extended thinking on
// Bedrock. Driven by each provider's own SDK, so the stop reasons are ones the SDKs know.

const limit = { 'x-mock-max-tokens': '2' };

describe('mock provider: x-mock-max-tokens stops a text answer as each protocol reports it', () => {
  let mock: MockProvider;
  before(async () => {
    mock = await startMockProvider({ name: 'east', streamChunks: 3 });
  });
  after(() => mock?.close());

  it('chat completions: finish_reason length with the text cut at 4 characters a token, plain and streamed', async () => {
    const openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: limit });
    const plain = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(plain.choices[0]?.finish_reason, 'length');
    assert.equal(plain.choices[0]?.message.content, 'Hello fr');
    const stream = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, 'Hello fr');
    assert.equal(finish, 'length');
  });

  it('without the header the whole greeting comes back, whatever max_tokens the request sets', async () => {
    const openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'unused', maxRetries: 0 });
    const plain = await openai.chat.completions.create({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(plain.choices[0]?.finish_reason, 'stop');
    assert.equal(plain.choices[0]?.message.content, 'Hello from east.');
  });

  it('Anthropic messages: stop_reason max_tokens, plain and streamed', async () => {
    const anthropic = new Anthropic({ baseURL: mock.origin, apiKey: 'unused', maxRetries: 0, defaultHeaders: limit });
    const body = { model: 'claude', max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
    const plain = await anthropic.messages.create(body);
    assert.equal(plain.stop_reason, 'max_tokens');
    assert.deepEqual(plain.content, [{ type: 'text', text: 'Hello fr' }]);
    const final = await anthropic.messages.stream(body).finalMessage();
    assert.equal(final.stop_reason, 'max_tokens');
    assert.deepEqual(
      final.content.map((b) => (b.type === 'text' ? b.text : b.type)),
      ['Hello fr'],
    );
  });

  it('Gemini: finishReason MAX_TOKENS', async () => {
    const genai = new GoogleGenAI({ apiKey: 'any', httpOptions: { baseUrl: mock.origin, headers: limit } });
    const res = await genai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
    assert.equal(res.candidates?.[0]?.finishReason, 'MAX_TOKENS');
    assert.equal(res.text, 'Hello fr');
  });

  it('Responses: status incomplete for max_output_tokens; a malformed header is a 400', async () => {
    const openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: limit });
    const res = await openai.responses.create({ model: 'm', input: 'hi' });
    assert.equal(res.status, 'incomplete');
    assert.equal(res.incomplete_details?.reason, 'max_output_tokens');
    assert.equal(res.output_text, 'Hello fr');
    const bad = await fetch(`${mock.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'x-mock-max-tokens': 'lots' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(bad.status, 400);
  });
});

describe('mock provider: Claude on Bedrock thinks when additionalModelRequestFields.thinking asks', () => {
  const AKID = 'AKIAMOCKBEDROCK00002';
  const SECRET = 'mock/secret+key/thinking0123456789abcdefg';
  let mock: MockProvider;
  let client: BedrockRuntimeClient;
  before(async () => {
    mock = await startMockProvider({ name: 'br', protocol: 'bedrock', awsAccessKeyId: AKID, awsSecretAccessKey: SECRET });
    client = new BedrockRuntimeClient({
      region: 'us-east-1',
      endpoint: mock.origin,
      credentials: { accessKeyId: AKID, secretAccessKey: SECRET },
      maxAttempts: 1,
    });
  });
  after(async () => {
    client?.destroy();
    await mock?.close();
  });

  const input = {
    modelId: 'anthropic.claude-sonnet-4-5-v1:0',
    messages: [{ role: 'user' as const, content: [{ text: 'hi' }] }],
    inferenceConfig: { maxTokens: 2000 },
    additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 1024 } },
  };

  it('a reasoning block with a signature comes before the text', async () => {
    const res = await client.send(new ConverseCommand(input));
    const content = res.output?.message?.content ?? [];
    assert.equal(content[0]?.reasoningContent?.reasoningText?.text, 'Thinking about it.');
    assert.ok((content[0]?.reasoningContent?.reasoningText?.signature ?? '') !== '');
    assert.equal(content[1]?.text, 'Hello from br.');
  });

  it('streamed, the reasoning deltas and their stop are block 0, the text block 1', async () => {
    const res = await client.send(new ConverseStreamCommand(input));
    const events: ConverseStreamOutput[] = [];
    for await (const event of res.stream ?? []) events.push(event);
    const deltas = events.flatMap((e) => (e.contentBlockDelta === undefined ? [] : [e.contentBlockDelta]));
    assert.equal(deltas[0]?.delta?.reasoningContent?.text, 'Thinking about it.');
    assert.ok((deltas[1]?.delta?.reasoningContent?.signature ?? '') !== '');
    assert.ok(deltas.slice(2).every((d) => d.contentBlockIndex === 1));
    assert.equal(
      deltas
        .slice(2)
        .map((d) => d.delta?.text ?? '')
        .join(''),
      'Hello from br.',
    );
  });
});
