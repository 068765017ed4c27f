import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatBodyFor, retryAfterOf, usageFromJson, usageFromSseTail, withStreamUsage } from '../../src/providers/index.js';
import { UsageEventFilter } from '../../src/providers/usage-event-filter.js';

describe('usage read from an OpenAI chat completion', () => {
  it('a whole body gives its usage counts', () => {
    const body = Buffer.from(
      JSON.stringify({
        id: 'x',
        choices: [{ message: { content: 'hi' } }],
        usage: { prompt_tokens: 12, completion_tokens: 34, total_tokens: 46 },
      }),
    );
    assert.deepEqual(usageFromJson(body), { inputTokens: 12, outputTokens: 34 });
  });

  it('a "usage" key inside the answer text does not count: the last usage key of the body does', () => {
    const content = '"usage": {"prompt_tokens": 999, "completion_tokens": 999}';
    const body = Buffer.from(JSON.stringify({ choices: [{ message: { content } }], usage: { prompt_tokens: 3, completion_tokens: 4 } }));
    assert.deepEqual(usageFromJson(body), { inputTokens: 3, outputTokens: 4 });
  });

  it('usage far from the end, and counts far into the usage object, are still found', () => {
    // Usage followed by a long field, and counts after a long one inside the usage object.
    const trailer = 'x'.repeat(10_000);
    const farFromEnd = JSON.stringify({ usage: { prompt_tokens: 7, completion_tokens: 8 }, system_fingerprint: trailer });
    assert.deepEqual(usageFromJson(Buffer.from(farFromEnd)), { inputTokens: 7, outputTokens: 8 });
    const details = JSON.stringify({ usage: { prompt_tokens_details: { note: trailer }, prompt_tokens: 9, completion_tokens: 10 } });
    assert.deepEqual(usageFromJson(Buffer.from(details)), { inputTokens: 9, outputTokens: 10 });
    const boundary = (pad: number) => Buffer.from(`{"usage":{"prompt_tokens":1,"completion_tokens":2},"pad":"${'y'.repeat(pad)}"}`);
    for (const pad of [2000, 2030, 2040, 2047, 2048, 2049, 2060, 2100]) {
      assert.deepEqual(usageFromJson(boundary(pad)), { inputTokens: 1, outputTokens: 2 }, `pad ${pad}`);
    }
  });

  it('a body without usage, or with a cut one, gives null', () => {
    assert.equal(usageFromJson(Buffer.from(`{"choices":[],"pad":"${'z'.repeat(5000)}"}`)), null);
    assert.equal(usageFromJson(Buffer.from('{"choices":[]}')), null);
    assert.equal(usageFromJson(Buffer.from('{"usage":{"prompt_tokens":3')), null);
  });

  it('JSON whitespace around the colon is read; a count that is not a number is no count', () => {
    assert.deepEqual(usageFromJson(Buffer.from('{"usage":{"prompt_tokens" :\n 12 ,"completion_tokens":\t34}}')), {
      inputTokens: 12,
      outputTokens: 34,
    });
    assert.equal(usageFromJson(Buffer.from('{"usage":{"prompt_tokens":"12","completion_tokens":34}}')), null);
    assert.equal(usageFromJson(Buffer.from('{"usage":{"prompt_tokens":null,"completion_tokens":34}}')), null);
  });

  it('multi-byte text before the usage does not shift the read', () => {
    const body = Buffer.from(
      JSON.stringify({ choices: [{ message: { content: 'ünïcødé ✓ 日本語' } }], usage: { prompt_tokens: 5, completion_tokens: 6 } }),
    );
    assert.deepEqual(usageFromJson(body), { inputTokens: 5, outputTokens: 6 });
  });

  it('usage far from either end of a large body is found: first in the body, or its counts kilobytes after the key', () => {
    const long = 'x'.repeat(10_000);
    const first = Buffer.from(
      JSON.stringify({ usage: { prompt_tokens: 9, completion_tokens: 10 }, choices: [{ message: { content: long } }] }),
    );
    assert.deepEqual(usageFromJson(first), { inputTokens: 9, outputTokens: 10 });
    const spread = Buffer.from(`{"usage":{"prompt_tokens":11,"note":"${long}","completion_tokens":12}}`);
    assert.deepEqual(usageFromJson(spread), { inputTokens: 11, outputTokens: 12 });
    const none = Buffer.from(JSON.stringify({ choices: [{ message: { content: long } }] }));
    assert.equal(usageFromJson(none), null);
    // Bodies of about 2 KiB of trailing space: the usage key sits at varying distances from the end.
    for (let pad = 2030; pad <= 2070; pad += 1) {
      const body = Buffer.from(`{"usage":{"prompt_tokens":1,"completion_tokens":2}${' '.repeat(pad)}}`);
      assert.deepEqual(usageFromJson(body), { inputTokens: 1, outputTokens: 2 }, `pad ${pad}`);
    }
  });

  it('a stream tail gives the usage of its last usage event, even when the tail starts mid-line', () => {
    const tail = `ge":{"prompt_tokens":1}}\n\ndata: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":8}}\n\ndata: [DONE]\n\n`;
    assert.deepEqual(usageFromSseTail(tail), { inputTokens: 7, outputTokens: 8 });
    assert.equal(usageFromSseTail('data: {"choices":[]}\n\ndata: [DONE]\n\n'), null);
  });
});

