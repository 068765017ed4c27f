import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  adapterOf,
  ResponsesStreamReader,
  responsesMetering,
  servesOperation,
  storedResponsePath,
  upstreamPathFor,
} from '../../src/providers/index.js';
import { topLevelValue } from '../../src/providers/json-splice.js';

const noAuth = { bearer: null, signer: null };
const openai = { wire: adapterOf('openai').wire({ type: 'openai' }, noAuth) };
const azure = { wire: adapterOf('azure_openai').wire({ type: 'azure_openai', api_version: '2025-04-01-preview' }, noAuth) };
const anthropic = { wire: adapterOf('anthropic').wire({ type: 'anthropic', anthropic_version: '2023-06-01' }, noAuth) };

function event(type: string, data: Record<string, unknown>, withEventLine = true): string {
  const line = `data: ${JSON.stringify({ type, ...data })}\n\n`;
  return withEventLine ? `event: ${type}\n${line}` : line;
}

const usage = { input_tokens: 120, input_tokens_details: { cached_tokens: 100 }, output_tokens: 7, total_tokens: 127 };

/** A realistic stream: created, deltas (one of which quotes event names), completed. */
function stream(withEventLines = true, completedPadding = 0): string {
  const deltas = ['Hello', ' "response.completed"', '\nevent: response.completed\n\n', ' world'];
  let s = event(
    'response.created',
    { sequence_number: 0, response: { id: 'resp_abc', status: 'in_progress', usage: null } },
    withEventLines,
  );
  s += event('response.in_progress', { sequence_number: 1, response: { id: 'resp_abc', status: 'in_progress' } }, withEventLines);
  deltas.forEach((delta, i) => {
    s += event('response.output_text.delta', { sequence_number: 2 + i, item_id: 'msg_1', delta }, withEventLines);
  });
  const text = 'x'.repeat(completedPadding);
  s += event(
    'response.completed',
    { sequence_number: 9, response: { id: 'resp_abc', status: 'completed', output: [{ id: 'msg_1', content: [{ text }] }], usage } },
    withEventLines,
  );
  return s;
}

function read(text: string, cuts: readonly number[]): { ids: string[]; reader: ResponsesStreamReader } {
  const ids: string[] = [];
  const reader = new ResponsesStreamReader((id) => ids.push(id));
  const bytes = Buffer.from(text);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    reader.push(bytes.subarray(at, cut));
    at = cut;
  }
  reader.end();
  return { ids, reader };
}

