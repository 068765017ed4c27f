import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { Pool } from 'undici';
import { hashKey } from '../../src/governance/index.js';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { adminReload } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, runCli, startGatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';

// Governance through the official openai client against real gateway processes: who may call,
// each limit with its status, headers and error body, budgets under concurrency, counters
// across a reload and across two replicas sharing Redis.

const MODEL = 'gpt-4o-mini';
const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello governance' }];
/** USD per million output tokens: 1000 micro-USD per token, so costs are whole numbers. */
const OUTPUT_PRICE = 1000;

const keyOf = (id: string): string => `sy-test-${id}-${'k'.repeat(8)}`;
const key = (id: string, team: string, extra: Record<string, unknown> = {}) => ({ id, team, sha256: hashKey(keyOf(id)), ...extra });

function clientFor(gw: GatewayProcess, id: string): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: keyOf(id), maxRetries: 0, timeout: 10_000 });
}

async function refusal(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p;
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  assert.fail('the request was served, expected a refusal');
}

/** A raw streamed request, for what the SDK does not show: the `Trailer` header and the trailers. */
function streamWithTrailers(
  base: string,
  apiKey: string,
  body: Record<string, unknown>,
): Promise<{ trailerAnnounced: string | undefined; trailers: NodeJS.Dict<string>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/v1/chat/completions`,
      { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ trailerAnnounced: res.headers.trailer, trailers: res.trailers, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

let mock: MockProvider;
/** Completion tokens the mock reports for `messages` (its reply is fixed). */
let completionTokens: number;

async function learnCompletionTokens(): Promise<number> {
  const res = await fetch(`${mock.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages }),
  });
  return ((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens;
}

function governedConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const budgetFitsTen = (10 * completionTokens * OUTPUT_PRICE) / 1e6;
  return baseConfig(
    { east: mock.baseUrl },
    { [MODEL]: { candidates: [{ provider: 'east' }] }, 'llama-3': { candidates: [{ provider: 'east' }] } },
    {
      pricing: { models: { [MODEL]: { input_usd_per_mtok: 0, output_usd_per_mtok: OUTPUT_PRICE } } },
      teams: {
        free: {},
        rpm: { rate_limit: { rpm: 2 } },
        reloaded: { rate_limit: { rpm: 3 } },
        quota: { quota: { tokens_per_day: 60 } },
        llamas: { allowed_models: ['llama-*'] },
        budget: { budget: { usd_per_month: budgetFitsTen, on_exceeded: 'block' } },
        warned: { budget: { usd_per_month: 0, on_exceeded: 'warn' } },
        // Room for 5 output tokens at OUTPUT_PRICE (input is free), and nothing spent.
        scant: { budget: { usd_per_month: 0.005, on_exceeded: 'block' } },
      },
      keys: [
        key('free', 'free'),
        key('rpm', 'rpm'),
        key('reloaded', 'reloaded'),
        key('quota', 'quota'),
        key('llamas', 'llamas'),
        key('budget', 'budget'),
        key('warned', 'warned'),
        key('scant', 'scant'),
        key('expired', 'free', { expires_at: '2020-01-01T00:00:00Z' }),
      ],
      ...extra,
    },
  );
}

/**
 * Team `scant` (0.005 USD, nothing spent) asks for 100 output tokens: the refusal says what
 * the request reserves, what is left, and the max_tokens that fits; that max_tokens is served.
 */
async function scantBudgetRefusal(gw: GatewayProcess): Promise<void> {
  const client = clientFor(gw, 'scant');
  const err = await refusal(client.chat.completions.create({ model: MODEL, messages, max_tokens: 100 }));
  assert.deepEqual([err.status, err.code], [402, 'budget_exceeded']);
  assert.match(
    err.message,
    /^402 this request reserves up to 0\.1 USD \(about \d+ input tokens and 100 output tokens, its max_tokens, at the price of its dearest candidate \(east\/gpt-4o-mini\)\), more than the 0\.005 USD team "scant" has left of its monthly budget; a max_tokens of at most 5 would fit, or wait for the budget to renew at the start of the next UTC month$/,
  );
  assert.doesNotMatch(err.message, /no budget left/);
  const fits = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5 });
  assert.ok(fits.choices.length > 0, 'the max_tokens the refusal named is served');
}

