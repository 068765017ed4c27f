import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { type MockGuardrailService, type MockProvider, startMockGuardrailService, startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';

// The service guardrails through a real gateway: a NeMo-compatible mock, a webhook mock and
// a judge route of the gateway itself, each blocking, allowing, timing out and answering
// garbage, under fail_open and fail_closed; and a team that tries to drop a route's guardrail.

const SEP = '\u241f';
let mock: MockProvider;
let slow: MockProvider;
let nemo: MockGuardrailService;
let hook: MockGuardrailService;
let gw: GatewayProcess;
let client: OpenAI;
let teamClient: OpenAI;

function route(guardrails: Record<string, string[]>, provider = 'oai'): Record<string, unknown> {
  return { guardrails, candidates: [{ provider, model: 'gpt-4o-mini' }] };
}

before(async () => {
  mock = await startMockProvider({ name: 'm', port: 0 });
  slow = await startMockProvider({ name: 'slow', port: 0, latencyMs: 3000 });
  nemo = await startMockGuardrailService();
  hook = await startMockGuardrailService();
  const dir = (await import('node:fs')).mkdtempSync(join((await import('node:os')).tmpdir(), 'guard-'));
  const prompt = join(dir, 'judge.txt');
  writeFileSync(prompt, 'Answer "unsafe" if any of these texts is unsafe, else "safe".\n\n{{texts}}');
  const nemoCfg = { type: 'nemo', base_url: nemo.url, config_id: 'main', timeout_ms: 300 };
  const hookCfg = { type: 'webhook', url: `${hook.url}/check`, timeout_ms: 300, headers: { authorization: { env: 'GUARD_TOKEN' } } };
  gw = await startGatewayProcess(
    {
      server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
      providers: {
        oai: { type: 'openai', base_url: mock.baseUrl, timeout_ms: 5000 },
        slow: { type: 'openai', base_url: slow.baseUrl, timeout_ms: 10_000 },
      },
      guardrails: {
        nemo: nemoCfg,
        nemo_open: { ...nemoCfg, on_error: 'fail_open' },
        nemo_out: { ...nemoCfg, stream: 'hold' },
        hook: { ...hookCfg, action: 'mask' },
        hook_closed: { ...hookCfg, on_error: 'fail_closed' },
        // The mock judge greets ("Hello from m."): one judge reads that as unsafe, one as safe.
        judge_block: { type: 'judge', route: 'judge', prompt: { file: prompt }, unsafe_when: '^Hello', timeout_ms: 2000 },
        judge_allow: { type: 'judge', route: 'judge', prompt: { file: prompt }, timeout_ms: 2000 },
        judge_slow: { type: 'judge', route: 'judge-slow', prompt: { text: 'Is it unsafe?' }, timeout_ms: 300 },
        secrets: { type: 'secrets', action: 'block' },
      },
      routing: {
        routes: {
          'nemo-in': route({ input: ['nemo'] }),
          'nemo-open': route({ input: ['nemo_open'] }),
          'nemo-out': route({ output: ['nemo_out'] }),
          'hook-in': route({ input: ['hook'] }),
          'hook-closed': route({ input: ['hook_closed'] }),
          'judge-in': route({ input: ['judge_block'] }),
          'judge-ok': route({ input: ['judge_allow'] }),
          'judge-timeout': route({ input: ['judge_slow'] }),
          judge: route({}),
          'judge-slow': route({}, 'slow'),
          guarded: route({ input: ['secrets'] }),
        },
      },
      teams: { research: { guardrails: { input: [] } }, platform: {} },
      keys: [
        { id: 'research-key', team: 'research', key: { env: 'RESEARCH_KEY' } },
        { id: 'open-key', team: 'platform', key: { env: 'OPEN_KEY' } },
      ],
    },
    { env: { GUARD_TOKEN: 'guard-secret-token', RESEARCH_KEY: 'sk-research-0123456789', OPEN_KEY: 'sk-open-0123456789abcd' } },
  );
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-open-0123456789abcd', maxRetries: 0, timeout: 10_000 });
  teamClient = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-research-0123456789', maxRetries: 0, timeout: 10_000 });
});

after(async () => {
  await gw?.stop();
  await Promise.all([mock?.close(), slow?.close(), nemo?.close(), hook?.close()]);
});

function ask(model: string, content: string, c = client) {
  return c.chat.completions.create({ model, messages: [{ role: 'user', content }] });
}

async function refused(p: Promise<unknown>, status: number, code: string, message?: RegExp): Promise<void> {
  await assert.rejects(p, (err: InstanceType<typeof OpenAI.APIError>) => {
    assert.equal(err.status, status);
    assert.equal((err.error as { code?: string }).code, code);
    if (message !== undefined) assert.match(err.message, message);
    return true;
  });
}

describe('NeMo Guardrails', { timeout: 60_000 }, () => {
  it('blocks what its rails block, naming the rail; allows the rest; the request reaches it as chat messages', async () => {
    nemo.setBehavior({ mode: 'rule', trigger: 'forbidden', categories: ['self check input'] });
    await refused(ask('nemo-in', 'a forbidden question'), 400, 'content_filter', /guardrail nemo \(self_check_input\)/);
    const ok = await ask('nemo-in', 'a fine question');
    assert.equal(ok.choices[0]?.finish_reason, 'stop');
    const last = nemo.received.at(-1)?.body as { guardrails: { config_id: string }; messages: Array<{ role: string; content: string }> };
    assert.equal(last.guardrails.config_id, 'main');
    assert.deepEqual(last.messages, [{ role: 'user', content: 'a fine question' }]);
  });

  it('timing out: fail_closed answers 503 guardrail_unavailable, fail_open serves', async () => {
    nemo.setBehavior({ mode: 'timeout', hold_ms: 2000 });
    await refused(ask('nemo-in', 'hello'), 503, 'guardrail_unavailable', /guardrail nemo could not check the request \(timeout\)/);
    const ok = await ask('nemo-open', 'hello');
    assert.equal(ok.choices[0]?.finish_reason, 'stop');
  });

  it('answering garbage: fail_closed refuses, fail_open serves', async () => {
    nemo.setBehavior({ mode: 'garbage' });
    await refused(ask('nemo-in', 'hello'), 503, 'guardrail_unavailable', /\(invalid\)/);
    const ok = await ask('nemo-open', 'hello');
    assert.equal(ok.choices[0]?.finish_reason, 'stop');
  });

  it('on a stream’s output under hold: a blocked answer ends with content_filter, nothing of it sent', async () => {
    nemo.setBehavior({ mode: 'rule', trigger: 'forbidden' });
    const stream = await client.chat.completions.create({
      model: 'nemo-out',
      messages: [{ role: 'user', content: `say: this is${SEP} forbidden${SEP} text` }],
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, '');
    assert.equal(finish, 'content_filter');
  });
});

describe('a webhook', { timeout: 60_000 }, () => {
  it('mask: the upstream gets the webhook’s rewrite; its secret header is sent', async () => {
    hook.setBehavior({ mode: 'mask', word: 'Project Zeus', replacement: '[project]' });
    const before = mock.stats().recent.length;
    await ask('hook-in', 'status of Project Zeus?');
    const sent = mock
      .stats()
      .recent.slice(before)
      .map((r) => r.body)
      .join('');
    assert.ok(!sent.includes('Project Zeus'));
    assert.match(sent, /status of \[project\]\?/);
    assert.equal(hook.received.at(-1)?.headers.authorization, 'guard-secret-token');
    const body = hook.received.at(-1)?.body as Record<string, unknown>;
    assert.equal(body.phase, 'input');
    assert.equal(body.route, 'hook-in');
    assert.equal(body.key, 'open-key');
  });

  it('block: refused with the webhook’s categories', async () => {
    hook.setBehavior({ mode: 'block', categories: ['policy'] });
    await refused(ask('hook-closed', 'anything'), 400, 'content_filter', /guardrail hook_closed \(policy\)/);
  });

  it('timing out under fail_open serves; a 500 under fail_closed refuses', async () => {
    hook.setBehavior({ mode: 'timeout', hold_ms: 2000 });
    assert.equal((await ask('hook-in', 'hello')).choices[0]?.finish_reason, 'stop');
    hook.setBehavior({ mode: 'status', status: 500 });
    await refused(ask('hook-closed', 'hello'), 503, 'guardrail_unavailable', /\(error\)/);
    hook.setBehavior({ mode: 'garbage' });
    await refused(ask('hook-closed', 'hello'), 503, 'guardrail_unavailable', /\(invalid\)/);
    assert.equal((await ask('hook-in', 'hello')).choices[0]?.finish_reason, 'stop');
  });
});

describe('a judge route', { timeout: 60_000 }, () => {
  it('an answer its unsafe_when matches blocks; one it does not match allows; the judge was asked through the gateway', async () => {
    const before = mock.stats().recent.length;
    await refused(ask('judge-in', 'a question'), 400, 'content_filter', /guardrail judge_block \(unsafe\)/);
    const asked = mock
      .stats()
      .recent.slice(before)
      .map((r) => r.body);
    assert.equal(asked.length, 1, 'only the judge was asked; the blocked request reached no upstream');
    assert.match(asked[0] as string, /user: a question/);
    assert.equal((await ask('judge-ok', 'a question')).choices[0]?.finish_reason, 'stop');
  });

  it('a judge that does not answer in time fails closed', async () => {
    await refused(ask('judge-timeout', 'a question'), 503, 'guardrail_unavailable', /guardrail judge_slow .*\(timeout\)/);
  });
});

describe('lists only add', { timeout: 30_000 }, () => {
  it('a team whose input list is empty cannot drop the route’s guardrail', async () => {
    await refused(ask('guarded', 'key AKIAIOSFODNN7EXAMPLE', teamClient), 400, 'content_filter', /guardrail secrets/);
  });
});
