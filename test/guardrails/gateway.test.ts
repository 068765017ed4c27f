import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';

// Guardrails through a real gateway, with the official clients: what the upstream sees, what
// the client gets, in both protocols, same-protocol and translated, plain and streamed.

const CARD = '4111 1111 1111 1111';
const EMAIL = 'ada@example.com';
const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';
const SEP = '\u241f';

let mock: MockProvider;
let gw: GatewayProcess;
let openai: OpenAI;
let anthropic: Anthropic;

function route(provider: string, guardrails: Record<string, string[]>): Record<string, unknown> {
  return { guardrails, candidates: [{ provider, model: 'gpt-4o-mini' }] };
}

before(async () => {
  mock = await startMockProvider({ name: 'm', port: 0 });
  const providers = {
    oai: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 5000 },
    anth: { type: 'anthropic', base_url: mock.baseUrl, timeout_ms: 5000 },
  };
  gw = await startGatewayProcess({
    server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    providers,
    guardrails: {
      secrets: { type: 'secrets', action: 'block' },
      pii: { type: 'pii', action: 'mask', restore: true },
      pii_out: { type: 'pii', action: 'mask' },
      deny_window: { type: 'regex', patterns: ['(?i)forbidden'], action: 'block', stream: 'window', window_chars: 40 },
      deny_hold: { type: 'regex', patterns: ['(?i)forbidden'], action: 'block', stream: 'hold' },
      deny_after: { type: 'regex', patterns: ['(?i)forbidden'], action: 'block', stream: 'after' },
    },
    routing: {
      routes: {
        masked: route('oai', { input: ['secrets', 'pii'] }),
        'masked-claude': route('anth', { input: ['secrets', 'pii'] }),
        'out-masked': route('oai', { output: ['pii_out'] }),
        'out-masked-claude': route('anth', { output: ['pii_out'] }),
        window: route('oai', { output: ['deny_window'] }),
        'window-claude': route('anth', { output: ['deny_window'] }),
        hold: route('oai', { output: ['deny_hold'] }),
        after: route('oai', { output: ['deny_after'] }),
        plain: route('oai', {}),
      },
    },
  });
  openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 10_000 });
  anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'none', maxRetries: 0, timeout: 10_000 });
});

after(async () => {
  await gw?.stop();
  await mock?.close();
});

/** The bodies the mock received since `from`. */
function upstreamBodies(from: number): string[] {
  return mock
    .stats()
    .recent.slice(from)
    .map((r) => r.body);
}

async function streamText(model: string, content: string): Promise<{ text: string; finish: string | null; chunks: number }> {
  const stream = await openai.chat.completions.create({ model, messages: [{ role: 'user', content }], stream: true });
  let text = '';
  let finish: string | null = null;
  let chunks = 0;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c?.delta?.content) {
      text += c.delta.content;
      chunks += 1;
    }
    if (c?.finish_reason) finish = c.finish_reason;
  }
  return { text, finish, chunks };
}

