import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { hashKey, reservationMicroUsd } from '../../src/governance/index.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, startGatewayProcess } from '../support/gateway-process.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';

// A real gateway over an upstream that reports what it likes: usage that is not sane
// (a negative prompt, 1e18 tokens) is billed as missing usage, never as a refund or a
// fortune, and counted; an upstream's refusal or redirect costs nothing. Both stores.

const MODEL = 'gpt-4o-mini';
const API_KEY = `sy-test-sanity-${'k'.repeat(8)}`;
const TEAM = 'sane';
/** 1 micro-USD per input token, 1000 per output token: costs are whole numbers. */
const PRICE = { input_usd_per_mtok: 1, output_usd_per_mtok: 1000 };
const MAX_TOKENS = 50;

/** What the upstream answers next; one entry per request, then `ok`. */
type Answer =
  | { readonly kind: 'usage'; readonly promptTokens: number }
  | { readonly kind: 'status'; readonly status: number }
  | { readonly kind: 'no_usage' }
  | { readonly kind: 'ok' };

interface Upstream {
  readonly baseUrl: string;
  readonly next: Answer[];
  close(): Promise<void>;
}

/** An OpenAI-compatible upstream on loopback that answers each request as the test scripted it. */
async function startUpstream(): Promise<Upstream> {
  const next: Answer[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      text += c;
    });
    req.on('end', () => answer(next.shift() ?? { kind: 'ok' }, JSON.parse(text) as { stream?: boolean }, res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    next,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function answer(a: Answer, body: { stream?: boolean }, res: ServerResponse): void {
  if (a.kind === 'status') {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (a.status === 302) headers.location = 'http://127.0.0.1:1/elsewhere';
    res.writeHead(a.status, headers);
    res.end(JSON.stringify({ error: { message: `scripted ${a.status}`, type: 'invalid_request_error', code: null } }));
    return;
  }
  const usage = { prompt_tokens: a.kind === 'usage' ? a.promptTokens : 10, completion_tokens: 5, total_tokens: 15 };
  const id = 'chatcmpl-sanity';
  if (body.stream === true) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }, null));
    res.write(chunk({ content: 'hi' }, null));
    res.write(chunk({}, 'stop'));
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id,
      object: 'chat.completion',
      created: 1,
      model: MODEL,
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null }, finish_reason: 'stop' }],
      ...(a.kind === 'no_usage' ? {} : { usage }),
    }),
  );
}

/** A chat request (OpenAI, or Anthropic Messages: translated to the OpenAI upstream) and its record. */
interface Sent {
  readonly status: number;
  readonly bodyBytes: number;
  readonly line: Record<string, unknown>;
  /** The response's `x-switchyard-cost-usd` header (a plain response's; a stream's goes as a trailer). */
  readonly costHeader: string | null;
}

async function send(gw: GatewayProcess, protocol: 'openai' | 'anthropic', stream: boolean): Promise<Sent> {
  const requestId = `sanity-${randomUUID()}`;
  const body = JSON.stringify({ model: MODEL, max_tokens: MAX_TOKENS, stream, messages: [{ role: 'user', content: 'a sanity probe' }] });
  const res = await fetch(`${gw.url}${protocol === 'openai' ? '/v1/chat/completions' : '/v1/messages'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}`, 'x-request-id': requestId },
    body,
  });
  await res.text();
  const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
  return { status: res.status, bodyBytes: Buffer.byteLength(body), line, costHeader: res.headers.get('x-switchyard-cost-usd') };
}

/** What the pre-check reserved for a request of `bodyBytes`: what missing usage is billed. */
function reservationOf(bodyBytes: number): number {
  return reservationMicroUsd({ [MODEL]: PRICE }, [{ provider: 'east', model: MODEL }], Math.ceil(bodyBytes / 4), MAX_TOKENS).costMicroUsd;
}

interface Books {
  readonly spentMicroUsd: number;
  readonly reservedMicroUsd: number;
  readonly requestsThisMinute: number;
  readonly tokensToday: number;
}

async function books(gw: GatewayProcess): Promise<Books> {
  const status = (await (await fetch(`${gw.adminUrl}/admin/status`)).json()) as { governance: { teams: Record<string, any> } };
  const t = status.governance.teams[TEAM];
  return {
    spentMicroUsd: t.spendThisMonthMicroUsd.used,
    reservedMicroUsd: t.spendThisMonthMicroUsd.reservedMicroUsd,
    requestsThisMinute: t.requestsThisMinute.used,
    tokensToday: t.tokensToday.used,
  };
}

async function invalidCount(gw: GatewayProcess): Promise<number> {
  return metricValue(await scrapeMetrics(gw.adminUrl as string), 'switchyard_usage_invalid_total', { provider: 'east' }) ?? 0;
}

async function missingCount(gw: GatewayProcess): Promise<number> {
  return metricValue(await scrapeMetrics(gw.adminUrl as string), 'switchyard_usage_missing_total', { provider: 'east' }) ?? 0;
}

