import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { guardrailsSchema, type NemoGuardrailConfig, type WebhookGuardrailConfig } from '../../src/config/index.js';
import { type MockGuardrailBehavior, type MockGuardrailService, startMockGuardrailService } from '../../src/mock/index.js';
import {
  checkNemo,
  checkWebhook,
  GuardrailServiceError,
  type ServiceAnswer,
  type ServiceCheck,
  serviceHeaders,
} from '../../src/request/guardrails/services.js';

// The clients of the two guardrail services, NeMo Guardrails' checks API and an operator's
// webhook, against the mock guardrail service over loopback: each verdict read, each way a
// call fails sorted into timeout / error / invalid, the configured secret header sent, and
// neither a header's value nor a checked text in any message.

const TOKEN = 'Bearer guard-token-4f9c2a';
const ENV = { GUARD_TOKEN: TOKEN };
const SECRET_TEXT = 'my card is 4111 1111 1111 1111';

let mock: MockGuardrailService;

before(async () => {
  mock = await startMockGuardrailService();
});
after(() => mock.close());
beforeEach(async () => {
  const res = await fetch(`${mock.url}/__mock/reset`, { method: 'POST' });
  assert.equal(res.status, 200);
});

/** Sets the behaviour the way a test in another process would: over HTTP. */
async function behave(b: MockGuardrailBehavior): Promise<void> {
  const res = await fetch(`${mock.url}/__mock/behavior`, { method: 'POST', body: JSON.stringify(b) });
  assert.equal(res.status, 200, await res.text());
}

function nemoConfig(extra: Record<string, unknown> = {}): NemoGuardrailConfig {
  const g = guardrailsSchema.parse({
    n: { type: 'nemo', base_url: mock.url, config_id: 'demo-self-check', headers: { authorization: { env: 'GUARD_TOKEN' } }, ...extra },
  }).n;
  assert.equal(g?.type, 'nemo');
  return g as NemoGuardrailConfig;
}

function webhookConfig(extra: Record<string, unknown> = {}): WebhookGuardrailConfig {
  const g = guardrailsSchema.parse({
    w: { type: 'webhook', url: `${mock.url}/check`, headers: { authorization: { env: 'GUARD_TOKEN' } }, ...extra },
  }).w;
  assert.equal(g?.type, 'webhook');
  return g as WebhookGuardrailConfig;
}

function checkOf(texts: string[], extra: Partial<ServiceCheck> = {}): ServiceCheck {
  return {
    phase: 'input',
    protocol: 'openai',
    route: 'chat',
    model: 'gpt-mock',
    team: 'research',
    key: 'key-7',
    texts: texts.map((text, i) => ({ role: i === 0 ? 'system' : 'user', text })),
    ...extra,
  };
}

function headersOf(cfg: NemoGuardrailConfig | WebhookGuardrailConfig): Record<string, string> {
  const resolved = serviceHeaders(cfg, ENV);
  assert.ok(resolved.ok);
  return resolved.headers;
}

interface Client {
  readonly name: 'nemo' | 'webhook';
  run(texts: string[], extra?: Record<string, unknown>): Promise<ServiceAnswer>;
}

const clients: readonly Client[] = [
  {
    name: 'nemo',
    run: (texts, extra) => {
      const cfg = nemoConfig(extra);
      return checkNemo(cfg, headersOf(cfg), checkOf(texts));
    },
  },
  {
    name: 'webhook',
    run: (texts, extra) => {
      const cfg = webhookConfig(extra);
      return checkWebhook(cfg, headersOf(cfg), checkOf(texts));
    },
  },
];

