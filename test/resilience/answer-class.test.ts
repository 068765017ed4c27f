import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answerClassOf, type FallbackClass } from '../../src/resilience/index.js';

// The client-error answers a route may fail over on (fallback_on), as each provider words
// them: OpenAI and Azure by code, Anthropic and vLLM by message.

const BOTH: readonly FallbackClass[] = ['context_length', 'content_filter'];

const openai = (message: string, code: string | null, type = 'invalid_request_error') =>
  JSON.stringify({ error: { message, type, param: 'messages', code } });

describe('answerClassOf', () => {
  it("recognises OpenAI's context_length_exceeded", () => {
    const body = openai(
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
      'context_length_exceeded',
    );
    assert.equal(answerClassOf(400, body, BOTH), 'context_length');
  });

  it("recognises Anthropic's prompt is too long", () => {
    const body = JSON.stringify({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' },
    });
    assert.equal(answerClassOf(400, body, BOTH), 'context_length');
  });

  it("recognises vLLM's maximum context length message, with a null or numeric code, old shape and new", () => {
    const message =
      "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion).";
    assert.equal(
      answerClassOf(400, JSON.stringify({ object: 'error', message, type: 'BadRequestError', param: null, code: 400 }), BOTH),
      'context_length',
    );
    assert.equal(answerClassOf(400, openai(message, null, 'BadRequestError'), BOTH), 'context_length');
  });

  it('recognises a 413 that says the prompt is too long, and a body cut short that is not JSON', () => {
    assert.equal(
      answerClassOf(413, JSON.stringify({ type: 'error', error: { type: 'request_too_large', message: 'prompt is too long' } }), BOTH),
      'context_length',
    );
    assert.equal(
      answerClassOf(400, '{"error":{"message":"This model\'s maximum context length is 4096 tokens. However, you req', BOTH),
      'context_length',
    );
  });

  it("recognises OpenAI's and Azure's content filter codes", () => {
    assert.equal(
      answerClassOf(
        400,
        openai('The response was filtered due to the prompt triggering content management policy.', 'content_filter'),
        BOTH,
      ),
      'content_filter',
    );
    assert.equal(
      answerClassOf(400, openai('Your request was rejected as a result of our safety system.', 'content_policy_violation'), BOTH),
      'content_filter',
    );
    const azure = JSON.stringify({
      error: {
        message: 'filtered',
        type: null,
        param: 'prompt',
        code: 'content_filter',
        status: 400,
        innererror: { code: 'ResponsibleAIPolicyViolation' },
      },
    });
    assert.equal(answerClassOf(400, azure, BOTH), 'content_filter');
    const innerOnly = JSON.stringify({
      error: { message: 'filtered', code: 'bad_request', innererror: { code: 'ResponsibleAIPolicyViolation' } },
    });
    assert.equal(answerClassOf(400, innerOnly, BOTH), 'content_filter');
  });

  it('finds only the classes the route lists', () => {
    const long = openai('too long', 'context_length_exceeded');
    const filtered = openai('filtered', 'content_filter');
    assert.equal(answerClassOf(400, long, ['content_filter']), null);
    assert.equal(answerClassOf(400, filtered, ['context_length']), null);
    assert.equal(answerClassOf(400, long, []), null);
  });

  it('leaves every other client error to the client', () => {
    assert.equal(answerClassOf(400, openai('bad temperature', 'bad_param'), BOTH), null);
    assert.equal(answerClassOf(400, openai("Invalid value for 'max_tokens'", null), BOTH), null);
    assert.equal(answerClassOf(400, '<html>Bad Request</html>', BOTH), null);
    assert.equal(answerClassOf(400, 'null', BOTH), null);
    assert.equal(answerClassOf(400, '', BOTH), null);
  });

  it('reads only 400 and 413 answers', () => {
    const long = openai('too long', 'context_length_exceeded');
    for (const status of [401, 404, 422, 429, 500]) assert.equal(answerClassOf(status, long, BOTH), null, String(status));
  });
});