function usageSuite(store: 'memory' | 'redis'): void {
  describe(`usage sanity on a real gateway (${store} store)`, () => {
    let upstream: Upstream;
    let gw: GatewayProcess;

    before(async () => {
      upstream = await startUpstream();
      const governance =
        store === 'redis'
          ? { store: 'redis', redis_url: 'redis://127.0.0.1:6379', key_prefix: `switchyard-test-${randomUUID()}:` }
          : { store: 'memory' };
      gw = await startGatewayProcess(
        baseConfig(
          { east: upstream.baseUrl },
          { [MODEL]: { candidates: [{ provider: 'east' }] } },
          {
            pricing: { models: { [MODEL]: PRICE } },
            teams: { [TEAM]: { budget: { usd_per_month: 1000, on_exceeded: 'block' } } },
            keys: [{ id: 'sane-key', team: TEAM, sha256: hashKey(API_KEY) }],
            governance,
          },
        ),
      );
    });

    after(async () => {
      await gw?.stop();
      await upstream?.close();
    });

    /** Sends one request whose upstream reports `promptTokens`, and checks it was billed its reservation and counted. */
    async function billedAsMissing(protocol: 'openai' | 'anthropic', stream: boolean, promptTokens: number): Promise<void> {
      const before = await books(gw);
      const invalidBefore = await invalidCount(gw);
      upstream.next.push({ kind: 'usage', promptTokens });
      const sent = await send(gw, protocol, stream);
      assert.equal(sent.status, 200);
      const reserved = reservationOf(sent.bodyBytes);
      assert.equal(sent.line.cost_micro_usd, reserved, `billed its reservation: ${JSON.stringify(sent.line)}`);
      assert.equal(sent.line.input_tokens, undefined, 'the insane usage is not recorded as the usage');
      const after = await books(gw);
      assert.equal(after.spentMicroUsd - before.spentMicroUsd, reserved, 'the month took the reservation, not a refund');
      assert.ok(after.spentMicroUsd > 0);
      assert.equal(after.reservedMicroUsd, 0);
      assert.equal(await invalidCount(gw), invalidBefore + 1, 'switchyard_usage_invalid_total{provider} counted it');
      // The cost header shows what settle bills by: no cost is read from a usage it refused.
      if (!stream) assert.equal(sent.costHeader, null, 'no cost header from an insane usage');
    }

    it('invariant "usage is trusted only when sane": a streamed prompt_tokens of -1e8 is billed its reservation, not refunded, and counted', async () => {
      await billedAsMissing('openai', true, -1e8);
    });

    it('invariant "usage is trusted only when sane": a plain (translated) prompt_tokens of -1e8 is billed its reservation and counted', async () => {
      await billedAsMissing('anthropic', false, -1e8);
    });

    it('invariant "usage is trusted only when sane": prompt_tokens of 1e18, plain or streamed, is billed its reservation and counted', async () => {
      await billedAsMissing('openai', false, 1e18);
      await billedAsMissing('openai', true, 1e18);
    });

    it('a translated answer that reports no usage is billed its reservation, not zero, and counted', async () => {
      const before = await books(gw);
      const missingBefore = await missingCount(gw);
      upstream.next.push({ kind: 'no_usage' });
      const sent = await send(gw, 'anthropic', false);
      assert.equal(sent.status, 200);
      const reserved = reservationOf(sent.bodyBytes);
      assert.equal(sent.line.cost_micro_usd, reserved, JSON.stringify(sent.line));
      assert.equal((await books(gw)).spentMicroUsd - before.spentMicroUsd, reserved);
      assert.equal(await missingCount(gw), missingBefore + 1, 'switchyard_usage_missing_total{provider} counted it');
    });

    it('sane usage is billed as reported', async () => {
      const before = await books(gw);
      const sent = await send(gw, 'openai', false);
      assert.equal(sent.line.cost_micro_usd, 10 * 1 + 5 * 1000);
      assert.equal(sent.costHeader, '0.005010', 'a sane usage shows its cost');
      assert.equal(sent.line.input_tokens, 10);
      assert.equal((await books(gw)).spentMicroUsd - before.spentMicroUsd, 5010);
    });

    it('invariant "a non-success answer costs nothing": an upstream 400, 401 or 302 costs 0, leaves the month unchanged and still counts as a request', async () => {
      for (const status of [400, 401, 302]) {
        const before = await books(gw);
        upstream.next.push({ kind: 'status', status });
        const sent = await send(gw, 'openai', false);
        // An upstream 401 is about the gateway's credential: its client is told 502 upstream_auth_failed, with no cost on its line.
        assert.equal(sent.status, status === 401 ? 502 : status);
        assert.equal(sent.line.cost_micro_usd ?? 0, 0, `${status}: ${JSON.stringify(sent.line)}`);
        const after = await books(gw);
        assert.equal(after.spentMicroUsd, before.spentMicroUsd, `${status}: the month's spend is unchanged`);
        assert.equal(after.reservedMicroUsd, 0, `${status}: the reservation was given back`);
        assert.equal(after.tokensToday, before.tokensToday, `${status}: no tokens were booked`);
        assert.equal(after.requestsThisMinute, before.requestsThisMinute + 1, `${status}: the request still counts (rpm)`);
      }
    });

    it('insane usage is logged at most once a minute per provider, naming the provider and the fault, never the body', async () => {
      const warnings = gw
        .logs()
        .filter((l) => typeof l.msg === 'string' && l.msg.startsWith('the upstream reported usage that is not sane'));
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      const [w] = warnings as [Record<string, unknown>];
      assert.equal(w.provider, 'east');
      assert.equal(w.fault, 'not_a_count');
      assert.ok(!JSON.stringify(w).includes('sanity probe'), 'no prompt in the warning');
    });

    it('the spend counter and the budget gauge agree', async () => {
      const metrics = await scrapeMetrics(gw.adminUrl as string);
      const spend = metricValue(metrics, 'switchyard_spend_usd_total', { team: TEAM }) ?? 0;
      const gauge = metricValue(metrics, 'switchyard_budget_spent_usd', { team: TEAM }) ?? -1;
      assert.ok(spend > 0);
      assert.ok(Math.abs(spend - gauge) < 1e-9, `spend ${spend}, gauge ${gauge}`);
    });
  });
}

usageSuite('memory');
usageSuite('redis');
