import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SwitchyardError } from '../../src/errors.js';
import {
  parseChatRequest,
  parseCompletionsRequest,
  parseCountTokensRequest,
  parseEmbeddingsRequest,
  parseMessagesRequest,
  parseResponsesRequest,
} from '../../src/request/chat-request.js';

// A top-level key named twice is refused where the body is parsed: JSON.parse keeps the
// last value, and the gateway would route, check and price it while a provider reading the
// first would serve a model nobody checked.

const MESSAGES = '"messages":[{"role":"user","content":"hi"}]';

function refusal(parse: () => unknown): SwitchyardError {
  try {
    parse();
  } catch (err) {
    assert.ok(err instanceof SwitchyardError, String(err));
    return err;
  }
  assert.fail('the body was accepted');
}

describe('a top-level key named twice', () => {
  it('is refused as duplicate_key (400), naming the key', () => {
    const err = refusal(() => parseChatRequest(Buffer.from(`{"model":"gpt-4-EXPENSIVE",${MESSAGES},"model":"ok"}`)));
    assert.equal(err.code, 'duplicate_key');
    assert.equal(err.status, 400);
    assert.equal(err.param, 'model');
    assert.match(err.message, /"model"/);
  });

  it('is refused when one spelling escapes the key: keys are compared decoded', () => {
    const err = refusal(() => parseChatRequest(Buffer.from(`{"mo\\u0064el":"expensive",${MESSAGES},"model":"ok"}`)));
    assert.equal(err.code, 'duplicate_key');
    assert.equal(err.param, 'model');
    const stream = refusal(() => parseChatRequest(Buffer.from(`{"model":"ok",${MESSAGES},"stream":false, "str\\u0065am" : true}`)));
    assert.equal(stream.param, 'stream');
  });

  it('is refused on every model endpoint, whichever key repeats', () => {
    const bodies: Array<[(raw: Buffer) => unknown, string]> = [
      [parseMessagesRequest, `{"model":"m","max_tokens":1,"max_tokens":99999,${MESSAGES}}`],
      [parseEmbeddingsRequest, '{"model":"m","input":"a","input":"b"}'],
      [parseCompletionsRequest, '{"model":"m","prompt":"a","user":"u","user":"v"}'],
      [parseResponsesRequest, '{"model":"m","input":"a","metadata":{},"metadata":{}}'],
      [parseCountTokensRequest, `{"model":"m",${MESSAGES},"system":"a","system":"b"}`],
    ];
    const named = bodies.map(([parse, body]) => refusal(() => parse(Buffer.from(body))).param);
    assert.deepEqual(named, ['max_tokens', 'input', 'user', 'metadata', 'system']);
  });

  it('a very long repeated key is named cut short', () => {
    const key = 'k'.repeat(5000);
    const err = refusal(() => parseChatRequest(Buffer.from(`{"model":"m",${MESSAGES},"${key}":1,"${key}":2}`)));
    assert.equal(err.code, 'duplicate_key');
    assert.ok(err.param !== null && err.param.length <= 257 && err.param.startsWith('kkk'));
  });
});

describe('bodies without a repeated top-level key', () => {
  it('accept keys repeated deeper in the body, untouched', () => {
    const raw = Buffer.from(`{"model":"m",${MESSAGES},"metadata":{"a":1,"a":2},"tools":[{"type":"x","type":"y"}]}`);
    const request = parseChatRequest(raw);
    assert.equal(request.model, 'm');
    assert.deepEqual(request.parsed.metadata, { a: 2 });
  });

  it('accept strings that hold `"model":` and quotes, escaped or not, and keys that differ only once decoded', () => {
    const content = JSON.stringify('{"model":"gpt-4-EXPENSIVE"}, "model": "x" \\" } {');
    const raw = Buffer.from(`{ "model" : "ok" , "messages" : [{"role":"user","content":${content}}], "note":"\\"model\\":\\"y\\"" }`);
    assert.equal(parseChatRequest(raw).model, 'ok');
    // `mode\u006c` is `model`, but `model\u0031` is `model1`: a different key.
    assert.equal(parseChatRequest(Buffer.from(`{"model":"ok","model\\u0031":"x",${MESSAGES}}`)).model, 'ok');
  });

  it('accept a body of many members and arbitrary whitespace', () => {
    const extra = Array.from({ length: 50 }, (_, i) => `\n\t"k${i}" :\r\n${i}`).join(',');
    assert.equal(parseChatRequest(Buffer.from(`\n{"model":"m",${MESSAGES},${extra}\n}\n`)).model, 'm');
  });
});
