import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  type AnswerTransform,
  composeTransforms,
  type ProviderPool,
  type Relayed,
  type RelayResult,
  type RelayTransform,
  relay,
  type TokenUsage,
  withoutUsageEvent,
} from '../../src/providers/index.js';
import type { RawHandler } from '../../src/providers/provider-pool.js';
import type { FailedAttempt } from '../../src/providers/upstream-failure.js';

// The relay against a scripted upstream (a pool whose dispatch drives the handler as undici
// would) and a real client connection, so what the client gets is read off the wire.

const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const JSON_TYPE = [b('content-type'), b('application/json')];
const SSE_TYPE = [b('content-type'), b('text/event-stream')];

const cost = (usage: TokenUsage | null): Record<string, string> | null =>
  usage === null ? null : { 'x-switchyard-cost-usd': String(usage.inputTokens * 10 + usage.outputTokens) };

/** Headers from the usage, as the request path adds them: a stack of one transform over the translation (composeTransforms). */
function withUsageHeaders(
  inner: RelayTransform | undefined,
  usageHeaders: AnswerTransform['usageHeaders'],
  trailers?: string,
): RelayTransform {
  return composeTransforms(inner, [{ usageHeaders, trailers }]) as RelayTransform;
}

/** A pool that answers every call with `script`, a turn after dispatch (as undici does). */
function scripted(script: (h: RawHandler) => void): ProviderPool {
  const dispatch = (_call: unknown, h: RawHandler): void => {
    h.onConnect((err) => h.onError(err ?? new Error('aborted')));
    setImmediate(() => script(h));
  };
  return { dispatch } as unknown as ProviderPool;
}

interface Seen {
  readonly status: number;
  readonly rawHeaders: string[];
  readonly body: Buffer;
  readonly trailers: NodeJS.Dict<string>;
  readonly result: RelayResult;
  readonly relayed: Relayed | null;
}

let server: Server;
let next: { pool: ProviderPool; transform: RelayTransform | undefined } | null = null;
let outcome: Promise<{ result: RelayResult; relayed: Relayed | null }> | null = null;

before(async () => {
  server = createServer((_req, res) => {
    const { pool, transform } = next as NonNullable<typeof next>;
    outcome = new Promise((resolve) => {
      relay(
        {
          res,
          pool,
          providerName: 'east',
          call: { method: 'POST', path: '/chat/completions', headers: {}, body: null, timeoutMs: 5000 },
          clientHeaders: { attribution: ['x-switchyard-provider', 'east'], own: ['x-switchyard-request-id', 'r1'] },
          ...(transform === undefined ? {} : { transform }),
        },
        (result) => {
          if (result.kind !== 'committed') {
            res.writeHead(599).end();
            resolve({ result, relayed: null });
          } else result.onFinished((relayed) => resolve({ result, relayed }));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

after(() => {
  server.closeAllConnections();
  server.close();
});

async function through(pool: ProviderPool, transform?: RelayTransform): Promise<Seen> {
  next = { pool, transform };
  const { port } = server.address() as AddressInfo;
  const seen = await new Promise<Omit<Seen, 'result' | 'relayed'>>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks), trailers: res.trailers }),
      );
    });
    req.on('error', reject);
    req.end();
  });
  const { result, relayed } = await (outcome as NonNullable<typeof outcome>);
  return { ...seen, result, relayed };
}

const header = (seen: Seen, name: string): string | undefined => {
  const at = seen.rawHeaders.findIndex((n, i) => i % 2 === 0 && n.toLowerCase() === name);
  return at === -1 ? undefined : seen.rawHeaders[at + 1];
};

const plainBody = (filler: number): Buffer =>
  b(JSON.stringify({ id: 'c1', text: 'x'.repeat(filler), usage: { prompt_tokens: 3, completion_tokens: 4 } }));

