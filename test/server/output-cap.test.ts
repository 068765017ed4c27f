import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// Invariant "spend never exceeds a limit": a reservation is a worst case only if the answer
// cannot run past it. When a budget, tpm or daily quota applies and the request sets no
// output cap, the gateway sends the cap it reserved (governance.cap_output, default on), in
// the field of the operation and the provider's protocol; a request's own cap, and a caller
// under no limit, are left as they are.

const resources = fileResources('switchyard-output-cap-');
const RESERVED = 300;
let mock: MockProvider;
let capping: GatewayProcess;
let uncapped: GatewayProcess;

function config(capOutput: boolean): Record<string, unknown> {
  const config = baseConfig(
    { east: mock.baseUrl },
    {
      m: { candidates: [{ provider: 'east', model: 'gpt-4o-mini' }] },
      claude: { candidates: [{ provider: 'anth', model: 'claude-sonnet-4-5' }] },
      small: { candidates: [{ provider: 'east', model: 'gpt-small' }] },
      // The small model first: it is asked for no more than it can write, though the route reserves the large one's.
      mixed: {
        candidates: [
          { provider: 'east', model: 'gpt-small' },
          { provider: 'east', model: 'gpt-large' },
        ],
      },
    },
    {
      governance: { default_max_tokens: RESERVED, cap_output: capOutput },
      pricing: {
        models: {
          'gpt-small': { input_usd_per_mtok: 0, output_usd_per_mtok: 0, max_output_tokens: 40 },
          'gpt-large': { input_usd_per_mtok: 0, output_usd_per_mtok: 0, max_output_tokens: 700 },
        },
      },
      teams: { limited: { budget: { usd_per_month: 1000 } }, minute: { rate_limit: { tpm: 200 } }, open: {} },
      keys: [
        { id: 'limited', team: 'limited', sha256: hashKey('limited-key') },
        { id: 'minute', team: 'minute', sha256: hashKey('minute-key') },
        { id: 'open', team: 'open', sha256: hashKey('open-key') },
      ],
    },
  );
  (config.providers as Record<string, unknown>).anth = { type: 'anthropic', base_url: mock.baseUrl, timeout_ms: 5000 };
  return config;
}

before(async () => {
  mock = await resources.startMock({ name: 'east' });
  capping = await resources.startGw(config(true));
  uncapped = await resources.startGw(config(false));
});

after(async () => {
  await capping?.stop();
  await uncapped?.stop();
});

