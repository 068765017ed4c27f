import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatBodyFor, usageFromJson, usageFromSseTail } from '../../src/providers/index.js';

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

  it('a body without usage, or with a cut one, gives null', () => {
    assert.equal(usageFromJson(Buffer.from('{"choices":[]}')), null);
    assert.equal(usageFromJson(Buffer.from('{"usage":{"prompt_tokens":3')), null);
  });

  it('multi-byte text before the usage does not shift the read', () => {
    const body = Buffer.from(
      JSON.stringify({ choices: [{ message: { content: 'ünïcødé ✓ 日本語' } }], usage: { prompt_tokens: 5, completion_tokens: 6 } }),
    );
    assert.deepEqual(usageFromJson(body), { inputTokens: 5, outputTokens: 6 });
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