// A relay that never answers the client fails its test rather than hanging the run.
describe('the relay with its policies as transforms', { timeout: 5000 }, () => {
  it('a priced plain answer with no other transform: its bytes as they came, the cost header after the gateway headers', async () => {
    const body = plainBody(100);
    const seen = await through(
      scripted((h) => {
        h.onHeaders(200, JSON_TYPE, () => undefined, 'OK');
        h.onData(body.subarray(0, 50));
        h.onData(body.subarray(50));
        h.onComplete(null);
      }),
      withUsageHeaders(undefined, cost),
    );
    assert.equal(seen.status, 200);
    assert.ok(seen.body.equals(body));
    const names = seen.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    const at = (n: string): number => names.indexOf(n);
    assert.ok(at('x-switchyard-request-id') < at('x-switchyard-cost-usd'), names.join(','));
    assert.equal(header(seen, 'x-switchyard-cost-usd'), '34');
    assert.equal(header(seen, 'content-length'), String(body.length));
    assert.deepEqual(seen.relayed?.usage, { inputTokens: 3, outputTokens: 4 });
  });

  it('a priced plain answer over the buffering bound still takes the pass-through: it streams on, without a cost header', async () => {
    const body = plainBody(1024 * 1024 + 10);
    const seen = await through(
      scripted((h) => {
        h.onHeaders(200, JSON_TYPE, () => undefined, 'OK');
        for (let i = 0; i < body.length; i += 64 * 1024) h.onData(body.subarray(i, i + 64 * 1024));
        h.onComplete(null);
      }),
      withUsageHeaders(undefined, cost),
    );
    assert.ok(seen.body.equals(body), 'the same bytes');
    assert.equal(header(seen, 'x-switchyard-cost-usd'), undefined, 'committed before its usage was known');
    assert.equal(header(seen, 'content-length'), undefined);
    assert.deepEqual(seen.relayed?.usage, { inputTokens: 3, outputTokens: 4 }, 'read from the tail');
  });

  it('a priced stream without the usage event: the event is left out, the cost is announced and sent as a trailer', async () => {
    const events = [
      'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":5}}\n\n',
      'data: [DONE]\n\n',
    ];
    const seen = await through(
      scripted((h) => {
        h.onHeaders(200, SSE_TYPE, () => undefined, 'OK');
        for (const e of events) h.onData(b(e));
        h.onComplete(null);
      }),
      withUsageHeaders(withoutUsageEvent(), cost, 'x-switchyard-cost-usd'),
    );
    assert.equal(seen.body.toString(), `${events[0]}${events[2]}`);
    assert.equal(header(seen, 'trailer'), 'x-switchyard-cost-usd');
    assert.equal(seen.trailers['x-switchyard-cost-usd'], '25');
    assert.deepEqual(seen.relayed?.usage, { inputTokens: 2, outputTokens: 5 });
    assert.equal(seen.relayed?.outcome, 'complete');
  });

  it("a filtered stream cut midway ends with OpenAI's error event, and bills what it saw", async () => {
    const seen = await through(
      scripted((h) => {
        h.onHeaders(200, SSE_TYPE, () => undefined, 'OK');
        h.onData(b('data: {"choices":[{"delta":{"content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\ndata: {"cho'));
        h.onError(Object.assign(new Error('socket'), { code: 'UND_ERR_SOCKET' }));
      }),
      withoutUsageEvent(),
    );
    const text = seen.body.toString();
    assert.match(text, /"content":"hi"/);
    assert.ok(!text.includes('"cho\n'), 'the half event is not relayed');
    assert.match(text, /data: \{"error":\{[^\n]*"code":"stream_interrupted"[^\n]*\}\}\n\n$/);
    assert.match(text, /the upstream stream from provider east was interrupted/);
    assert.equal(seen.relayed?.outcome, 'partial');
    assert.deepEqual(seen.relayed?.usage, { inputTokens: 1, outputTokens: 1 });
  });

  it('an upstream error before anything was relayed fails over with the reason of its code', async () => {
    const seen = await through(scripted((h) => h.onError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))));
    assert.deepEqual(seen.result, { kind: 'failed', reason: 'connect_error', detail: 'connection refused' });
  });

  it("a 429 fails over with the provider's retry-after", async () => {
    const seen = await through(
      scripted((h) => {
        h.onHeaders(429, [b('Retry-After'), b('3')], () => undefined, 'Too Many Requests');
        h.onComplete(null);
      }),
    );
    const { answer, ...failed } = seen.result as FailedAttempt;
    assert.deepEqual(failed, { kind: 'failed', reason: 'status_429', detail: 'HTTP 429', retryAfterMs: 3000 });
    assert.equal(answer?.status, 429);
    assert.equal(answer?.retryAfter, '3', 'the answer keeps its retry-after for the client');
  });
});