describe('Responses API streams read while relayed untouched', () => {
  it('the id comes from response.created and the usage, cached tokens included, from response.completed', () => {
    const { ids, reader } = read(stream(), []);
    assert.deepEqual(ids, ['resp_abc']);
    assert.deepEqual(reader.usage, { inputTokens: 120, outputTokens: 7, cacheReadTokens: 100 });
  });

  it('any split of the stream into two chunks reads the same, event lines or not', () => {
    for (const withEventLines of [true, false]) {
      const text = stream(withEventLines);
      for (let cut = 0; cut <= Buffer.byteLength(text); cut++) {
        const { ids, reader } = read(text, [cut]);
        assert.deepEqual(ids, ['resp_abc'], `cut at ${cut}`);
        assert.deepEqual(reader.usage, { inputTokens: 120, outputTokens: 7, cacheReadTokens: 100 }, `cut at ${cut}`);
      }
    }
  });

  it('CRLF line ends and one byte per chunk still read', () => {
    const text = stream().replace(/\n/g, '\r\n');
    const cuts = Array.from({ length: Buffer.byteLength(text) }, (_, i) => i);
    const { ids, reader } = read(text, cuts);
    assert.deepEqual(ids, ['resp_abc']);
    assert.equal(reader.usage?.inputTokens, 120);
  });

  it('a terminal event larger than the first bytes looked at is still read whole', () => {
    const { reader } = read(stream(true, 200_000), [100, 5000, 70_000]);
    assert.equal(reader.usage?.outputTokens, 7);
  });

  it('an incomplete response is billed on its usage too; a stream cut before its end has none', () => {
    const incomplete = stream()
      .replace(/response\.completed"/g, 'response.incomplete"')
      .replace('event: response.completed\ndata', 'event: response.incomplete\ndata');
    assert.equal(read(incomplete, []).reader.usage?.inputTokens, 120);
    const text = stream();
    const cut = read(text.slice(0, text.lastIndexOf('event: response.completed')), []);
    assert.deepEqual(cut.ids, ['resp_abc']);
    assert.equal(cut.reader.usage, null);
  });

  it('a last event without its blank line counts when the stream ends', () => {
    const { reader } = read(stream().trimEnd(), []);
    assert.equal(reader.usage?.inputTokens, 120);
  });
});

describe('the sequence_number of an event the gateway adds to a Responses stream', () => {
  it('is one after the last whole event relayed, however the stream is split; a cut event and a comment take none', () => {
    const text = stream();
    for (const cuts of [[], [7], [Math.floor(text.length / 2)], Array.from({ length: text.length - 1 }, (_, i) => i + 1)]) {
      assert.equal(read(text, cuts).reader.nextSequenceNumber, 10, `cut at ${cuts.length} place(s)`);
    }
    // Cut inside response.completed, after a comment and an extra blank line: the relay never ends the reader then.
    const reader = new ResponsesStreamReader(() => undefined);
    const cut = text.slice(0, text.indexOf('event: response.completed\ndata'));
    reader.push(Buffer.from(`${cut}: keep-alive\n\n\nevent: response.completed\ndata: {"type":"response.completed","seq`));
    assert.equal(reader.nextSequenceNumber, 6);
  });

  it('counts events whose head does not show it, from where the last one that did left off', () => {
    const unnumbered = event('response.output_text.delta', { item_id: 'msg_1', delta: 'x' });
    assert.equal(read(unnumbered + unnumbered, []).reader.nextSequenceNumber, 2);
    const big = event('response.completed', {
      response: { id: 'resp_abc', output: [{ text: 'y'.repeat(500) }], usage },
      sequence_number: 41,
    });
    assert.equal(read(big + unnumbered, []).reader.nextSequenceNumber, 43, 'an event read whole gives its own, even past the head');
  });

  it("the gateway's error event carries it, beside OpenAI's error object", () => {
    const metering = responsesMetering(() => undefined);
    metering.chunk(Buffer.from(stream().slice(0, stream().indexOf('event: response.output_text.delta'))));
    const written = metering.fail('the upstream stream was interrupted');
    const data = JSON.parse(written.slice(written.indexOf('data: ') + 6)) as Record<string, unknown>;
    assert.deepEqual([data.type, data.sequence_number, data.code], ['error', 2, 'stream_interrupted']);
  });
});

describe('Responses API bodies', () => {
  it('report the top-level id, not a nested one, and bill the top-level usage; bytes are untouched', () => {
    const body = Buffer.from(
      JSON.stringify({
        output: [{ id: 'msg_1', type: 'message', content: [{ type: 'output_text', text: '"id":"resp_fake"' }] }],
        id: 'resp_real',
        usage: { ...usage, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 20 } },
      }),
    );
    const ids: string[] = [];
    const answer = responsesMetering((id) => ids.push(id)).plain(200, body);
    assert.deepEqual(ids, ['resp_real']);
    assert.equal(answer.body, body);
    assert.deepEqual(answer.usage, { inputTokens: 120, outputTokens: 7, cacheWriteTokens: 20 });
  });

  it('an error body reports no id and no usage', () => {
    const ids: string[] = [];
    const answer = responsesMetering((id) => ids.push(id)).plain(400, Buffer.from('{"id":"x","error":{"message":"no"}}'));
    assert.deepEqual(ids, []);
    assert.equal(answer.usage, null);
  });

  it('a cut stream ends with an error event that carries both the Responses fields and an OpenAI error object', () => {
    const text = responsesMetering(() => undefined).fail('cut');
    assert.match(text, /^event: error\ndata: /);
    const data = JSON.parse(text.slice(text.indexOf('data: ') + 6)) as Record<string, unknown>;
    assert.equal(data.type, 'error');
    assert.equal(data.code, 'stream_interrupted');
    assert.equal((data.error as { message: string }).message, 'cut');
  });

  it('topLevelValue skips nested keys of the same name and survives malformed input', () => {
    const raw = Buffer.from('{"a":{"id":"inner"},"id" : "outer"}');
    const at = topLevelValue(raw, 'id');
    assert.equal(at === null ? null : raw.toString('utf8', at[0], at[1]), '"outer"');
    assert.equal(topLevelValue(Buffer.from('{"id'), 'id'), null);
    assert.equal(topLevelValue(Buffer.from('{"\\u00'), 'id'), null);
    assert.equal(topLevelValue(Buffer.from('[1]'), 'id'), null);
  });
});

describe('where each operation goes', () => {
  it('OpenAI types serve completions and responses; anthropic serves only chat', () => {
    for (const op of ['completions', 'responses', 'embeddings'] as const) {
      assert.equal(servesOperation('openai', op), true);
      assert.equal(servesOperation('azure_openai', op), true);
      assert.equal(servesOperation('anthropic', op), false);
    }
    assert.equal(servesOperation('anthropic', 'chat'), true);
  });

  it('Azure puts completions under the deployment and responses on the resource', () => {
    assert.equal(upstreamPathFor(openai, 'gpt', 'completions'), '/completions');
    assert.equal(upstreamPathFor(openai, 'gpt', 'responses'), '/responses');
    assert.equal(
      upstreamPathFor(azure, 'my deploy', 'completions'),
      '/openai/deployments/my%20deploy/completions?api-version=2025-04-01-preview',
    );
    assert.equal(upstreamPathFor(azure, 'my deploy', 'responses'), '/openai/responses?api-version=2025-04-01-preview');
    assert.equal(upstreamPathFor(anthropic, 'claude', 'chat'), '/messages');
  });

  it('a stored response keeps the client query, with Azure api-version added', () => {
    assert.equal(storedResponsePath(openai, 'resp_1', ''), '/responses/resp_1');
    assert.equal(storedResponsePath(openai, 'resp/1', 'stream=true'), '/responses/resp%2F1?stream=true');
    assert.equal(storedResponsePath(azure, 'resp_1', ''), '/openai/responses/resp_1?api-version=2025-04-01-preview');
    assert.equal(storedResponsePath(azure, 'resp_1', 'include[]=x'), '/openai/responses/resp_1?include[]=x&api-version=2025-04-01-preview');
  });
});
