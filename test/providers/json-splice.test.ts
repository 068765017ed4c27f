import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { chatBodyFor, withStreamUsage } from '../../src/providers/index.js';
import {
  duplicateTopLevelKey,
  firstMember,
  topLevelMemberCount,
  topLevelValue,
  withFirstMember,
  withNestedMember,
  withTopLevelMember,
} from '../../src/providers/json-splice.js';

// Every rewrite of a client's body is a splice of its bytes: whatever the gateway does not
// set stays byte for byte as the client wrote it, including what JSON.parse would change.

const parsedOf = (raw: Buffer): Record<string, unknown> => JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
const text = (b: Buffer | null): string | null => (b === null ? null : b.toString('utf8'));

/** Fields a re-encoding would alter: a big integer, `1.0`, an escaped quote and brace, a \u escape, odd spacing. */
const FRAGILE = '"seed" : 9007199254740993,\n\t"temperature":1.0, "note":"a \\"quoted\\" } ] {", "name":"caf\\u00e9"';

describe('replacing a top-level value', () => {
  it('the model value alone changes; a big integer, 1.0 and escapes stay as written', () => {
    const raw = Buffer.from(`{${FRAGILE}, "model" : "alias" , "messages":[{"role":"user","content":"hi"}]}`);
    assert.equal(
      text(withTopLevelMember(raw, 'model', '"gpt-4o-mini"')),
      `{${FRAGILE}, "model" : "gpt-4o-mini" , "messages":[{"role":"user","content":"hi"}]}`,
    );
  });

  it('a key of the same name inside a nested object or a string is not the top-level one', () => {
    const raw = Buffer.from(
      '{"metadata":{"model":"inner","deep":[{"model":"x"}]},"messages":[{"content":"\\"model\\":\\"s\\""}],"model":"outer"}',
    );
    const out = text(withTopLevelMember(raw, 'model', '"new"'));
    assert.equal(out, raw.toString().replace('"model":"outer"', '"model":"new"'));
  });

  it('an escaped key is the key it decodes to', () => {
    const raw = Buffer.from('{"mo\\u0064el":"a","messages":[]}');
    assert.equal(text(withTopLevelMember(raw, 'model', '"b"')), '{"mo\\u0064el":"b","messages":[]}');
    assert.deepEqual(topLevelValue(raw, 'model'), [14, 17]);
  });

  it('a key the document lacks is inserted first; an empty object gets no stray comma', () => {
    assert.equal(text(withTopLevelMember(Buffer.from(' { "a":1}'), 'model', '"m"')), ' {"model":"m", "a":1}');
    assert.equal(text(withTopLevelMember(Buffer.from('{ \n}'), 'model', '"m"')), '{"model":"m" \n}');
  });

  it('the same buffer comes back when the value already has those bytes; null for a document that is not an object', () => {
    const raw = Buffer.from('{"model":"m"}');
    assert.equal(withTopLevelMember(raw, 'model', '"m"'), raw);
    assert.equal(withTopLevelMember(Buffer.from('[1]'), 'model', '"m"'), null);
  });

  it('multi-byte text before and after the value does not shift the splice', () => {
    const raw = Buffer.from('{"system":"日本語 ✓","model":"ü","messages":[{"content":"ünïcødé"}]}');
    assert.equal(text(withTopLevelMember(raw, 'model', '"m"')), '{"system":"日本語 ✓","model":"m","messages":[{"content":"ünïcødé"}]}');
  });

  it('a string ending in an escaped backslash ends there, not at the next quote', () => {
    const raw = Buffer.from('{"path":"C:\\\\","model":"a","tail":"\\\\\\""}');
    assert.equal(text(withTopLevelMember(raw, 'model', '"b"')), '{"path":"C:\\\\","model":"b","tail":"\\\\\\""}');
    const long = Buffer.from(`{"content":"${'x'.repeat(100)}\\\\","model":"a","more":"${'y'.repeat(100)}\\"}"}`);
    assert.equal(text(withTopLevelMember(long, 'model', '"b"')), long.toString().replace('"model":"a"', '"model":"b"'));
  });

  it("a string's end is found wherever its escapes fall, short strings and long", () => {
    for (let pad = 0; pad < 40; pad++) {
      for (const escaped of ['\\"', '\\\\', '\\\\\\"', '\\u0022', '\\"}', '\\\\\\\\']) {
        const value = `${'x'.repeat(pad)}${escaped}${'y'.repeat(pad % 7)}`;
        const raw = Buffer.from(`{"s":"${value}","model":"a","t":["${value}",{"u":"${value}"}]}`);
        assert.equal(topLevelMemberCount(raw), 3, `${pad} ${escaped}`);
        assert.equal(text(withTopLevelMember(raw, 'model', '"b"')), raw.toString().replace('"model":"a"', '"model":"b"'));
      }
    }
  });
});