describe('the body sent upstream', () => {
  it('is the client bytes as they came when the model is unchanged', () => {
    const raw = Buffer.from('{"model":"m",  "messages":[{"role":"user","content":"hi"}], "temperature": 1.0}');
    assert.equal(chatBodyFor(raw, JSON.parse(raw.toString()) as Record<string, unknown>, 'm'), raw);
  });

  it('changes only the model bytes when the candidate renames it', () => {
    const raw = Buffer.from('{"model":"m",  "messages":[{"role":"user","content":"hi"}], "temperature": 1.0}');
    const out = chatBodyFor(raw, JSON.parse(raw.toString()) as Record<string, unknown>, 'upstream-model');
    assert.equal(out.toString(), '{"model":"upstream-model",  "messages":[{"role":"user","content":"hi"}], "temperature": 1.0}');
  });
});

describe('stream usage', () => {
  it('the body asks for include_usage: inserted as bytes when the client sent no stream_options', () => {
    const raw = Buffer.from(' {"model":"m","stream":true,"messages":[]}');
    const out = withStreamUsage(raw, JSON.parse(raw.toString()) as Record<string, unknown>, 'm');
    assert.deepEqual(JSON.parse(out.toString()), { stream_options: { include_usage: true }, model: 'm', stream: true, messages: [] });
  });

  it('a client that asked already is left as it is; other stream_options (or null) are kept with include_usage added', () => {
    const asked = Buffer.from('{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}');
    assert.equal(withStreamUsage(asked, JSON.parse(asked.toString()) as Record<string, unknown>, 'm'), asked);
    for (const options of [{ include_usage: false, other: 1 }, null]) {
      const raw = Buffer.from(JSON.stringify({ model: 'm', stream: true, stream_options: options, messages: [] }));
      const out = JSON.parse(withStreamUsage(raw, JSON.parse(raw.toString()) as Record<string, unknown>, 'up').toString());
      assert.equal(out.stream_options.include_usage, true);
      assert.equal(out.model, 'up');
    }
  });

  it('the usage-only event is taken out of a stream, whatever the chunk boundaries', () => {
    const stream =
      'data: {"choices":[{"delta":{"content":"hé"}}],"usage":null}\n\n' +
      'data: {"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}\n\n' +
      'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}\n\n' +
      'data: [DONE]\n\n';
    const bytes = Buffer.from(stream);
    const expected = stream.replace(/data: \{"choices":\[\],"usage":\{[^\n]*\n\n/, '');
    for (const size of [1, 2, 3, 7, 64, bytes.length]) {
      const filter = new UsageEventFilter();
      let out = '';
      for (let i = 0; i < bytes.length; i += size) out += filter.push(bytes.subarray(i, i + size));
      out += filter.end();
      assert.equal(out, expected, `chunks of ${size} bytes`);
    }
  });
});

describe('retry-after', () => {
  it('reads delay-seconds and an HTTP date, and nothing else', () => {
    const now = Date.UTC(2026, 11, 1, 12, 0, 0);
    assert.equal(retryAfterOf('30', now), 30_000);
    assert.equal(retryAfterOf(' 0 ', now), 0);
    assert.equal(retryAfterOf('Tue, 01 Dec 2026 12:00:45 GMT', now), 45_000);
    assert.equal(retryAfterOf('Tue, 01 Dec 2026 11:00:00 GMT', now), 0, 'a date in the past is now');
    assert.equal(retryAfterOf('soon', now), null);
    assert.equal(retryAfterOf(undefined, now), null);
    assert.equal(retryAfterOf(['1', '2'], now), null);
  });
});
