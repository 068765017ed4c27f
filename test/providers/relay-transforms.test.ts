import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AnswerTransform, composeTransforms, type RelayTransform, type TokenUsage } from '../../src/providers/index.js';
import type { BodyTransform, PlainAnswer } from '../../src/providers/relay-transform.js';
import { withoutUsageEvent } from '../../src/providers/usage-event-filter.js';

const STREAM =
  'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n' +
  'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}\n\n' +
  'data: [DONE]\n\n';
const WITHOUT_USAGE = 'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\ndata: [DONE]\n\n';

const cost = (usage: TokenUsage | null): Record<string, string> | null =>
  usage === null ? null : { 'x-cost': String(usage.inputTokens + usage.outputTokens) };

/** Headers from the usage, as the request path adds them: a stack of one transform over the translation (composeTransforms). */
function withUsageHeaders(
  inner: RelayTransform | undefined,
  usageHeaders: AnswerTransform['usageHeaders'],
  trailers?: string,
): RelayTransform {
  return composeTransforms(inner, [{ usageHeaders, trailers }]) as RelayTransform;
}

/** Runs a stream through a transform's stream part in chunks of `size` bytes. */
function streamed(t: { chunk?(c: Buffer): Buffer | string; end?(): string }, text: string, size: number): string {
  const bytes = Buffer.from(text);
  let out = '';
  for (let i = 0; i < bytes.length; i += size) out += String(t.chunk?.(bytes.subarray(i, i + size)));
  return out + (t.end?.() ?? '');
}

describe('a stream whose client did not ask for usage (withoutUsageEvent)', () => {
  it('relays every event but the usage-only one, and bills the usage that event reported', () => {
    for (const size of [1, 5, 64, STREAM.length]) {
      const t = withoutUsageEvent();
      assert.equal(streamed(t, STREAM, size), WITHOUT_USAGE, `chunks of ${size}`);
      assert.deepEqual(t.usage, { inputTokens: 3, outputTokens: 4 }, `chunks of ${size}`);
    }
  });

  it('reports the usage seen so far when the stream is cut before it ends', () => {
    const t = withoutUsageEvent();
    assert.equal(t.usage, null, 'nothing read yet');
    t.chunk?.(Buffer.from(STREAM.slice(0, STREAM.indexOf('data: [DONE]'))));
    assert.deepEqual(t.usage, { inputTokens: 3, outputTokens: 4 });
  });

  it('has no part for a plain body or a broken stream: the pass-through and its OpenAI error event keep those', () => {
    const t = withoutUsageEvent();
    assert.equal(t.plain, undefined);
    assert.equal(t.fail, undefined);
    assert.equal(t.usageHeaders, undefined);
  });

  it('each transform holds its own stream: a second attempt starts clean', () => {
    const first = withoutUsageEvent();
    first.chunk?.(Buffer.from(STREAM.slice(0, 20)));
    assert.equal(streamed(withoutUsageEvent(), STREAM, 7), WITHOUT_USAGE);
  });
});

describe('headers from the usage (a stack of one transform)', () => {
  it('over the pass-through it has no body part, so the relay keeps its byte-for-byte path', () => {
    const t = withUsageHeaders(undefined, cost, 'x-cost');
    for (const part of ['plain', 'chunk', 'end', 'fail', 'usage'] as const) assert.equal(t[part], undefined, part);
    assert.deepEqual(t.usageHeaders?.({ inputTokens: 2, outputTokens: 5 }), { 'x-cost': '7' });
    assert.equal(t.usageHeaders?.(null), null);
    assert.equal(t.trailers, 'x-cost');
  });

  it('without trailer names a stream announces none', () => {
    assert.equal(withUsageHeaders(undefined, cost).trailers, undefined);
  });

  it("over a transform it keeps the inner's bytes and its usage as the stream grows", () => {
    const t = withUsageHeaders(withoutUsageEvent(), cost, 'x-cost');
    assert.equal(t.plain, undefined, 'the inner has no plain part: neither has the result');
    assert.equal(t.fail, undefined);
    const bytes = Buffer.from(STREAM);
    let out = '';
    for (let i = 0; i < bytes.length; i += 9) {
      out += String(t.chunk?.(bytes.subarray(i, i + 9)));
      if (i === 0) assert.equal(t.usage, null, 'no usage before the usage event');
    }
    out += t.end?.() ?? '';
    assert.equal(out, WITHOUT_USAGE);
    assert.deepEqual(t.usage, { inputTokens: 3, outputTokens: 4 });
    assert.deepEqual(t.usageHeaders?.(t.usage ?? null), { 'x-cost': '7' });
  });

  it("calls an inner transform's methods on the inner itself (one that keeps its state on `this`)", () => {
    class Upper implements BodyTransform {
      seen = 0;
      plain(status: number, body: Buffer): PlainAnswer {
        this.seen += body.length;
        return { status, body: body.toString().toUpperCase(), usage: { inputTokens: this.seen, outputTokens: 0 } };
      }
      chunk(chunk: Buffer): string {
        this.seen += chunk.length;
        return chunk.toString().toUpperCase();
      }
      end(): string {
        return `end:${this.seen}`;
      }
      fail(message: string): string {
        return `fail:${message}`;
      }
      get usage(): TokenUsage | null {
        return { inputTokens: this.seen, outputTokens: 0 };
      }
    }
    const t = withUsageHeaders(new Upper(), cost);
    assert.deepEqual(t.plain?.(201, Buffer.from('abc')), { status: 201, body: 'ABC', usage: { inputTokens: 3, outputTokens: 0 } });
    assert.equal(t.chunk?.(Buffer.from('de')), 'DE');
    assert.equal(t.end?.(), 'end:5');
    assert.equal(t.fail?.('cut'), 'fail:cut');
    assert.deepEqual(t.usage, { inputTokens: 5, outputTokens: 0 });
  });
});