describe('input guardrails', { timeout: 60_000 }, () => {
  it('an input block answers 400 content_filter in the OpenAI shape, naming the guardrail and category, and no upstream is called', async () => {
    const before = mock.stats().recent.length;
    await assert.rejects(
      openai.chat.completions.create({ model: 'masked', messages: [{ role: 'user', content: `my key is ${AWS_KEY}` }] }),
      (err: InstanceType<typeof OpenAI.APIError>) => {
        assert.equal(err.status, 400);
        assert.equal((err.error as { code?: string }).code, 'content_filter');
        assert.match(err.message, /guardrail secrets \(aws_access_key\)/);
        assert.ok(!err.message.includes(AWS_KEY), 'the matched text is never named');
        return true;
      },
    );
    assert.equal(mock.stats().recent.length, before, 'nothing reached the upstream');
  });

  it('an input block answers an Anthropic client in its own error shape', async () => {
    await assert.rejects(
      anthropic.messages.create({ model: 'masked-claude', max_tokens: 50, messages: [{ role: 'user', content: `key ${AWS_KEY}` }] }),
      (err: InstanceType<typeof Anthropic.APIError>) => {
        assert.equal(err.status, 400);
        const body = err.error as { type: string; error: { type: string; message: string } };
        assert.equal(body.type, 'error');
        assert.equal(body.error.type, 'invalid_request_error');
        assert.match(body.error.message, /guardrail secrets \(aws_access_key\)/);
        return true;
      },
    );
  });

  it('masking hides the values from the upstream and restore puts them back in the answer, plain', async () => {
    const before = mock.stats().recent.length;
    const answer = await openai.chat.completions.create({
      model: 'masked',
      messages: [{ role: 'user', content: `say: card ${CARD}, mail ${EMAIL}` }],
    });
    const seen = upstreamBodies(before).join('\n');
    assert.ok(!seen.includes(CARD) && !seen.includes(EMAIL), 'the upstream never saw the values');
    assert.match(seen, /<CREDIT_CARD_1>/);
    assert.match(seen, /<EMAIL_1>/);
    assert.equal(answer.choices[0]?.message.content, `card ${CARD}, mail ${EMAIL}`);
  });

  it('restore works in a stream, translated to an Anthropic upstream, with a placeholder split across chunks', async () => {
    const before = mock.stats().recent.length;
    // The mock repeats what it was sent, split where the ␟ stood: inside the placeholder.
    const r = await streamText('masked-claude', `say: card ${CARD} <CRE${SEP}DIT_CA${SEP}RD_1> end`);
    const seen = upstreamBodies(before).join('\n');
    assert.ok(!seen.includes(CARD.replaceAll(' ', '')) && !seen.includes(CARD));
    assert.equal(r.text, `card ${CARD} ${CARD} end`);
    assert.equal(r.finish, 'stop');
  });

  it('an Anthropic client, same protocol, streamed: masked upstream, restored answer', async () => {
    const stream = anthropic.messages.stream({
      model: 'masked-claude',
      max_tokens: 200,
      messages: [{ role: 'user', content: `say: write to ${EMAIL}${SEP} now` }],
    });
    const message = await stream.finalMessage();
    const text = message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    assert.equal(text, `write to ${EMAIL} now`);
  });
});

describe('output guardrails', { timeout: 60_000 }, () => {
  it('masks what the model writes itself, split across chunks at every offset', async () => {
    const digits = '4111111111111111';
    for (let cut = 1; cut < digits.length; cut++) {
      const said = `pay ${digits.slice(0, cut)}${SEP}${digits.slice(cut)} today`;
      const r = await streamText('out-masked', `say: ${said}`);
      assert.equal(r.text, 'pay <CREDIT_CARD_1> today', `cut at ${cut}`);
    }
  });

  it('masks a whole answer, plain, for an Anthropic client of a translated route', async () => {
    const message = await anthropic.messages.create({
      model: 'out-masked',
      max_tokens: 100,
      messages: [{ role: 'user', content: `say: reach me at ${EMAIL}` }],
    });
    assert.deepEqual(
      message.content.map((b) => (b.type === 'text' ? b.text : '')),
      ['reach me at <EMAIL_1>'],
    );
  });

  it('window: a block mid-stream ends the stream with finish_reason content_filter, after the windows that passed', async () => {
    const clean = 'a'.repeat(50);
    const r = await streamText('window', `say: ${clean}${SEP} more text${SEP} then forbidden words${SEP} and more`);
    assert.equal(r.finish, 'content_filter');
    assert.ok(!r.text.toLowerCase().includes('forbidden'), 'the blocked window was never sent');
    assert.ok(r.text.startsWith(clean), 'the window that passed was sent');
  });

  it('hold: nothing is sent before the whole answer is checked', async () => {
    const r = await streamText('hold', `say: hello${SEP} there${SEP} forbidden`);
    assert.equal(r.text, '');
    assert.equal(r.finish, 'content_filter');
    const ok = await streamText('hold', `say: hello${SEP} there`);
    assert.equal(ok.text, 'hello there');
    assert.equal(ok.finish, 'stop');
  });

  it('after: the answer is sent as it comes and ends normally; the block is only recorded', async () => {
    const r = await streamText('after', `say: hello${SEP} forbidden${SEP} words`);
    assert.equal(r.text, 'hello forbidden words');
    assert.equal(r.finish, 'stop');
  });

  it('a plain answer that is blocked ends with content_filter and no content', async () => {
    const answer = await openai.chat.completions.create({ model: 'window', messages: [{ role: 'user', content: 'say: forbidden' }] });
    assert.equal(answer.choices[0]?.finish_reason, 'content_filter');
    assert.equal(answer.choices[0]?.message.content, null);
  });

  it('Anthropic, a block mid-stream: stop_reason refusal', async () => {
    const stream = anthropic.messages.stream({
      model: 'window-claude',
      max_tokens: 300,
      messages: [{ role: 'user', content: `say: ${'b'.repeat(45)}${SEP} ok${SEP} forbidden` }],
    });
    const message = await stream.finalMessage();
    assert.equal(message.stop_reason, 'refusal');
    const text = message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    assert.ok(!text.includes('forbidden'));
  });

  it('a route without guardrails is untouched', async () => {
    const r = await streamText('plain', `say: ${CARD}${SEP} forbidden`);
    assert.equal(r.text, `${CARD} forbidden`);
  });
});