describe('governance on the request path', () => {
  let gw: GatewayProcess;

  before(async () => {
    mock = await startMockProvider({ name: 'east' });
    completionTokens = await learnCompletionTokens();
    gw = await startGatewayProcess(governedConfig());
  });

  after(async () => {
    await gw?.stop();
  });

  it('a missing or unknown key is 401 in the OpenAI shape; the upstream is never called', async () => {
    const before = mock.stats().total;
    const none = await postChat(gw.url, chatBody(MODEL));
    assert.equal(none.status, 401);
    assert.equal(none.json<{ error: { code: string } }>().error.code, 'unauthorized');
    const err = await refusal(
      new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sy-not-a-key', maxRetries: 0 }).chat.completions.create({ model: MODEL, messages }),
    );
    assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
    assert.ok(!err.message.includes('sy-not-a-key'), 'the presented key is never echoed');
    assert.equal(mock.stats().total, before);
  });

  it('a key is accepted as Bearer with any scheme case, or as x-api-key', async () => {
    const variants: Record<string, string>[] = [
      { authorization: `bearer ${keyOf('free')}` },
      { authorization: `BEARER ${keyOf('free')}` },
      { 'x-api-key': keyOf('free') },
    ];
    for (const headers of variants) {
      const r = await postChat(gw.url, chatBody(MODEL), headers);
      assert.equal(r.status, 200, JSON.stringify(headers));
    }
  });

  it('an expired key is 401 key_expired', async () => {
    const err = await refusal(clientFor(gw, 'expired').chat.completions.create({ model: MODEL, messages }));
    assert.equal(err.status, 401);
    assert.equal(err.code, 'key_expired');
  });

  it("a model outside the team's allowed_models is 403 model_not_allowed; a matching glob is served", async () => {
    const err = await refusal(clientFor(gw, 'llamas').chat.completions.create({ model: MODEL, messages }));
    assert.ok(err instanceof OpenAI.PermissionDeniedError, String(err));
    assert.equal(err.code, 'model_not_allowed');
    const ok = await clientFor(gw, 'llamas').chat.completions.create({ model: 'llama-3', messages });
    assert.ok(ok.choices.length > 0);
  });

  it('rpm trips with 429 rate_limit_exceeded, retry-after and x-ratelimit-* headers; served responses carry the same headers', async () => {
    const client = clientFor(gw, 'rpm');
    const first = await client.chat.completions.create({ model: MODEL, messages }).withResponse();
    assert.equal(first.response.headers.get('x-ratelimit-limit-requests'), '2');
    assert.equal(first.response.headers.get('x-ratelimit-remaining-requests'), '1');
    await client.chat.completions.create({ model: MODEL, messages });
    const err = await refusal(client.chat.completions.create({ model: MODEL, messages }));
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.equal(err.code, 'rate_limit_exceeded');
    const retryAfter = Number(err.headers?.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `retry-after ${retryAfter}`);
    assert.equal(err.headers?.get('x-ratelimit-limit-requests'), '2');
    assert.equal(err.headers?.get('x-ratelimit-remaining-requests'), '0');
  });

  it('the daily token quota trips with 429 quota_exceeded', async () => {
    // A small output cap, so that one request fits the day's 60 tokens and the quota fills
    // with what the requests used.
    const client = clientFor(gw, 'quota');
    let served = 0;
    let refused: unknown;
    for (let i = 0; i < 20 && refused === undefined; i += 1) {
      try {
        await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8 });
        served += 1;
      } catch (err) {
        refused = err;
      }
    }
    assert.ok(served >= 1, 'the first request fits the quota');
    assert.ok(refused instanceof OpenAI.RateLimitError, String(refused));
    assert.equal(refused.code, 'quota_exceeded');
  });

  it('a request the daily quota could never hold is 400 over_limit_capacity, naming the limit and a cap that fits, with no retry-after', async () => {
    // Its own max_tokens (1000) is more than the day's 60 could ever hold.
    const err = await refusal(clientFor(gw, 'quota').chat.completions.create({ model: MODEL, messages, max_tokens: 1000 }));
    assert.ok(err instanceof OpenAI.BadRequestError, String(err));
    assert.equal(err.code, 'over_limit_capacity');
    assert.match(err.message, /team "quota"'s limit of 60 tokens per day/);
    assert.match(err.message, /an output cap of at most \d+ would fit/);
    assert.equal(err.headers?.get('retry-after'), null);
  });

  it('a priced response carries x-switchyard-cost-usd, equal to its usage at the configured price, and counts in spend', async () => {
    const { data, response } = await clientFor(gw, 'free').chat.completions.create({ model: MODEL, messages }).withResponse();
    const expected = ((data.usage?.completion_tokens ?? 0) * OUTPUT_PRICE) / 1e6;
    assert.equal(Number(response.headers.get('x-switchyard-cost-usd')), expected);
    const text = await scrapeMetrics(gw.adminUrl as string);
    assert.ok((metricValue(text, 'switchyard_spend_usd_total', { team: 'free', key: 'free' }) ?? 0) >= expected, text);
  });

  it('a streamed request costs the same as the non-streamed one; a client that did not ask for usage gets no usage event', async () => {
    const client = clientFor(gw, 'free');
    const plain = await client.chat.completions.create({ model: MODEL, messages });
    const requestId = `stream-cost-${Date.now()}`;
    const stream = await client.chat.completions.create(
      { model: MODEL, messages, stream: true },
      { headers: { 'x-request-id': requestId } },
    );
    let text = '';
    for await (const chunk of stream) {
      assert.ok(chunk.choices.length > 0 || chunk.usage == null, `a usage-only event reached the client: ${JSON.stringify(chunk)}`);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(text, plain.choices[0]?.message.content);
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.equal(line.output_tokens, plain.usage?.completion_tokens);
    assert.equal(line.cost_micro_usd, (plain.usage?.completion_tokens ?? 0) * OUTPUT_PRICE);
    const asked = await client.chat.completions.create({ model: MODEL, messages, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of asked) usage = chunk.usage ?? usage;
    assert.equal(usage?.completion_tokens, plain.usage?.completion_tokens, 'a client that asked gets the usage event');
  });

  it('a streamed response carries its cost as an HTTP trailer, the same as the non-streamed header', async () => {
    const plain = await clientFor(gw, 'free').chat.completions.create({ model: MODEL, messages }).withResponse();
    const header = plain.response.headers.get('x-switchyard-cost-usd');
    assert.ok(header !== null);
    const { trailerAnnounced, trailers, body } = await streamWithTrailers(gw.url, keyOf('free'), { model: MODEL, messages, stream: true });
    assert.equal(trailerAnnounced, 'x-switchyard-cost-usd');
    assert.equal(trailers['x-switchyard-cost-usd'], header);
    assert.match(body, /data: \[DONE\]/);
  });

  it('a stream cut midway bills what was seen (not the worst case), marked partial and estimated', async () => {
    mock.addFault({ mode: 'cut_stream', after_chunks: 3, count: 1 });
    const requestId = `cut-${Date.now()}`;
    const stream = await clientFor(gw, 'free').chat.completions.create(
      { model: MODEL, messages, stream: true, max_tokens: 500 },
      { headers: { 'x-request-id': requestId } },
    );
    await assert.rejects(async () => {
      for await (const _ of stream);
    }, 'the client sees the stream end in an error');
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
    assert.equal(line.status, 'partial');
    assert.equal(line.usage_estimated, true);
    // A role event, then three content events: three output tokens seen (input is priced at 0).
    assert.equal(line.output_tokens, 3);
    assert.equal(line.cost_micro_usd, 3 * OUTPUT_PRICE, 'billed what was seen, far below the 500-token reservation');
  });

  it('50 concurrent requests against a budget that fits 10 serve at most 10; the rest get 402 budget_exceeded', async () => {
    const client = clientFor(gw, 'budget');
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () => client.chat.completions.create({ model: MODEL, messages, max_tokens: completionTokens })),
    );
    const served = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results
      .filter((r) => r.status === 'rejected')
      .map((r) => (r as PromiseRejectedResult).reason as InstanceType<typeof OpenAI.APIError>);
    assert.ok(served >= 1 && served <= 10, `served ${served}`);
    for (const err of refused) {
      assert.equal(err.status, 402, String(err));
      assert.equal(err.code, 'budget_exceeded');
    }
  });

  it('a budget refusal with budget left says the reservation is more than what is left, and the max_tokens that fits', async () => {
    await scantBudgetRefusal(gw);
  });

  it('/admin/status and the budget gauges show each team against its limits, with key ids and no keys', async () => {
    const res = await fetch(`${gw.adminUrl}/admin/status`);
    const text = await res.text();
    assert.ok(!text.includes(keyOf('budget')), 'no key in the status');
    const status = JSON.parse(text) as { governance: { teams: Record<string, any>; keys: Record<string, any> } };
    const budget = status.governance.teams.budget;
    assert.equal(budget.spendThisMonthMicroUsd.limit, 10 * completionTokens * OUTPUT_PRICE);
    assert.ok(budget.spendThisMonthMicroUsd.used > 0, JSON.stringify(budget));
    assert.equal(status.governance.teams.rpm.requestsThisMinute.limit, 2);
    assert.equal(status.governance.keys.rpm.team, 'rpm');
    const metrics = await scrapeMetrics(gw.adminUrl as string);
    assert.equal(
      metricValue(metrics, 'switchyard_budget_limit_usd', { team: 'budget' }),
      (10 * completionTokens * OUTPUT_PRICE) / 1e6,
      metrics,
    );
    assert.ok((metricValue(metrics, 'switchyard_budget_spent_usd', { team: 'budget' }) ?? 0) > 0, metrics);
  });

  it('over a budget with on_exceeded: warn, the request is served with x-switchyard-budget-warning and counted', async () => {
    const { response } = await clientFor(gw, 'warned').chat.completions.create({ model: MODEL, messages }).withResponse();
    assert.equal(response.headers.get('x-switchyard-budget-warning'), 'team:warned');
    const text = await scrapeMetrics(gw.adminUrl as string);
    assert.ok((metricValue(text, 'switchyard_budget_exceeded_total', { team: 'warned' }) ?? 0) >= 1, text);
  });

  it("changing a team's rpm on reload keeps its current count", async () => {
    const client = clientFor(gw, 'reloaded');
    await client.chat.completions.create({ model: MODEL, messages });
    await client.chat.completions.create({ model: MODEL, messages });
    const config = governedConfig();
    (config.teams as Record<string, unknown>).reloaded = { rate_limit: { rpm: 2 } };
    gw.writeConfig(config);
    const reload = await adminReload(gw.adminUrl as string);
    assert.equal(reload.body.result, 'applied', JSON.stringify(reload.body));
    const err = await refusal(client.chat.completions.create({ model: MODEL, messages }));
    assert.equal(err.code, 'rate_limit_exceeded', 'the two requests before the reload still count against the new limit');
  });

  it('a key withdrawn by a reload is refused on the keep-alive connection that used it', async () => {
    // One connection throughout: the gateway remembers a connection's last key (KeyMemo).
    const pool = new Pool(new URL(gw.url).origin, { connections: 1, pipelining: 1 });
    const ask = async (): Promise<number> => {
      const r = await pool.request({
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { authorization: `Bearer ${keyOf('free')}`, 'content-type': 'application/json' },
        body: chatBody(MODEL),
      });
      await r.body.text();
      return r.statusCode;
    };
    try {
      assert.deepEqual([await ask(), await ask()], [200, 200]);
      const config = governedConfig();
      config.keys = (config.keys as Array<{ id: string }>).filter((k) => k.id !== 'free');
      gw.writeConfig(config);
      assert.equal((await adminReload(gw.adminUrl as string)).body.result, 'applied');
      assert.equal(await ask(), 401);
      gw.writeConfig(governedConfig());
      assert.equal((await adminReload(gw.adminUrl as string)).body.result, 'applied');
      assert.equal(await ask(), 200, 'and accepted again once a reload brings it back');
    } finally {
      await pool.close();
    }
  });
});

