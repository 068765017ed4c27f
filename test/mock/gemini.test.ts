import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ApiError, GoogleGenAI, Type } from '@google/genai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

// The mock's Gemini API, with Google's own SDK as its client: if the SDK reads every answer
// (and its errors) as it reads Google's, the mock is a faithful stand-in for the gateway's tests.

const KEY = 'AIza-mock-key-0123456789';
let mock: MockProvider;
let ai: GoogleGenAI;

const weather = {
  name: 'get_weather',
  description: 'Current weather',
  parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

before(async () => {
  mock = await startMockProvider({ name: 'gem', apiKey: KEY });
  ai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: mock.origin } });
});
after(() => mock.close());
beforeEach(() => mock.reset());

describe('the mock Gemini API, through @google/genai', () => {
  it('answers generateContent with text and usageMetadata, the key in x-goog-api-key', async () => {
    const res = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi there' });
    assert.equal(res.text, 'Hello from gem.');
    assert.equal(res.candidates?.[0]?.finishReason, 'STOP');
    const usage = res.usageMetadata;
    assert.ok(usage !== undefined && typeof usage.promptTokenCount === 'number' && typeof usage.candidatesTokenCount === 'number');
    assert.equal(usage.totalTokenCount, usage.promptTokenCount + usage.candidatesTokenCount);
    const seen = mock.stats().recent.at(-1);
    assert.equal(seen?.path, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(seen?.headers['x-goog-api-key'], KEY);
  });

  it('streams with generateContentStream (alt=sse), the whole usage in the last chunk', async () => {
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Hi' });
    let text = '';
    let last: Awaited<ReturnType<typeof ai.models.generateContent>> | undefined;
    for await (const chunk of stream) {
      text += chunk.text ?? '';
      last = chunk;
    }
    assert.equal(text, 'Hello from gem.');
    assert.equal(last?.candidates?.[0]?.finishReason, 'STOP');
    assert.ok((last?.usageMetadata?.candidatesTokenCount ?? 0) > 0);
    assert.match(mock.stats().recent.at(-1)?.path ?? '', /:streamGenerateContent$/);
  });

  it('calls a function when asked to use a tool, then answers its result', async () => {
    const config = { tools: [{ functionDeclarations: [weather] }] };
    const first = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Use the tool for Oslo', config });
    const call = first.functionCalls?.[0];
    assert.equal(call?.name, 'get_weather');
    assert.equal(typeof call?.args?.city, 'string');
    const second = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      config,
      contents: [
        { role: 'user', parts: [{ text: 'Use the tool for Oslo' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: call?.args ?? {} } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'sunny, 21C' } } }] },
      ],
    });
    assert.equal(second.text, 'Hello from gem. The tool said: sunny, 21C');
  });

  it('forces a function with mode ANY and allowedFunctionNames', async () => {
    const res = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'hello',
      config: {
        tools: [{ functionDeclarations: [{ name: 'other', parametersJsonSchema: { type: 'object' } }, weather] }],
        toolConfig: { functionCallingConfig: { mode: 'ANY' as never, allowedFunctionNames: ['get_weather'] } },
      },
    });
    assert.equal(res.functionCalls?.[0]?.name, 'get_weather');
  });

  it('answers JSON matching responseSchema (Gemini types) or responseJsonSchema', async () => {
    const res = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'A city, please',
      config: {
        responseMimeType: 'application/json',
        responseSchema: {
          type: Type.OBJECT,
          properties: { city: { type: Type.STRING }, rank: { type: Type.INTEGER } },
          required: ['city', 'rank'],
        },
      },
    });
    const value = JSON.parse(res.text ?? '') as { city: unknown; rank: unknown };
    assert.equal(typeof value.city, 'string');
    assert.ok(Number.isInteger(value.rank));
    const json = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'x',
      config: {
        responseMimeType: 'application/json',
        responseJsonSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
      },
    });
    assert.equal(typeof (JSON.parse(json.text ?? '') as { ok: unknown }).ok, 'boolean');
  });

  it('thinks when thinkingConfig.includeThoughts: a thought part, thoughtsTokenCount, a signed function call', async () => {
    const res = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Use the tool',
      config: { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 }, tools: [{ functionDeclarations: [weather] }] },
    });
    const parts = res.candidates?.[0]?.content?.parts ?? [];
    assert.equal(parts[0]?.thought, true);
    assert.ok(typeof parts[1]?.thoughtSignature === 'string' && parts[1].thoughtSignature !== '');
    assert.ok((res.usageMetadata?.thoughtsTokenCount ?? 0) > 0);
  });

  it('refuses a wrong key with 400 API_KEY_INVALID, as Google does', async () => {
    const wrong = new GoogleGenAI({ apiKey: 'AIza-wrong', httpOptions: { baseUrl: mock.origin } });
    await assert.rejects(wrong.models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 400);
      assert.match(err.message, /API_KEY_INVALID/);
      return true;
    });
  });

  it("answers a status fault in Gemini's error shape: a 429 is RESOURCE_EXHAUSTED with RetryInfo", async () => {
    mock.addFault({ mode: 'status', status: 429, count: 1 });
    const res = await fetch(`${mock.origin}/v1beta/models/m:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': KEY },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] }),
    });
    assert.equal(res.status, 429);
    const body = (await res.json()) as { error: { code: number; status: string; details: { retryDelay?: string }[] } };
    assert.equal(body.error.code, 429);
    assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
    assert.equal(body.error.details[0]?.retryDelay, '1s');
  });

  it('cuts a stream after_chunks chunks in (cut_stream)', async () => {
    mock.addFault({ mode: 'cut_stream', after_chunks: 2, count: 1 });
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Hi' });
    let chunks = 0;
    await assert.rejects(async () => {
      for await (const _ of stream) chunks++;
    });
    assert.equal(chunks, 2);
  });

  it('refuses a request without contents with 400 INVALID_ARGUMENT', async () => {
    const res = await fetch(`${mock.origin}/v1beta/models/m:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': KEY },
      body: '{}',
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
  });
});