const client = (gw: GatewayProcess, key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
const messages = [{ role: 'user' as const, content: 'cap me' }];

/** The JSON body the mock received last on `path`. */
function lastBody(path: string): Record<string, unknown> {
  const seen = mock
    .stats()
    .recent.filter((r) => r.path === path)
    .at(-1);
  assert.ok(seen !== undefined, `the mock saw no ${path}`);
  return JSON.parse(seen.body) as Record<string, unknown>;
}

describe('governance.cap_output', () => {
  it('a chat request with no cap, under a budget, reaches the provider with max_completion_tokens set to what was reserved', async () => {
    await client(capping, 'limited-key').chat.completions.create({ model: 'm', messages });
    const body = lastBody('/v1/chat/completions');
    assert.equal(body.max_completion_tokens, RESERVED);
    assert.equal(body.max_tokens, undefined);
    assert.deepEqual(body.messages, messages, 'the rest of the body is the client’s');
  });

  it('under a tpm below default_max_tokens, the cap sent is what the limit holds beside the input', async () => {
    await client(capping, 'minute-key').chat.completions.create({ model: 'm', messages });
    const cap = lastBody('/v1/chat/completions').max_completion_tokens as number;
    assert.ok(cap > 0 && cap < 200, `cap ${cap}`);
  });

  it("a request's own cap is kept, and nothing is added", async () => {
    await client(capping, 'limited-key').chat.completions.create({ model: 'm', messages, max_tokens: 50 });
    const body = lastBody('/v1/chat/completions');
    assert.equal(body.max_tokens, 50);
    assert.equal(body.max_completion_tokens, undefined);
  });

  it('a caller under no limit has nothing added', async () => {
    await client(capping, 'open-key').chat.completions.create({ model: 'm', messages });
    assert.equal(lastBody('/v1/chat/completions').max_completion_tokens, undefined);
  });

  it('completions get max_tokens and responses max_output_tokens', async () => {
    await client(capping, 'limited-key').completions.create({ model: 'm', prompt: 'cap me' });
    assert.equal(lastBody('/v1/completions').max_tokens, RESERVED);
    await client(capping, 'limited-key').responses.create({ model: 'm', input: 'cap me' });
    assert.equal(lastBody('/v1/responses').max_output_tokens, RESERVED);
  });

  it('an OpenAI request translated for an Anthropic provider carries the reserved cap as max_tokens', async () => {
    await client(capping, 'limited-key').chat.completions.create({ model: 'claude', messages });
    assert.equal(lastBody('/v1/messages').max_tokens, RESERVED);
  });

  it('a model whose pricing entry gives max_output_tokens is reserved for and sent that cap instead of default_max_tokens', async () => {
    await client(capping, 'limited-key').chat.completions.create({ model: 'small', messages });
    assert.equal(lastBody('/v1/chat/completions').max_completion_tokens, 40);
  });

  it("a route's cap is its most generous model's, and each model is sent no more than its own", async () => {
    await client(capping, 'limited-key').chat.completions.create({ model: 'mixed', messages });
    const body = lastBody('/v1/chat/completions');
    assert.deepEqual([body.model, body.max_completion_tokens], ['gpt-small', 40]);
  });

  it("what a route reserves without a cap is its most generous model's max_output_tokens (seen in a limit's refusal, cap_output off)", async () => {
    // tpm 200: the small route's 40 output tokens fit it; the mixed route's 700 never can.
    await client(uncapped, 'minute-key').chat.completions.create({ model: 'small', messages });
    const refused = await fetch(`${uncapped.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer minute-key' },
      body: JSON.stringify({ model: 'mixed', messages }),
    });
    const body = (await refused.json()) as { error: { code: string; message: string } };
    assert.deepEqual([refused.status, body.error.code], [400, 'over_limit_capacity']);
    assert.match(body.error.message, /700 output tokens/);
  });

  it('with cap_output: false nothing is added, and a translation still sends the reserved default', async () => {
    await client(uncapped, 'limited-key').chat.completions.create({ model: 'm', messages });
    assert.equal(lastBody('/v1/chat/completions').max_completion_tokens, undefined);
    await client(uncapped, 'limited-key').chat.completions.create({ model: 'claude', messages });
    assert.equal(lastBody('/v1/messages').max_tokens, RESERVED);
  });
});

// ---------------------------------------------------------------------------------------

/** An upstream that writes as many output tokens as it is allowed, up to `wants`, and reports them. */
async function startGreedyUpstream(wants: number): Promise<{ readonly baseUrl: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      text += c;
    });
    req.on('end', () => {
      const body = JSON.parse(text) as { max_completion_tokens?: number; max_tokens?: number };
      const completion = Math.min(wants, body.max_completion_tokens ?? body.max_tokens ?? wants);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-greedy',
          object: 'chat.completion',
          created: 1,
          model: 'greedy',
          choices: [{ index: 0, message: { role: 'assistant', content: 'x'.repeat(16) }, finish_reason: 'length' }],
          usage: { prompt_tokens: 10, completion_tokens: completion, total_tokens: 10 + completion },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('invariant "spend never exceeds a budget": two replicas on one Redis, an upstream that writes 2000 tokens unless capped', () => {
  // 1 µUSD an output token, input free: a request reserves 200 µUSD (default_max_tokens), and a
  // budget of 2000 µUSD admits 10 of them.
  const BUDGET_USD = 0.002;
  let upstream: Awaited<ReturnType<typeof startGreedyUpstream>>;

  before(async () => {
    upstream = await startGreedyUpstream(2000);
  });

  after(async () => {
    await upstream?.close();
  });

  async function spendOf100(capOutput: boolean): Promise<{ served: number; spentMicroUsd: number }> {
    const prefix = `switchyard-test-cap-${randomUUID()}:`;
    const replicaConfig = baseConfig(
      { greedy: upstream.baseUrl },
      { m: { candidates: [{ provider: 'greedy' }] } },
      {
        governance: {
          store: 'redis',
          redis_url: 'redis://127.0.0.1:6379',
          key_prefix: prefix,
          default_max_tokens: 200,
          cap_output: capOutput,
        },
        pricing: { models: { m: { input_usd_per_mtok: 0, output_usd_per_mtok: 1 } } },
        teams: { tight: { budget: { usd_per_month: BUDGET_USD, on_exceeded: 'block' } } },
        keys: [{ id: 'tight', team: 'tight', sha256: hashKey('tight-key') }],
      },
    );
    const replicas = [await resources.startGw(replicaConfig), await resources.startGw(replicaConfig)];
    try {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          fetch(`${(replicas[i % 2] as GatewayProcess).url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: 'Bearer tight-key' },
            body: JSON.stringify({ model: 'm', messages }),
          }).then(async (r) => {
            await r.text();
            return r.status;
          }),
        ),
      );
      const served = answers.filter((s) => s === 200).length;
      assert.ok(
        answers.every((s) => s === 200 || s === 402),
        `only served or over budget: ${answers.join(',')}`,
      );
      // Settles reach Redis in batches (a few ms after each answer): read the books once the
      // last reservation is settled, within a bound that only catches a hang.
      let spend: { used: number; reservedMicroUsd: number } | undefined;
      for (let i = 0; i < 100; i++) {
        const status = (await (await fetch(`${(replicas[0] as GatewayProcess).adminUrl}/admin/status`)).json()) as {
          governance: { teams: Record<string, { spendThisMonthMicroUsd: { used: number; reservedMicroUsd: number } }> };
        };
        spend = status.governance.teams.tight?.spendThisMonthMicroUsd;
        if (spend?.reservedMicroUsd === 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(spend?.reservedMicroUsd, 0, 'every reservation settled');
      return { served, spentMicroUsd: spend?.used ?? Number.NaN };
    } finally {
      for (const r of replicas) await r.stop();
    }
  }

  it('with cap_output on, the capped answers keep the month within its budget', async () => {
    const { served, spentMicroUsd } = await spendOf100(true);
    assert.equal(served, 10, 'the budget admits exactly 10 reservations of 200 µUSD across both replicas');
    assert.ok(spentMicroUsd <= BUDGET_USD * 1e6, `spent ${spentMicroUsd} µUSD of a ${BUDGET_USD * 1e6} µUSD budget`);
  });

  it('with cap_output off, the same traffic overshoots: the answers run to 2000 tokens past their reservation', async () => {
    const { served, spentMicroUsd } = await spendOf100(false);
    assert.equal(served, 10);
    assert.equal(spentMicroUsd, 10 * 2000, 'each of the 10 billed its 2000 tokens: the overshoot cap_output prevents');
  });
});
