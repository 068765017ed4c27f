import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import OpenAI from 'openai';
import { adminStatus } from '../support/admin.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { metricValue, scrapeMetrics } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// A stream is read as server-sent events the way the SSE format defines them, whatever the
// upstream's framing (real servers found: CRLF from Python, JSON spaced by json.dumps, an
// event with no end), and an error event the upstream sends mid-stream is recorded as what
// it is. A scripted upstream on loopback plays each case, picked by the request's model;
// the client is the official openai package.

const resources = fileResources('switchyard-stream-reader-');
/** USD per million output tokens: 1000 micro-USD per token. */
const OUTPUT_PRICE = 1000;
const MAX_TOKENS = 500;
const HUGE_EVENT_BYTES = 60 * 1024 * 1024;

const chunk = (choices: unknown[], usage: unknown = null) =>
  JSON.stringify({ id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 0, model: 'm', choices, usage });
const delta = (content: string) => [{ index: 0, delta: { content }, finish_reason: null }];
const finish = [{ index: 0, delta: {}, finish_reason: 'stop' }];
const USAGE = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
/** Python's json.dumps: a space after every `,` and `:`. */
const spaced = (json: string) => JSON.stringify(JSON.parse(json), null, 1).replace(/\n */g, ' ');

const WORDS = ['Hello', ' from', ' upstream'];

/** The events of each scripted stream, as written: each string is one write. */
const scripts: Record<string, string[]> = {
  crlf: [
    ...WORDS.map((w) => `data: ${chunk(delta(w))}\r\n\r\n`),
    // A CRLF split between two writes, and an event split mid-line.
    `data: ${chunk(finish)}\r\n\r`,
    `\ndata: ${chunk([], USAGE).slice(0, 30)}`,
    `${chunk([], USAGE).slice(30)}\r\n\r\n`,
    'data: [DONE]\r\n\r\n',
  ],
  spaced: [
    ...WORDS.map((w) => `data: ${spaced(chunk(delta(w)))}\n\n`),
    `data: ${spaced(chunk(finish))}\n\n`,
    `data: ${spaced(chunk([], USAGE))}\n\n`,
    'data: [DONE]\n\n',
  ],
  'data-error': [
    ...WORDS.map((w) => `data: ${chunk(delta(w))}\n\n`),
    `data: ${JSON.stringify({ error: { message: 'the model is overloaded', type: 'server_error', param: null, code: 'overloaded' } })}\n\n`,
  ],
  'event-error': [
    // Usage seen before the error: the bill is that, not an estimate.
    `data: ${chunk(delta('Hello'), { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 })}\n\n`,
    `event: error\ndata: ${JSON.stringify({ error: { message: 'the model is overloaded', type: 'server_error' } })}\n\n`,
    'data: [DONE]\n\n',
  ],
};

interface Scripted {
  readonly baseUrl: string;
  close(): Promise<void>;
}

async function startScriptedUpstream(): Promise<Scripted> {
  const sockets = new Set<Socket>();
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      const model = (JSON.parse(body) as { model: string }).model;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (model.startsWith('huge')) return void writeHugeEvent(res);
      void writeScript(res, scripts[model] ?? []);
    });
  };
  const server = createServer(handle);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function writeScript(res: ServerResponse, writes: string[]): Promise<void> {
  for (const w of writes) {
    if (res.destroyed) return;
    res.write(w);
    await delay(5); // separate reads at the gateway, so splits stay splits
  }
  res.end();
}

/** One event of 60 MB that never reaches its empty line, written as fast as the gateway reads it. */
function writeHugeEvent(res: ServerResponse): void {
  const block = Buffer.alloc(64 * 1024, 0x78);
  let sent = 0;
  res.on('error', () => {});
  const pump = (): void => {
    while (!res.destroyed && sent < HUGE_EVENT_BYTES) {
      sent += block.length;
      if (!res.write(sent === block.length ? Buffer.concat([Buffer.from('data: '), block]) : block)) {
        res.once('drain', pump);
        return;
      }
    }
    if (!res.destroyed) res.end();
  };
  pump();
}

let gw: GatewayProcess;
let client: OpenAI;

before(async () => {
  const upstream = await startScriptedUpstream();
  resources.addUpstream(() => upstream.close());
  // One provider per case (each its own identity, so its own breaker): one failure opens it.
  const names = ['crlf', 'spaced', 'huge', 'huge-usage', 'data-error', 'event-error'];
  const config = baseConfig(
    Object.fromEntries(names.map((n) => [n, `${upstream.baseUrl}/${n}/v1`])),
    Object.fromEntries(names.map((n) => [n, { candidates: [{ provider: n }] }])),
    {
      resilience: { breaker: { failure_threshold: 1 } },
      pricing: { models: Object.fromEntries(names.map((n) => [n, { input_usd_per_mtok: 0, output_usd_per_mtok: OUTPUT_PRICE }])) },
    },
  );
  gw = await resources.startGw(config);
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30_000 });
});

const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello' }];

async function accessLine(requestId: string): Promise<Record<string, unknown>> {
  return gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
}

