import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AnswerBody,
  classFailure,
  FAILURE_BY_CODE,
  keyRefusedFailure,
  OutOfTime,
  readGeminiAnswer,
  retryAfterOf,
  statusFailure,
  TooLargeToTranslate,
  upstreamFailure,
  upstreamMessage,
} from '../../src/providers/upstream-failure.js';

const coded = (code: unknown): Error => Object.assign(new Error('boom'), { code });

describe('an upstream error told to the failover loop', () => {
  it('each undici and socket code the gateway knows gives its reason and the detail clients read', () => {
    const expected: Record<string, [string, string]> = {
      UND_ERR_HEADERS_TIMEOUT: ['timeout', 'timed out waiting for a response'],
      UND_ERR_BODY_TIMEOUT: ['timeout', 'timed out waiting for a response'],
      UND_ERR_CONNECT_TIMEOUT: ['timeout', 'timed out connecting'],
      ECONNREFUSED: ['connect_error', 'connection refused'],
      UND_ERR_CLOSED: ['connect_error', 'connection pool closed'],
      UND_ERR_DESTROYED: ['connect_error', 'connection pool closed'],
      UND_ERR_SOCKET: ['connect_error', 'connection closed by the provider'],
      ECONNRESET: ['connect_error', 'connection closed by the provider'],
      EPIPE: ['connect_error', 'connection closed by the provider'],
      ENOTFOUND: ['connect_error', 'provider host not found'],
      EAI_AGAIN: ['connect_error', 'provider host not found'],
    };
    assert.deepEqual(Object.keys(FAILURE_BY_CODE).sort(), Object.keys(expected).sort(), 'no code added or lost');
    for (const [code, [reason, detail]] of Object.entries(expected)) {
      assert.deepEqual(upstreamFailure(coded(code)), { kind: 'failed', reason, detail }, code);
    }
  });

  it('an unknown code is a connect_error naming the code; no code at all is "request failed"', () => {
    assert.deepEqual(upstreamFailure(coded('UND_ERR_ABORTED')), {
      kind: 'failed',
      reason: 'connect_error',
      detail: 'request failed (UND_ERR_ABORTED)',
    });
    for (const err of [new Error('no code'), undefined, null, 'a string']) {
      assert.deepEqual(upstreamFailure(err), { kind: 'failed', reason: 'connect_error', detail: 'request failed' }, String(err));
    }
  });

  it("a code that is the name of an Object property is not found on the table's prototype", () => {
    for (const code of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      assert.equal(upstreamFailure(coded(code)).detail, `request failed (${code})`, code);
    }
  });

  it('the table and its entries are frozen', () => {
    assert.ok(Object.isFrozen(FAILURE_BY_CODE));
    for (const entry of Object.values(FAILURE_BY_CODE)) assert.ok(Object.isFrozen(entry));
  });

  it("the relay's own errors: out of time is a timeout saying why; a body too large to translate is a 5xx", () => {
    assert.deepEqual(upstreamFailure(new OutOfTime('it reached stream_max_ms (5 ms)')), {
      kind: 'failed',
      reason: 'timeout',
      detail: 'out of time: it reached stream_max_ms (5 ms)',
    });
    assert.deepEqual(upstreamFailure(new TooLargeToTranslate('the response is too large to translate')), {
      kind: 'failed',
      reason: 'status_5xx',
      detail: 'the response is too large to translate',
    });
  });

  it('a failover status says its HTTP status, and only a 429 that gave retry-after carries it', () => {
    assert.deepEqual(statusFailure(503, null), { kind: 'failed', reason: 'status_5xx', detail: 'HTTP 503' });
    assert.ok(!('retryAfterMs' in statusFailure(429, null)));
    assert.deepEqual(statusFailure(429, 2000), { kind: 'failed', reason: 'status_429', detail: 'HTTP 429', retryAfterMs: 2000 });
  });

  it('retry-after of zero seconds is kept as 0, not as absent', () => {
    assert.equal(retryAfterOf('0'), 0);
    assert.equal(statusFailure(429, 0).retryAfterMs, 0);
  });

  it('a fallback_on class is a failure with that reason, its status in the detail, and the answer kept', () => {
    const answer = new AnswerBody(400, undefined);
    assert.deepEqual(classFailure(400, 'context_length', answer), {
      kind: 'failed',
      reason: 'context_length',
      detail: 'HTTP 400 (context_length)',
      answer,
    });
  });
});

describe("an upstream's error message", () => {
  it("is read from error.message (OpenAI, Anthropic) and from older vLLM's top-level message", () => {
    assert.equal(upstreamMessage(JSON.stringify({ error: { message: 'bad temperature' } })), 'bad temperature');
    assert.equal(
      upstreamMessage(JSON.stringify({ type: 'error', error: { type: 'x', message: 'prompt is too long' } })),
      'prompt is too long',
    );
    const vllm = { object: 'error', message: "This model's maximum context length is 8192 tokens.", type: 'BadRequestError', code: 400 };
    assert.equal(upstreamMessage(JSON.stringify(vllm)), "This model's maximum context length is 8192 tokens.");
  });

  it('a top-level message of a body that is not an error object is not read', () => {
    assert.equal(upstreamMessage(JSON.stringify({ message: 'hello' })), null);
  });
});

describe('a Gemini error body, read for what its status does not say', () => {
  const body = (details: unknown[]) => JSON.stringify({ error: { code: 400, message: 'm', status: 'INVALID_ARGUMENT', details } });

  it('a 400 with reason API_KEY_INVALID is a refused key; another reason is not', () => {
    assert.equal(
      readGeminiAnswer(400, body([{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID' }])).keyRefused,
      true,
    );
    assert.equal(readGeminiAnswer(400, body([{ reason: 'SOMETHING_ELSE' }])).keyRefused, false);
    assert.equal(readGeminiAnswer(400, 'not json').keyRefused, false);
  });

  it('a RetryInfo delay is whole seconds, rounded up', () => {
    assert.equal(readGeminiAnswer(429, body([{ retryDelay: '7s' }])).retryAfterSeconds, 7);
    assert.equal(readGeminiAnswer(429, body([{ retryDelay: '0.2s' }])).retryAfterSeconds, 1);
    assert.equal(readGeminiAnswer(429, body([{ retryDelay: 'soon' }])).retryAfterSeconds, null);
  });

  it('a refused key fails the attempt as status_auth, keeping the answer', () => {
    const answer = new AnswerBody(400, undefined);
    const failed = keyRefusedFailure(400, answer);
    assert.equal(failed.reason, 'status_auth');
    assert.equal(failed.answer, answer);
  });
});
