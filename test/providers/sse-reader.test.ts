import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseParser } from '../../src/providers/canonical/sse-parser.js';
import { eventFields, holdsErrorEvent, isErrorEvent, isUsageOnly, mayHoldUsage } from '../../src/providers/sse-event.js';
import { SseReader, splitEvents } from '../../src/providers/sse-reader.js';
import { UsageEventFilter, withoutUsageEvent } from '../../src/providers/usage-event-filter.js';

const content = (text: string) => `data: {"choices":[{"index":0,"delta":{"content":"${text}"}}],"usage":null}`;
const USAGE_ONLY = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}';
/** The same usage-only chunk as Python's json.dumps writes it. */
const USAGE_ONLY_SPACED = 'data: {"id": "c", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}';
const DONE = 'data: [DONE]';

/** An event stream from its events' lines, framed with `eol`. */
function framed(events: string[], eol: string): string {
  return events.map((e) => `${e.split('\n').join(eol)}${eol}${eol}`).join('');
}

/** Feeds `text` to a reader in chunks of `size` bytes; returns what it let through and its count. */
function read(text: string, size: number, max = 1 << 20): { out: string; events: number; rest: string } {
  const reader = new SseReader(max);
  const bytes = Buffer.from(text);
  let out = '';
  for (let i = 0; i < bytes.length; i += size) {
    const whole = reader.push(bytes.subarray(i, i + size));
    assert.ok(whole !== null, 'within the bound');
    out += whole.toString('latin1');
  }
  const rest = reader.end().toString('latin1');
  return { out, events: reader.events, rest };
}

function filtered(text: string, size: number): string {
  const filter = new UsageEventFilter();
  const bytes = Buffer.from(text);
  let out = '';
  for (let i = 0; i < bytes.length; i += size) out += filter.push(bytes.subarray(i, i + size)).toString('latin1');
  return out + filter.end();
}

describe('SseReader: the framing of a server-sent event stream', () => {
  const events = [content('a'), 'event: note\ndata: x', content('b'), DONE];
  for (const [name, eol] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ] as const) {
    it(`cuts ${name}-framed events at their empty line and lets them through byte for byte, however the chunks split them`, () => {
      const text = framed(events, eol);
      for (const size of [1, 2, 3, 7, 64, text.length]) {
        const got = read(text, size);
        // A last CRLF split after its CR leaves the LF to the end: the event was whole at the CR.
        assert.equal(got.out + got.rest, text, `chunks of ${size}`);
        assert.ok(got.rest === '' || got.rest === '\n', `chunks of ${size}`);
        assert.equal(got.events, 4, `chunks of ${size}`);
      }
    });
  }

  it('holds an event until its empty line: nothing of it leaves before', () => {
    const reader = new SseReader(1024);
    assert.equal(reader.push(Buffer.from('data: {"a":'))?.length, 0);
    assert.equal(reader.push(Buffer.from('1}\n'))?.length, 0, 'a line end alone does not end the event');
    assert.equal(reader.push(Buffer.from('\ndata: next'))?.toString(), 'data: {"a":1}\n\n');
    assert.equal(reader.end().toString(), 'data: next', 'an event left without its empty line is given back at the end');
    assert.equal(reader.events, 2);
  });

  it('a CRLF split across two chunks is one line end, not an empty line', () => {
    const reader = new SseReader(1024);
    assert.equal(reader.push(Buffer.from('data: a\r'))?.length, 0);
    assert.equal(reader.push(Buffer.from('\ndata: b\r\n\r'))?.toString(), 'data: a\r\ndata: b\r\n\r');
    assert.equal(
      reader.push(Buffer.from('\ndata: c\r\n\r\n'))?.toString(),
      '\ndata: c\r\n\r\n',
      "the first LF finishes the last event's CRLF",
    );
    assert.equal(reader.events, 2);
  });

  it('counts neither empty lines nor comment-only blocks as events, but lets their bytes through', () => {
    const text = ': keep-alive\n\n\n\ndata: x\n\n:\r\n\r\n';
    const got = read(text, 1);
    assert.equal(got.out + got.rest, text);
    assert.equal(got.events, 1);
  });

  it('an event that grows past the bound ends the reading, whether held over chunks or whole in one', () => {
    const held = new SseReader(100);
    assert.equal(held.push(Buffer.from(`data: ${'x'.repeat(60)}`))?.length, 0);
    assert.equal(held.push(Buffer.from('x'.repeat(60))), null, 'the open event passed 100 bytes');
    assert.equal(held.push(Buffer.from('\n\ndata: y\n\n')), null, 'nothing is read after it');

    const whole = new SseReader(100);
    assert.equal(whole.push(Buffer.from(`data: ok\n\ndata: ${'x'.repeat(200)}\n\n`)), null);

    const atBound = new SseReader(100);
    const exactly = `data: ${'x'.repeat(92)}\n\n`;
    assert.equal(exactly.length, 100);
    assert.equal(atBound.push(Buffer.from(exactly))?.toString(), exactly, 'an event of exactly the bound passes');
  });

  it('holds at most the bound of an endless event, reading each chunk once', () => {
    const reader = new SseReader(1 << 20);
    const block = Buffer.alloc(64 * 1024, 0x78);
    let pushes = 0;
    let result: Buffer | null = reader.push(Buffer.from('data: '));
    while (result !== null && pushes < 1000) {
      result = reader.push(block);
      pushes += 1;
    }
    assert.equal(result, null);
    assert.equal(pushes, 16, 'stopped at the first chunk past 1 MiB');
  });

  it('splitEvents cuts whole events apart, each with its own line ends', () => {
    assert.deepEqual(splitEvents(Buffer.from('data: a\r\n\r\ndata: b\n\ndata: c\r\r')).map(String), [
      'data: a\r\n\r\n',
      'data: b\n\n',
      'data: c\r\r',
    ]);
  });
});