describe('setting a member inside a top-level object (stream_options.include_usage)', () => {
  const set = (raw: string): string | null => text(withNestedMember(Buffer.from(raw), 'stream_options', 'include_usage', 'true'));

  it('an empty or partial stream_options gets the member first; its other members stay as written', () => {
    assert.equal(set('{"seed":9007199254740993,"stream_options":{}}'), '{"seed":9007199254740993,"stream_options":{"include_usage":true}}');
    assert.equal(set('{"stream_options":{ }, "n":1.0}'), '{"stream_options":{"include_usage":true }, "n":1.0}');
    assert.equal(
      set('{"stream_options" : { "x":{"include_usage":false}, "s":"\\"}" } }'),
      '{"stream_options" : {"include_usage":true, "x":{"include_usage":false}, "s":"\\"}" } }',
    );
  });

  it('a false (or any other) value is replaced, in every member of that name', () => {
    assert.equal(set('{"stream_options":{"include_usage" : false,"o":2}}'), '{"stream_options":{"include_usage" : true,"o":2}}');
    assert.equal(
      set('{"stream_options":{"include_usage":false,"include_\\u0075sage":true}}'),
      '{"stream_options":{"include_usage":true,"include_\\u0075sage":true}}',
    );
  });

  it('already true: the same buffer; null or absent stream_options: a fresh object', () => {
    const asked = Buffer.from('{"stream_options":{"include_usage":true}}');
    assert.equal(withNestedMember(asked, 'stream_options', 'include_usage', 'true'), asked);
    assert.equal(
      set('{"stream_options":null,"seed":9007199254740993}'),
      '{"stream_options":{"include_usage":true},"seed":9007199254740993}',
    );
    assert.equal(set('{"seed":9007199254740993}'), '{"stream_options":{"include_usage":true},"seed":9007199254740993}');
  });

  it('a member known to be absent is inserted without a scan', () => {
    const member = firstMember('stream_options', '{"include_usage":true}');
    assert.equal(text(withFirstMember(Buffer.from('\n{"a":1}'), member)), '\n{"stream_options":{"include_usage":true},"a":1}');
    assert.equal(text(withFirstMember(Buffer.from('{}'), member)), '{"stream_options":{"include_usage":true}}');
    assert.equal(withFirstMember(Buffer.from('"x"'), member), null);
  });
});

describe('the bodies sent upstream', () => {
  it('a renamed stream that sent stream_options {} keeps a seed beyond 2^53 and every other byte', () => {
    const raw = Buffer.from(
      `{"model":"alias", ${FRAGILE}, "stream":true, "stream_options":{}, "messages":[{"role":"user","content":"hi"}]}`,
    );
    const out = withStreamUsage(raw, parsedOf(raw), 'gpt-4o-mini');
    assert.equal(
      out.toString(),
      `{"model":"gpt-4o-mini", ${FRAGILE}, "stream":true, "stream_options":{"include_usage":true}, "messages":[{"role":"user","content":"hi"}]}`,
    );
  });

  it('without stream_options the member is inserted, the model renamed, the rest untouched', () => {
    const raw = Buffer.from(`{"model":"alias",${FRAGILE},"stream":true,"messages":[]}`);
    assert.equal(
      withStreamUsage(raw, parsedOf(raw), 'up').toString(),
      `{"stream_options":{"include_usage":true},"model":"up",${FRAGILE},"stream":true,"messages":[]}`,
    );
  });

  it('a rename keeps a model string holding escapes and non-ASCII valid JSON', () => {
    const raw = Buffer.from('{"model":"a","messages":[]}');
    const out = chatBodyFor(raw, parsedOf(raw), 'fine-tuned:"ü"\\x');
    assert.equal(parsedOf(out).model, 'fine-tuned:"ü"\\x');
  });
});