/** The gateway's resident set, from /proc (Linux); null where there is none. */
function rssBytes(pid: number): number | null {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

describe('a stream read as server-sent events, whatever its framing', () => {
  for (const model of ['crlf', 'spaced']) {
    it(`a ${model === 'crlf' ? 'CRLF-framed' : 'spaced-JSON'} stream reaches the openai client whole, without the usage chunk it did not ask for`, async () => {
      const requestId = `${model}-${Date.now()}`;
      const stream = await client.chat.completions.create({ model, messages, stream: true }, { headers: { 'x-request-id': requestId } });
      let text = '';
      let chunks = 0;
      for await (const c of stream) {
        chunks += 1;
        // The loop every client writes: a leaked usage-only chunk (choices: []) crashes it.
        text += c.choices[0]!.delta.content ?? '';
        assert.equal(c.usage ?? null, null, 'no usage reaches a client that did not ask');
      }
      assert.equal(text, WORDS.join(''));
      assert.equal(chunks, WORDS.length + 1, 'every content chunk and the finish chunk');
      const line = await accessLine(requestId);
      assert.equal(line.status, 200);
      assert.equal(line.output_tokens, USAGE.completion_tokens, 'billed on the usage chunk taken out');
    });
  }

  it('a CRLF-framed stream reaches a client that asked for usage byte for byte, usage chunk included', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'crlf', messages, stream: true, stream_options: { include_usage: true } }),
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(await res.text(), (scripts.crlf ?? []).join(''));
  });

  for (const model of ['huge', 'huge-usage']) {
    const asked = model === 'huge-usage';
    it(`a 60 MB event without its empty line ends the stream with stream_event_too_large (${asked ? 'relayed as it is' : 'usage chunk filtered'}), while the gateway keeps answering and its memory stays bounded`, async () => {
      const pid = gw.child.pid as number;
      const rssBefore = rssBytes(pid);
      let rssMax = rssBefore ?? 0;
      let healthChecks = 0;
      let streaming = true;
      const probing = (async () => {
        for (let i = 0; streaming && i < 600; i++) {
          // Generous: only a stalled event loop misses it.
          const health = await fetch(`${gw.url}/healthz`, { signal: AbortSignal.timeout(5000) });
          assert.equal(health.status, 200);
          await health.arrayBuffer();
          healthChecks += 1;
          rssMax = Math.max(rssMax, rssBytes(pid) ?? 0);
          await delay(50);
        }
      })();
      const requestId = `${model}-${Date.now()}`;
      const stream = await client.chat.completions.create(
        { model, messages, stream: true, ...(asked ? { stream_options: { include_usage: true } } : {}) },
        { headers: { 'x-request-id': requestId } },
      );
      const error = await (async () => {
        try {
          for await (const _ of stream);
        } catch (err) {
          return err;
        }
        return null;
      })();
      streaming = false;
      await probing;
      assert.ok(error instanceof OpenAI.APIError, `the client sees the gateway's error event: ${String(error)}`);
      assert.equal(error.code, 'stream_event_too_large');
      assert.match(error.message, /max_event_bytes \(1048576 bytes\)/);
      const line = await accessLine(requestId);
      assert.equal(line.status, 'partial');
      assert.equal(line.reason, 'stream_event_too_large');
      assert.ok(healthChecks >= 1);
      if (rssBefore !== null) assert.ok(rssMax - rssBefore < 256 * 1024 * 1024, `RSS grew by ${Math.round((rssMax - rssBefore) / 1e6)} MB`);
      const health = await fetch(`${gw.url}/healthz`, { signal: AbortSignal.timeout(5000) });
      assert.equal(health.status, 200);
    });
  }
});

describe('an error event the upstream sends mid-stream', () => {
  const cases: Array<[string, string, (line: Record<string, unknown>) => void]> = [
    [
      'data-error',
      'a data line with an error object, before any usage: billed the estimate of what was delivered',
      (line) => {
        assert.equal(line.usage_estimated, true);
        assert.ok(typeof line.cost_micro_usd === 'number' && line.cost_micro_usd > 0, String(line.cost_micro_usd));
      },
    ],
    [
      'event-error',
      'an `event: error` after a chunk that reported usage: billed that usage',
      (line) => {
        assert.equal(line.usage_estimated, undefined);
        assert.equal(line.output_tokens, 2);
        assert.equal(line.cost_micro_usd, 2 * OUTPUT_PRICE);
      },
    ],
  ];
  for (const [model, what, billed] of cases) {
    it(`${what}; relayed to the client, logged partial with its reason, and a breaker failure`, async () => {
      const requestId = `${model}-${Date.now()}`;
      const stream = await client.chat.completions.create(
        { model, messages, stream: true, max_tokens: MAX_TOKENS },
        { headers: { 'x-request-id': requestId } },
      );
      let text = '';
      const error = await (async () => {
        try {
          for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
        } catch (err) {
          return err;
        }
        return null;
      })();
      assert.ok(error instanceof OpenAI.APIError, `the upstream's error reaches the client: ${String(error)}`);
      assert.match(error.message, /the model is overloaded/);
      assert.ok(text.startsWith('Hello'), text);
      const line = await accessLine(requestId);
      assert.equal(line.status, 'partial');
      assert.equal(line.partial, true);
      assert.equal(line.reason, 'stream_interrupted');
      billed(line);
      assert.ok((line.cost_micro_usd as number) < MAX_TOKENS * OUTPUT_PRICE, 'never the whole reservation');
      const status = await adminStatus(gw.adminUrl as string);
      const breaker = status.body.providers.find((p) => p.name === model)?.breaker as { state: string } | null;
      assert.equal(breaker?.state, 'open', `one failure opens it at failure_threshold 1: ${JSON.stringify(breaker)}`);
      const metrics = await scrapeMetrics(gw.url);
      assert.equal(metricValue(metrics, 'switchyard_requests_total', { model, status: 'partial' }), 1, 'counted in the error rate');
    });
  }
});
