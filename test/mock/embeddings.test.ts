import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';

let mock: MockProvider;
let openai: OpenAI;

function cosine(a: readonly number[], b: readonly number[]): number {
  assert.equal(a.length, b.length);
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += (a[i] as number) * (b[i] as number);
  return dot;
}

/** The cosine of two texts as the openai SDK reads their vectors (base64 on the wire, its default). */
async function similarity(a: string, b: string): Promise<number> {
  const res = await openai.embeddings.create({ model: 'text-embedding-3-small', input: [a, b] });
  return cosine(res.data[0]?.embedding ?? [], res.data[1]?.embedding ?? []);
}

describe('mock provider: embeddings', () => {
  before(async () => {
    mock = await startMockProvider({ name: 'emb' });
    openai = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'sk-mock', maxRetries: 0 });
  });
  after(() => mock.close());
  beforeEach(() => mock.reset());

  it('the openai SDK reads deterministic unit vectors of 256 dimensions, one per input, with prompt_tokens', async () => {
    const a = await openai.embeddings.create({ model: 'text-embedding-3-small', input: ['hello world', 'x'.repeat(40)] });
    assert.equal(a.object, 'list');
    assert.equal(a.data.length, 2);
    assert.deepEqual(
      a.data.map((d) => d.index),
      [0, 1],
    );
    assert.equal(a.data[0]?.embedding.length, 256);
    for (const d of a.data) {
      const norm = Math.hypot(...d.embedding);
      assert.ok(Math.abs(norm - 1) < 1e-5, `unit length, got ${norm}`);
    }
    assert.deepEqual(a.usage, { prompt_tokens: 3 + 10, total_tokens: 13 });
    const b = await openai.embeddings.create({ model: 'text-embedding-3-small', input: 'hello world' });
    assert.deepEqual(b.data[0]?.embedding, a.data[0]?.embedding, 'same text, same vector');
    assert.notDeepEqual(a.data[1]?.embedding, a.data[0]?.embedding);
  });

  it('float encoding and dimensions are honoured, and match the base64 vectors', async () => {
    const res = await fetch(`${mock.baseUrl}/embeddings`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', input: 'hello world', dimensions: 256, encoding_format: 'float' }),
    });
    const body = (await res.json()) as { data: { embedding: number[] }[] };
    const viaSdk = await openai.embeddings.create({ model: 'm', input: 'hello world' });
    assert.deepEqual(body.data[0]?.embedding, viaSdk.data[0]?.embedding);
    const narrow = await openai.embeddings.create({ model: 'm', input: 'hello world', dimensions: 16 });
    assert.equal(narrow.data[0]?.embedding.length, 16);
    assert.ok(Math.abs(Math.hypot(...(narrow.data[0]?.embedding ?? [])) - 1) < 1e-5);
  });

  it('a question reordered, recased or repunctuated scores at least 0.95 against the original', async () => {
    const question = 'What is the capital of France?';
    for (const paraphrase of [
      'what is THE capital of france',
      'The capital of France: what is it?',
      'France -- capital of the what is?!',
      "What's the capital of France?",
    ]) {
      const score = await similarity(question, paraphrase);
      assert.ok(score >= 0.95, `"${paraphrase}" scored ${score}`);
    }
    assert.ok((await similarity('Wie heißt die Hauptstadt?', 'die HAUPTSTADT, wie heißt?')) > 0.999, 'letters beyond ASCII are words too');
  });

  it('different questions score below 0.8, even when they share their common words', async () => {
    const pairs: Array<[string, string]> = [
      ['What is the capital of France?', 'What is the boiling point of water?'],
      ['What is the capital of France?', 'What is the capital of Germany?'],
      ['How do I reverse a list in Python?', 'How do I sort a list in Python?'],
      ['What is the speed of light?', 'What is the speed of sound?'],
      ['Who wrote Hamlet?', 'Who painted the Mona Lisa?'],
      ['Why is the sky blue?', 'Why is the sea salty?'],
      ['How tall is Mount Everest?', 'How old is the universe?'],
    ];
    for (const [a, b] of pairs) {
      const score = await similarity(a, b);
      assert.ok(score < 0.8, `"${a}" / "${b}" scored ${score}`);
    }
  });

  it('token arrays embed by their tokens, in any order; a text without words still gets a unit vector', async () => {
    const res = await openai.embeddings.create({
      model: 'm',
      input: [
        [101, 2054, 2003],
        [2003, 101, 2054],
        [7, 8, 9],
      ],
    });
    const [a, b, c] = res.data.map((d) => d.embedding);
    assert.deepEqual(a, b);
    assert.ok(cosine(a ?? [], c ?? []) < 0.8);
    assert.deepEqual(res.usage, { prompt_tokens: 9, total_tokens: 9 });
    const blank = await openai.embeddings.create({ model: 'm', input: ['?!', '...'] });
    for (const d of blank.data) assert.ok(Math.abs(Math.hypot(...d.embedding) - 1) < 1e-5);
    assert.notDeepEqual(blank.data[0]?.embedding, blank.data[1]?.embedding);
  });

  it('bad input answers 400; faults apply', async () => {
    const res = await fetch(`${mock.baseUrl}/embeddings`, { method: 'POST', body: JSON.stringify({ model: 'm', input: [] }) });
    assert.equal(res.status, 400);
    mock.addFault({ mode: 'status', status: 503, count: 1 });
    await assert.rejects(
      openai.embeddings.create({ model: 'm', input: 'a' }),
      (err: unknown) => err instanceof OpenAI.APIError && err.status === 503,
    );
    assert.equal(mock.stats().requests['POST /v1/embeddings'], 2);
  });
});
