import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import {
  bedrockAnswerStatus,
  type ProviderPool,
  type Relayed,
  type RelayResult,
  readBedrockAnswer,
  relay,
  translation,
} from '../../src/providers/index.js';
import type { RawHandler } from '../../src/providers/provider-pool.js';
import type { RelayRequest } from '../../src/providers/relay.js';

// The relay with a Bedrock upstream: a scripted pool drives the handler as undici would,
// with ConverseStream's binary event stream or Converse's error answers, and a real client
// connection over loopback reads what the gateway sent.

const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const EVENT_STREAM = [b('content-type'), b('application/vnd.amazon.eventstream')];

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

function frame(kind: 'event' | 'exception', type: string, payload: unknown): Buffer {
  return Buffer.from(
    codec.encode({
      headers: {
        ':message-type': { type: 'string', value: kind },
        [kind === 'event' ? ':event-type' : ':exception-type']: { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
      },
      body: Buffer.from(JSON.stringify(payload)),
    }),
  );
}

const ANSWER = Buffer.concat([
  frame('event', 'messageStart', { role: 'assistant' }),
  frame('event', 'contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hi there' } }),
  frame('event', 'contentBlockStop', { contentBlockIndex: 0 }),
  frame('event', 'messageStop', { stopReason: 'end_turn' }),
  frame('event', 'metadata', { usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 }, metrics: { latencyMs: 9 } }),
]);

function scripted(script: (h: RawHandler) => void): ProviderPool {
  const dispatch = (_call: unknown, h: RawHandler): void => {
    h.onConnect((err) => h.onError(err ?? new Error('aborted')));
    setImmediate(() => script(h));
  };
  return { dispatch } as unknown as ProviderPool;
}

type Options = Partial<Pick<RelayRequest, 'transform' | 'fallbackOn' | 'readAnswer' | 'maxEventBytes' | 'statusOfAnswer'>>;

interface Seen {
  readonly status: number;
  readonly body: string;
  readonly result: RelayResult;
  readonly relayed: Relayed | null;
}

let server: Server;
let next: { pool: ProviderPool; options: Options } | null = null;
let outcome: Promise<{ result: RelayResult; relayed: Relayed | null }> | null = null;