describe('counting and naming top-level keys', () => {
  it('counts members as written, nested ones not included', () => {
    assert.equal(topLevelMemberCount(Buffer.from('{}')), 0);
    assert.equal(topLevelMemberCount(Buffer.from(' { "a" : {"b":1,"c":[{"d":"}"}]} , "e":"\\"," ,"f":null}')), 3);
    assert.equal(topLevelMemberCount(Buffer.from('{"model":"a","model":"b"}')), 2);
    assert.equal(topLevelMemberCount(Buffer.from('[]')), -1);
  });

  it('names the first key written twice, decoded, and nothing when none is', () => {
    assert.equal(duplicateTopLevelKey(Buffer.from('{"model":"a","x":{"model":"c"},"model":"b"}')), 'model');
    assert.equal(duplicateTopLevelKey(Buffer.from('{"mo\\u0064el":"a","model":"b"}')), 'model');
    assert.equal(duplicateTopLevelKey(Buffer.from('{"a":1,"b":2,"b":3,"a":4}')), 'b');
    assert.equal(duplicateTopLevelKey(Buffer.from('{"model":"a","x":{"y":1,"y":2},"s":"\\"model\\":"}')), null);
  });
});

describe('any object body, as the scanner reads it', () => {
  const space = fc.constantFrom('', ' ', '\n', '\t ', '\r\n  ');
  /** A key as a client may write it: plain, or with some characters as \u escapes. */
  const spelled = fc.tuple(fc.constantFrom('model', 'stream', 'seed', 'k', 'ü', 'a"b', 'c\\d', ''), fc.boolean()).map(([key, escaped]) => {
    const quoted = JSON.stringify(key);
    const written = escaped ? quoted.replace(/[a-z]/, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : quoted;
    return { key, written };
  });
  const member = fc.record({ name: spelled, value: fc.json({ maxDepth: 3 }), before: space, after: space });

  it('counts every member as written, names a repeated key, and a splice changes only the value it sets', () => {
    fc.assert(
      fc.property(fc.array(member, { maxLength: 8 }), space, (members, edge) => {
        const parts: string[] = [];
        let length = 1 + edge.length;
        const ranges: Array<[string, number, number]> = [];
        for (const m of members) {
          const head = `${m.before}${m.name.written}${m.after}:${m.before}`;
          const start = Buffer.byteLength(head) + length;
          ranges.push([m.name.key, start, start + Buffer.byteLength(m.value)]);
          parts.push(`${head}${m.value}${m.after}`);
          length += Buffer.byteLength(parts.at(-1) as string) + 1;
        }
        const raw = Buffer.from(`${edge}{${parts.join(',')}}${edge}`);
        const parsed = parsedOf(raw);
        const keys = members.map((m) => m.name.key);
        assert.equal(topLevelMemberCount(raw), members.length);
        const repeated = keys.find((k, i) => keys.indexOf(k) !== i) ?? null;
        assert.equal(duplicateTopLevelKey(raw), repeated);
        if (repeated !== null) return;
        assert.equal(Object.keys(parsed).length, members.length);
        const model = ranges.find(([k]) => k === 'model');
        const out = withTopLevelMember(raw, 'model', '"X"') as Buffer;
        if (model === undefined) {
          assert.equal(out.toString(), raw.toString().replace('{', members.length === 0 ? '{"model":"X"' : '{"model":"X",'));
        } else {
          const expected = Buffer.concat([raw.subarray(0, model[1]), Buffer.from('"X"'), raw.subarray(model[2])]);
          assert.equal(out.toString(), expected.toString());
        }
      }),
      { numRuns: 300, seed: 20261201, endOnFailure: true },
    );
  });
});
