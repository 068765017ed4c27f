import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { seededRandom } from '../../src/routing/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';

// A property of masking with restore, through a real gateway: for random texts with planted
// values, streamed back by the model in pieces that cut anywhere (placeholders included),
// the upstream never sees a planted value, and the client's text is exactly what an
// unmasked run gives (the model repeats what it was sent).

const PLANTED = [
  'ada@example.com',
  'b.c+tag@mail.example.org',
  '4111 1111 1111 1111',
  '5500-0000-0000-0004',
  'GB82 WEST 1234 5698 7654 32',
  'DE89370400440532013000',
  '+1 415 555 2671',
  '10.20.30.40',
];
const WORDS = ['the', 'card', 'is', 'mail', 'me', 'at', 'or', 'pay', 'via', 'ok', '<', '>', 'value', 'EMAIL', '_1', 'and'];
const CHUNKS = [2, 5, 11, 23, 47];

let mock: MockProvider;
let gw: GatewayProcess;
let client: OpenAI;

before(async () => {
  mock = await startMockProvider({ name: 'm', port: 0 });
  const providers: Record<string, unknown> = {};
  const routes: Record<string, unknown> = {};
  for (const n of CHUNKS) {
    // The mock cuts its answer into n pieces of near-equal length: the cuts fall anywhere.
    providers[`p${n}`] = { type: 'openai', base_url: mock.baseUrl, timeout_ms: 5000, headers: { 'x-mock-chunks': String(n) } };
    routes[`r${n}`] = { guardrails: { input: ['pii'] }, candidates: [{ provider: `p${n}`, model: 'gpt-4o-mini' }] };
    routes[`u${n}`] = { candidates: [{ provider: `p${n}`, model: 'gpt-4o-mini' }] };
  }
  gw = await startGatewayProcess({
    server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    providers,
    guardrails: { pii: { type: 'pii', action: 'mask', restore: true } },
    routing: { routes },
  });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 10_000 });
});

after(async () => {
  await gw?.stop();
  await mock?.close();
});

function randomText(random: () => number): { text: string; planted: string[] } {
  const parts: string[] = [];
  const planted: string[] = [];
  const n = 4 + Math.floor(random() * 10);
  for (let i = 0; i < n; i++) {
    if (random() < 0.35) {
      const value = PLANTED[Math.floor(random() * PLANTED.length)] as string;
      planted.push(value);
      parts.push(value);
    } else parts.push(WORDS[Math.floor(random() * WORDS.length)] as string);
  }
  return { text: parts.join(' '), planted };
}

async function streamed(model: string, content: string): Promise<string> {
  const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content }], stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  return text;
}

describe('masking with restore, as a property', { timeout: 120_000 }, () => {
  it('the upstream never sees a planted value, and the client gets what an unmasked run gives', async () => {
    const random = seededRandom(41);
    for (let run = 0; run < 40; run++) {
      const { text, planted } = randomText(random);
      const n = CHUNKS[run % CHUNKS.length] as number;
      const before = mock.stats().recent.length;
      const restored = await streamed(`r${n}`, `say: ${text}`);
      const seen = mock
        .stats()
        .recent.slice(before)
        .map((r) => r.body)
        .join('\n');
      for (const value of planted) assert.ok(!seen.includes(value), `run ${run}: the upstream saw ${value}`);
      const unmasked = await streamed(`u${n}`, `say: ${text}`);
      assert.equal(restored, unmasked, `run ${run} (${n} pieces): ${text}`);
      assert.equal(restored, text);
    }
  });
});