describe('an event read as the SSE format defines its fields', () => {
  it('joins data lines with LF, drops one space after the colon, and skips comments and other fields', () => {
    const event = Buffer.from(': a comment\r\nid: 7\r\nevent: update\r\ndata:  two spaces\r\ndata\r\ndata: {"x":1}\r\nretry: 10\r\n\r\n');
    assert.deepEqual(eventFields(event), { type: 'update', data: ' two spaces\n\n{"x":1}' });
    assert.deepEqual(eventFields(Buffer.from(': only a comment\n\n')), { type: '', data: null });
  });

  it('a usage-only chunk is known by its parsed data, however its JSON is spaced', () => {
    for (const event of [
      USAGE_ONLY,
      USAGE_ONLY_SPACED,
      'data:{"choices":[ ],"usage":{}}',
      'data: {"choices":\ndata: [], "usage": {"prompt_tokens": 1}}',
    ]) {
      assert.equal(isUsageOnly(eventFields(Buffer.from(event))), true, event);
      assert.equal(mayHoldUsage(Buffer.from(event)), true, event);
    }
    for (const event of [
      content('a'),
      DONE,
      'data: {"choices":[{"delta":{}}],"usage":{"prompt_tokens":1}}',
      'data: {"choices":[],"usage":null}',
    ]) {
      assert.equal(isUsageOnly(eventFields(Buffer.from(event))), false, event);
    }
    assert.equal(mayHoldUsage(Buffer.from(content('\\"usage\\": {\\"x\\"'))), false, 'an escaped quote in content is no key');
    assert.equal(mayHoldUsage(Buffer.from(framed([content('a'), content('b')], '\n'))), false, '"usage":null is no usage object');
  });

  it('an error event is `event: error`, or data with a top-level error object', () => {
    const errors = [
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
      'event:error\ndata: {"message":"busy"}',
      'data: {"error":{"message":"busy","type":"server_error"}}',
      'data: {"error": {"message": "busy"}}',
    ];
    for (const event of errors) {
      assert.equal(isErrorEvent(eventFields(Buffer.from(event))), true, event);
      assert.equal(holdsErrorEvent(Buffer.from(framed([content('a'), event, DONE], '\r\n'))), true, event);
    }
    const notErrors = [
      content('an error occurred: error'),
      content('\\"error\\": {'),
      'data: {"response":{"error":{"code":"x"}}}',
      'data: {"error":null}',
      'event: errors\ndata: {}',
      DONE,
    ];
    for (const event of notErrors) assert.equal(holdsErrorEvent(Buffer.from(framed([event], '\n'))), false, event);
  });
});

describe('the usage-only chunk taken out for a client that did not ask for it', () => {
  for (const [name, eol] of [
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ] as const) {
    it(`drops it from a ${name}-framed stream, spaced JSON included, and keeps [DONE] and every other byte`, () => {
      for (const usage of [USAGE_ONLY, USAGE_ONLY_SPACED]) {
        const kept = [content('a'), content('b')];
        const text = framed([...kept, usage, DONE], eol);
        for (const size of [1, 5, 64, text.length]) {
          assert.equal(filtered(text, size), framed([...kept, DONE], eol), `${usage}, chunks of ${size}`);
        }
      }
    });
  }

  it('bills the usage the dropped chunk reported, also for CR framing', () => {
    const t = withoutUsageEvent();
    const text = framed([content('a'), USAGE_ONLY_SPACED, DONE], '\r');
    const out = String(t.chunk?.(Buffer.from(text))) + t.end?.();
    assert.equal(out, framed([content('a'), DONE], '\r'));
    assert.deepEqual(t.usage, { inputTokens: 3, outputTokens: 4 });
  });

  it('a usage-only chunk left without its empty line at the end is dropped too', () => {
    assert.equal(filtered(`${framed([content('a')], '\n')}${USAGE_ONLY}`, 3), framed([content('a')], '\n'));
  });
});

describe('the translators’ own parser (canonical/sse-parser.ts)', () => {
  it('keeps a CRLF split between two chunks as one line end, not an event end', () => {
    const parser = new SseParser();
    const seen: Array<[string, string]> = [];
    const text = framed(['event: a\ndata: 1\ndata: 2', 'event: b\ndata: 3'], '\r\n');
    for (const ch of text) parser.push(ch, (event, data) => seen.push([event, data]));
    parser.end((event, data) => seen.push([event, data]));
    assert.deepEqual(seen, [
      ['a', '1\n2'],
      ['b', '3'],
    ]);
  });
});