before(async () => {
  server = createServer((_req, res) => {
    const { pool, options } = next as NonNullable<typeof next>;
    outcome = new Promise((resolve) => {
      relay(
        {
          res,
          pool,
          providerName: 'bedrock-east',
          call: { method: 'POST', path: '/model/m/converse-stream', headers: {}, body: null, timeoutMs: 5000 },
          clientHeaders: { attribution: ['x-switchyard-provider', 'bedrock-east'], own: ['x-switchyard-request-id', 'r1'] },
          ...options,
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

async function through(pool: ProviderPool, options: Options): Promise<Seen> {
  next = { pool, options };
  const { port } = server.address() as AddressInfo;
  const seen = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
  const { result, relayed } = await (outcome as NonNullable<typeof outcome>);
  return { ...seen, result, relayed };
}

/** Bytes in pieces of `size`, the last frame's included: frames reach the relay cut anywhere. */
function inPieces(h: RawHandler, bytes: Buffer, size: number): void {
  for (let at = 0; at < bytes.length; at += size) h.onData(bytes.subarray(at, at + size));
}

describe('the relay with a Bedrock upstream', { timeout: 5000 }, () => {
  it('translates a ConverseStream, cut anywhere, into OpenAI chunks, and bills its metadata usage', async () => {
    const seen = await through(
      scripted((h) => {
        h.onHeaders(200, EVENT_STREAM, () => undefined, 'OK');
        inPieces(h, ANSWER, 7);
        h.onComplete(null);
      }),
      { transform: translation('bedrock', 'openai', true, { model: 'us.anthropic.claude-x' }) },
    );
    assert.equal(seen.status, 200);
    assert.match(seen.body, /"content":"Hi there"/);
    assert.match(seen.body, /"finish_reason":"stop"/);
    assert.match(seen.body, /"usage":\{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5/);
    assert.ok(seen.body.endsWith('data: [DONE]\n\n'));
    assert.equal(seen.relayed?.outcome, 'complete');
    assert.deepEqual(seen.relayed?.usage, { inputTokens: 3, outputTokens: 2 });
    assert.equal(seen.relayed?.events, 5);
    assert.match(seen.body, /"id":"bdrk_[0-9a-f]{24}"/);
    assert.match(seen.body, /"model":"us\.anthropic\.claude-x"/);
  });

  it('translates a whole Converse answer, naming the model it does not name, and bills its cache tokens', async () => {
    const converse = {
      output: { message: { role: 'assistant', content: [{ text: 'Done.' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 4, outputTokens: 2, totalTokens: 36, cacheReadInputTokens: 20, cacheWriteInputTokens: 10 },
      metrics: { latencyMs: 40 },
    };
    const seen = await through(
      scripted((h) => {
        h.onHeaders(200, [b('content-type'), b('application/json')], () => undefined, 'OK');
        h.onData(b(JSON.stringify(converse)));
        h.onComplete(null);
      }),
      { transform: translation('bedrock', 'anthropic', false, { model: 'anthropic.claude-y' }) },
    );
    const message = JSON.parse(seen.body);
    assert.equal(message.model, 'anthropic.claude-y');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Done.' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.usage, { input_tokens: 4, output_tokens: 2, cache_creation_input_tokens: 10, cache_read_input_tokens: 20 });
    assert.deepEqual(seen.relayed?.usage, { inputTokens: 34, outputTokens: 2, cacheReadTokens: 20, cacheWriteTokens: 10 });
  });

  it('ends the stream with stream_event_too_large when a frame is over max_event_bytes', async () => {
    const big = frame('event', 'contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'x'.repeat(4096) } });
    const seen = await through(
      scripted((h) => {
        h.onHeaders(200, EVENT_STREAM, () => undefined, 'OK');
        h.onData(frame('event', 'messageStart', { role: 'assistant' }));
        h.onData(big.subarray(0, 100));
        // A real upstream would go on; the relay has aborted it, and says why.
        setImmediate(() => h.onError(new Error('aborted')));
      }),
      { transform: translation('bedrock', 'anthropic', false, { maxEventBytes: 1024 }), maxEventBytes: 1024 },
    );
    assert.match(seen.body, /event: error\ndata: .*larger than max_event_bytes \(1024 bytes\)/);
    assert.equal(seen.relayed?.outcome, 'partial');
    assert.equal(seen.relayed?.reason, 'stream_event_too_large');
  });

  it("passes an exception frame on as the client's error event, and the stream is partial", async () => {
    const seen = await through(
      scripted((h) => {
        h.onHeaders(200, EVENT_STREAM, () => undefined, 'OK');
        h.onData(
          Buffer.concat([
            frame('event', 'messageStart', { role: 'assistant' }),
            frame('exception', 'throttlingException', { message: 'Slow down' }),
          ]),
        );
        h.onComplete(null);
      }),
      { transform: translation('bedrock', 'openai', false) },
    );
    assert.match(seen.body, /"type":"rate_limit_error"/);
    assert.match(seen.body, /Slow down/);
    assert.equal(seen.relayed?.outcome, 'partial');
  });

  it('fails over as context_length on a validation error saying the input is too long, on a route that asked', async () => {
    const seen = await through(
      scripted((h) => {
        h.onHeaders(
          400,
          [
            b('content-type'),
            b('application/json'),
            b('x-amzn-errortype'),
            b('ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/'),
          ],
          () => undefined,
          'Bad Request',
        );
        h.onData(b('{"message":"Input is too long for requested model."}'));
        h.onComplete(null);
      }),
      { transform: translation('bedrock', 'openai', false), fallbackOn: ['context_length'], readAnswer: readBedrockAnswer },
    );
    assert.equal(seen.result.kind, 'failed');
    if (seen.result.kind === 'failed') assert.equal(seen.result.reason, 'context_length');
  });

  it('fails over as a refused credential on a 400 whose type is a signature error', async () => {
    const seen = await through(
      scripted((h) => {
        h.onHeaders(
          400,
          [b('content-type'), b('application/json'), b('x-amzn-errortype'), b('InvalidSignatureException')],
          () => undefined,
          'Bad Request',
        );
        h.onData(b('{"message":"Signature expired"}'));
        h.onComplete(null);
      }),
      { transform: translation('bedrock', 'anthropic', false), readAnswer: readBedrockAnswer },
    );
    assert.equal(seen.result.kind, 'failed');
    if (seen.result.kind === 'failed') assert.equal(seen.result.reason, 'status_auth');
  });

  it("gives any other validation error to the client as a 400 in its protocol, with Bedrock's message", async () => {
    const seen = await through(
      scripted((h) => {
        h.onHeaders(
          400,
          [b('content-type'), b('application/json'), b('x-amzn-errortype'), b('ValidationException')],
          () => undefined,
          'Bad Request',
        );
        h.onData(b('{"message":"The model returned the following errors: messages: roles must alternate"}'));
        h.onComplete(null);
      }),
      { transform: translation('bedrock', 'openai', false), fallbackOn: ['context_length'], readAnswer: readBedrockAnswer },
    );
    assert.equal(seen.status, 400);
    assert.deepEqual(JSON.parse(seen.body), {
      error: {
        message: 'The model returned the following errors: messages: roles must alternate',
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });
  });

  it('fails over by what the error type stands for: a quota 400 as a 429, a model error 424 as a 5xx, a signature 400 as a refused credential', async () => {
    const cases: [number, string, string][] = [
      [400, 'ServiceQuotaExceededException:http://internal.amazon.com/coral/', 'status_429'],
      [424, 'ModelErrorException', 'status_5xx'],
      [408, 'ModelTimeoutException', 'status_5xx'],
      [400, 'InvalidSignatureException', 'status_auth'],
    ];
    for (const [status, type, reason] of cases) {
      const seen = await through(
        scripted((h) => {
          h.onHeaders(status, [b('content-type'), b('application/json'), b('x-amzn-errortype'), b(type)], () => undefined, '');
          h.onData(b('{"message":"m"}'));
          h.onComplete(null);
        }),
        { transform: translation('bedrock', 'openai', false), readAnswer: readBedrockAnswer, statusOfAnswer: bedrockAnswerStatus },
      );
      assert.equal(seen.result.kind, 'failed', type);
      if (seen.result.kind === 'failed') {
        assert.equal(seen.result.reason, reason, type);
        assert.equal(seen.result.answer?.status, status, 'the answer keeps the status the provider sent');
      }
    }
  });
});