describe('two gateway processes sharing one Redis', () => {
  let a: GatewayProcess;
  let b: GatewayProcess;
  const prefix = `switchyard-test-${randomUUID()}:`;

  before(async () => {
    mock ??= await startMockProvider({ name: 'east' });
    completionTokens ??= await learnCompletionTokens();
    const config = governedConfig({ governance: { store: 'redis', redis_url: 'redis://127.0.0.1:6379', key_prefix: prefix } });
    (config.teams as Record<string, unknown>).shared = { rate_limit: { rpm: 30 } };
    (config.keys as unknown[]).push(key('shared', 'shared'));
    [a, b] = await Promise.all([startGatewayProcess(config), startGatewayProcess(config)]);
  });

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await mock?.close();
  });

  it('a team with rpm 30 gets exactly 30 successes out of 60 across both (a sliding log, exact across replicas)', async () => {
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        postChat(i % 2 === 0 ? a.url : b.url, chatBody(MODEL), { authorization: `Bearer ${keyOf('shared')}` }),
      ),
    );
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, 30, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 429).length, 30);
  });

  it('a budget refusal with budget left says the reservation is more than what is left, and the max_tokens that fits', async () => {
    await scantBudgetRefusal(a);
  });
});

describe('the audit log of a real gateway', () => {
  it('records admissions, refusals, completions with their cost, and reloads, in a chain that verifies; one edited byte is named by line', async () => {
    mock ??= await startMockProvider({ name: 'east' });
    const own = await startMockProvider({ name: 'east' });
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'switchyard-audit-')), 'audit.jsonl');
      const config = governedConfig({ audit: { file } });
      (config.providers as Record<string, { base_url: string }>).east!.base_url = own.baseUrl;
      const gw = await startGatewayProcess(config);
      try {
        await clientFor(gw, 'free').chat.completions.create({ model: MODEL, messages });
        await refusal(clientFor(gw, 'llamas').chat.completions.create({ model: MODEL, messages }));
        await postChat(gw.url, chatBody(MODEL), { authorization: 'Bearer sy-wrong-key' });
        assert.equal((await adminReload(gw.adminUrl as string)).status, 200);
      } finally {
        await gw.stop();
      }
      const text = readFileSync(file, 'utf8');
      assert.ok(
        !text.includes(keyOf('free')) && !text.includes('sy-wrong-key') && !text.includes('hello governance'),
        'no key and no prompt in the audit log',
      );
      const records = text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const events = records.map((r) => `${r.event}:${r.decision ?? r.result ?? r.status}`);
      assert.ok(events.includes('request_started:admitted'), events.join(' '));
      assert.equal(records.filter((r) => r.event === 'request_started' && r.decision === 'refused').length, 2, events.join(' '));
      assert.ok(records.some((r) => r.event === 'request_started' && r.reason === 'model_not_allowed'));
      const completed = records.find((r) => r.event === 'request_completed');
      assert.ok(
        completed !== undefined && completed.status === 200 && completed.key_id === 'free' && completed.team === 'free',
        JSON.stringify(completed),
      );
      assert.equal(typeof completed.cost_micro_usd, 'number');
      assert.equal(records.filter((r) => r.event === 'reload').length, 2, 'start-up and the admin reload');
      for (const r of records) assert.match(String(r.id), /^[0-9A-HJKMNP-TV-Z]{26}$/);

      const ok = await runCli(['audit', 'verify', file]);
      assert.equal(ok.code, 0, ok.stderr + ok.stdout);
      const lines = text.split('\n');
      lines[2] = (lines[2] as string).replace('"event"', '"Event"');
      writeFileSync(file, lines.join('\n'));
      const broken = await runCli(['audit', 'verify', file]);
      assert.equal(broken.code, 1);
      assert.match(broken.stdout + broken.stderr, /line 3\b/);
    } finally {
      await own.close();
    }
  });
});