describe('every endpoint', { timeout: 60_000 }, () => {
  for (const model of ['masked', 'masked-claude']) {
    it(`Responses API, streamed (${model}): masked upstream, restored deltas, done events and final response agree`, async () => {
      const before = mock.stats().recent.length;
      const stream = await openai.responses.create({
        model,
        input: `say: card ${CARD}${SEP} and <CREDIT_CA${SEP}RD_1> again`,
        stream: true,
        store: false,
      });
      let deltas = '';
      let done = '';
      let final: OpenAI.Responses.Response | null = null;
      for await (const event of stream) {
        if (event.type === 'response.output_text.delta') deltas += event.delta;
        if (event.type === 'response.output_text.done') done = event.text;
        if (event.type === 'response.completed') final = event.response;
      }
      const seen = upstreamBodies(before).join('\n');
      assert.ok(!seen.includes(CARD), 'the upstream never saw the card');
      const want = `card ${CARD} and ${CARD} again`;
      assert.equal(deltas, want);
      assert.equal(done, want);
      assert.equal(final?.status, 'completed');
      const finalText = (final as OpenAI.Responses.Response | null)?.output
        .flatMap((i) => (i.type === 'message' ? i.content : []))
        .map((p) => (p.type === 'output_text' ? p.text : ''))
        .join('');
      assert.equal(finalText, want, 'the final response carries the restored text too');
    });
  }

  it('Responses API, plain: a blocked answer is incomplete with reason content_filter', async () => {
    const response = await openai.responses.create({ model: 'window', input: 'say: forbidden', store: false });
    assert.equal(response.status, 'incomplete');
    assert.equal(response.incomplete_details?.reason, 'content_filter');
    assert.equal(response.output_text, '');
  });

  it('Responses API, streamed: a block mid-stream ends with response.incomplete (content_filter)', async () => {
    const stream = await openai.responses.create({
      model: 'window',
      input: `say: ${'c'.repeat(45)}${SEP} fine${SEP} forbidden${SEP} rest`,
      stream: true,
      store: false,
    });
    let text = '';
    type Last = { type: string; response?: { status?: string; incomplete_details?: { reason?: string } | null } };
    let last = null as Last | null;
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      last = event as unknown as Last;
    }
    assert.equal(last?.type, 'response.incomplete');
    assert.equal(last?.response?.incomplete_details?.reason, 'content_filter');
    assert.ok(!text.includes('forbidden'));
  });

  it('legacy completions: the prompt is masked upstream and the completion restored', async () => {
    const before = mock.stats().recent.length;
    const completion = await openai.completions.create({ model: 'masked', prompt: `say: mail ${EMAIL}` });
    assert.ok(!upstreamBodies(before).join('').includes(EMAIL));
    assert.equal(completion.choices[0]?.text, `mail ${EMAIL}`);
  });

  it('embeddings: the input is masked before the upstream embeds it, and a secret blocks it', async () => {
    const before = mock.stats().recent.length;
    await openai.embeddings.create({ model: 'masked', input: [`mail ${EMAIL}`, 'plain'] });
    const seen = upstreamBodies(before).join('');
    assert.ok(!seen.includes(EMAIL));
    assert.match(seen, /mail <EMAIL_1>/);
    await assert.rejects(openai.embeddings.create({ model: 'masked', input: `k ${AWS_KEY}` }), { status: 400 });
  });
});

describe('what the gateway keeps', { timeout: 60_000 }, () => {
  for (const stream of [false, true]) {
    it(`a stored response is the one the client was given, masked (${stream ? 'streamed' : 'plain'})`, async () => {
      let id: string;
      if (stream) {
        const events = await openai.responses.create({ model: 'out-masked-claude', input: `say: mail ${EMAIL}`, stream: true });
        id = '';
        for await (const event of events) if (event.type === 'response.completed') id = event.response.id;
      } else {
        const response = await openai.responses.create({ model: 'out-masked-claude', input: `say: mail ${EMAIL}` });
        assert.equal(response.output_text, 'mail <EMAIL_1>');
        id = response.id;
      }
      const kept = await openai.responses.retrieve(id);
      assert.equal(kept.output_text, 'mail <EMAIL_1>');
      assert.ok(!JSON.stringify(kept).includes(EMAIL), 'the store never kept what the client was not given');
    });
  }
});