/** The error a failed call throws, checked to name neither the secret header nor a text. */
async function failure(call: Promise<ServiceAnswer>): Promise<GuardrailServiceError> {
  const err = await call.then(
    (answer) => assert.fail(`expected a failure, got ${JSON.stringify(answer)}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof GuardrailServiceError, String(err));
  assert.ok(!err.message.includes('guard-token'), err.message);
  assert.ok(!err.message.includes('4111'), err.message);
  return err;
}

for (const client of clients) {
  describe(`${client.name} client`, () => {
    it('allows texts the service passes, sending the configured authorization header', async () => {
      assert.deepEqual(await client.run(['be helpful', 'hello there']), { action: 'allow' });
      assert.equal(mock.received.length, 1);
      assert.equal(mock.received[0]?.api, client.name);
      assert.equal(mock.received[0]?.headers.authorization, TOKEN);
      assert.equal(mock.received[0]?.headers['content-type'], 'application/json');
    });

    it('blocks texts the service blocks, naming its categories', async () => {
      const answer = await client.run(['be helpful', 'tell me the forbidden thing']);
      assert.deepEqual(answer, { action: 'block', categories: ['forbidden'], reason: null });
    });

    it('rewrites every text when the service masks, in order', async () => {
      await behave({ mode: client.name === 'nemo' ? 'modified' : 'mask', word: 'secret', replacement: '[MASKED]' });
      const answer = await client.run(['keep the secret', 'no change', 'secret and secret']);
      assert.deepEqual(answer, {
        action: 'mask',
        texts: ['keep the [MASKED]', 'no change', '[MASKED] and [MASKED]'],
        categories: ['masked'],
      });
    });

    it('times out when the service holds its answer past timeout_ms', { timeout: 15_000 }, async () => {
      await behave({ mode: 'timeout', hold_ms: 30_000 });
      const err = await failure(client.run([SECRET_TEXT], { timeout_ms: 200 }));
      assert.equal(err.kind, 'timeout');
      assert.match(err.message, /did not answer within 200 ms/);
    });

    it('calls an answer that is not JSON invalid', async () => {
      await behave({ mode: 'garbage' });
      assert.equal((await failure(client.run([SECRET_TEXT]))).kind, 'invalid');
    });

    it('calls a 500 an error, naming the status but neither the header nor the texts', async () => {
      await behave({ mode: 'status', status: 500 });
      const err = await failure(client.run([SECRET_TEXT]));
      assert.equal(err.kind, 'error');
      assert.match(err.message, new RegExp(`^${client.name} http://127\\.0\\.0\\.1:\\d+ answered 500$`));
    });

    it('does not follow a redirect: a 3xx is an error, and the check is sent once', async () => {
      await behave({ mode: 'status', status: 307 });
      const err = await failure(client.run(['hello']));
      assert.equal(err.kind, 'error');
      assert.match(err.message, /answered 307/);
      assert.equal(mock.received.length, 1);
    });

    it('refuses an answer larger than its bound as an error', async () => {
      const bound = client.name === 'webhook' ? { max_bytes: 1024 } : {};
      await behave({ mode: 'oversize', bytes: client.name === 'webhook' ? 4096 : 5 * 1024 * 1024 });
      const err = await failure(client.run(['hello'], bound));
      assert.equal(err.kind, 'error');
      assert.match(err.message, /answered more than \d+ bytes/);
    });

    it('calls a refused connection an error, naming its code', async () => {
      const port = await closedPort();
      const target = client.name === 'nemo' ? { base_url: `http://127.0.0.1:${port}` } : { url: `http://127.0.0.1:${port}/check` };
      const err = await failure(client.run([SECRET_TEXT], target));
      assert.equal(err.kind, 'error');
      assert.match(err.message, /ECONNREFUSED/);
    });
  });
}

describe('a check the caller abandons', () => {
  it('ends the call as an error, sent or not yet sent', { timeout: 15_000 }, async () => {
    await behave({ mode: 'timeout', hold_ms: 30_000 });
    const cfg = webhookConfig({ timeout_ms: 60_000 });
    const gone = new AbortController();
    const call = checkWebhook(cfg, {}, checkOf([SECRET_TEXT]), gone.signal);
    while (mock.received.length === 0) await new Promise((r) => setTimeout(r, 10));
    gone.abort();
    const err = await failure(call);
    assert.equal(err.kind, 'error');
    assert.match(err.message, /cancelled/);
    const before = await failure(checkNemo(nemoConfig(), {}, checkOf(['hello']), AbortSignal.abort()));
    assert.match(before.message, /cancelled/);
    assert.equal(mock.received.length, 1);
  });
});

describe('nemo client: the checks API', () => {
  it('posts the messages with their roles, the config id and the configured model', async () => {
    const cfg = nemoConfig({ model: 'meta/llama-3.3-70b-instruct' });
    await checkNemo(cfg, headersOf(cfg), checkOf(['be helpful', 'hello']));
    assert.deepEqual(mock.received[0]?.body, {
      model: 'meta/llama-3.3-70b-instruct',
      messages: [
        { role: 'system', content: 'be helpful' },
        { role: 'user', content: 'hello' },
      ],
      guardrails: { config_id: 'demo-self-check' },
    });
  });

  it("sends the request's model when none is configured, and none when neither is known", async () => {
    const cfg = nemoConfig();
    await checkNemo(cfg, {}, checkOf(['hello']));
    await checkNemo(cfg, {}, checkOf(['hello'], { model: null }));
    const [first, second] = mock.received.map((call) => call.body as { model?: string });
    assert.equal(first?.model, 'gpt-mock');
    assert.equal(second !== undefined && !('model' in second), true);
  });

  it('names only the rails whose status is blocked, as category names', async () => {
    await behave({ mode: 'block', categories: ['self check input', 'Jailbreak Detection'] });
    const answer = await clients[0]?.run(['hello']);
    assert.deepEqual(answer, { action: 'block', categories: ['self_check_input', 'jailbreak_detection'], reason: null });
  });

  it('reads passed as success, and a block without rails as "blocked"', async () => {
    await behave({ mode: 'answer', answer: { status: 'passed', rails_status: {} } });
    assert.deepEqual(await clients[0]?.run(['hello']), { action: 'allow' });
    await behave({ mode: 'answer', answer: { status: 'blocked' } });
    assert.deepEqual(await clients[0]?.run(['hello']), { action: 'block', categories: ['blocked'], reason: null });
  });

  it('calls invalid a modified answer whose messages do not match the texts one for one', async () => {
    await behave({ mode: 'answer', answer: { status: 'modified', rails_status: {}, messages: [{ role: 'user', content: 'one' }] } });
    const err = await failure(clients[0]?.run(['one', 'two']) as Promise<ServiceAnswer>);
    assert.equal(err.kind, 'invalid');
    assert.match(err.message, /1 modified messages for 2 checked/);
  });

  it('calls invalid an unknown status, or an answer without one', async () => {
    for (const answer of [{ status: 'maybe', rails_status: {} }, { rails_status: {} }, ['success'], 'success']) {
      await behave({ mode: 'answer', answer });
      assert.equal((await failure(clients[0]?.run(['hello']) as Promise<ServiceAnswer>)).kind, 'invalid', JSON.stringify(answer));
    }
  });
});

describe('webhook client: the contract', () => {
  it('posts the phase, who asks and the texts as plain strings', async () => {
    const cfg = webhookConfig();
    await checkWebhook(cfg, {}, checkOf(['be helpful', 'hello'], { phase: 'arguments', protocol: 'mcp', route: 'weather', model: null }));
    assert.deepEqual(mock.received[0]?.body, {
      phase: 'arguments',
      protocol: 'mcp',
      route: 'weather',
      model: null,
      team: 'research',
      key: 'key-7',
      texts: ['be helpful', 'hello'],
    });
  });

  it("keeps a block's reason and categories", async () => {
    await behave({ mode: 'block', categories: ['prompt_injection'], reason: 'looks like an injection' });
    assert.deepEqual(await clients[1]?.run(['hello']), {
      action: 'block',
      categories: ['prompt_injection'],
      reason: 'looks like an injection',
    });
  });

  it('refuses a check over max_bytes before sending anything', async () => {
    const err = await failure(clients[1]?.run(['x'.repeat(2000), SECRET_TEXT], { max_bytes: 1024 }) as Promise<ServiceAnswer>);
    assert.equal(err.kind, 'error');
    assert.match(err.message, /more than max_bytes 1024; not sent/);
    assert.equal(mock.received.length, 0);
  });

  it('calls invalid a mask without texts for every checked text, or an unknown action', async () => {
    const answers = [
      { action: 'mask', texts: ['only one'] },
      { action: 'mask' },
      { action: 'mask', texts: [1, 2] },
      { action: 'block', categories: 'pii' },
      { action: 'block', reason: 42 },
      { action: 'deny' },
      { verdict: 'allow' },
      null,
    ];
    for (const answer of answers) {
      await behave({ mode: 'answer', answer });
      assert.equal((await failure(clients[1]?.run(['one', 'two']) as Promise<ServiceAnswer>)).kind, 'invalid', JSON.stringify(answer));
    }
  });
});

describe('serviceHeaders', () => {
  it("resolves each header's secret reference", () => {
    assert.deepEqual(serviceHeaders({ headers: { Authorization: { env: 'GUARD_TOKEN' } } }, ENV), {
      ok: true,
      headers: { authorization: TOKEN },
    });
    assert.deepEqual(serviceHeaders({}, ENV), { ok: true, headers: {} });
  });

  it('names the header and the reference of a secret that cannot be resolved, never a value', () => {
    const result = serviceHeaders({ headers: { 'x-ok': { env: 'GUARD_TOKEN' }, 'x-api-key': { env: 'GUARD_MISSING' } } }, ENV);
    assert.deepEqual(result, { ok: false, message: 'headers.x-api-key: environment variable GUARD_MISSING is not set' });
  });
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
