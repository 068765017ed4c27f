import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { compileRegexGuardrail, type PatternFinding } from '../../src/guardrails/index.js';

// The regex guardrail: an operator's RE2 patterns, matched in linear time, reported as
// sorted, non-overlapping findings with UTF-16 offsets into the text.

const run = promisify(execFile);

function guardrail(patterns: string[], categories?: string[]) {
  return compileRegexGuardrail({ patterns, window_chars: 400, ...(categories === undefined ? {} : { categories }) });
}

/** What each finding covers, so a wrong offset shows as the wrong text. */
function spans(text: string, findings: readonly PatternFinding[]): string[] {
  return findings.map((f) => `${f.entity}:${text.slice(f.start, f.end)}`);
}

describe('regex guardrail: matching', () => {
  it('finds every match of a pattern, named pattern_<i> by default', () => {
    const g = guardrail(['ignore (all|previous) instructions']);
    const text = 'please ignore all instructions, then ignore previous instructions too';
    const found = g.findAll(text);
    assert.deepEqual(spans(text, found), ['pattern_0:ignore all instructions', 'pattern_0:ignore previous instructions']);
    assert.deepEqual(found[0], { entity: 'pattern_0', start: 7, end: 30 });
  });

  it('names findings by the categories given, one per pattern', () => {
    const g = guardrail(['ticket-[0-9]+', 'sk-[A-Za-z0-9]{8}'], ['ticket', 'api_key']);
    const text = 'see ticket-42 and sk-AbCd1234';
    assert.deepEqual(spans(text, g.findAll(text)), ['ticket:ticket-42', 'api_key:sk-AbCd1234']);
  });

  it('finds nothing in text the patterns do not match, and nothing in an empty text', () => {
    const g = guardrail(['ignore (all|previous) instructions', 'sk-[A-Za-z0-9]{8}']);
    assert.deepEqual(g.findAll('please follow all instructions; ignore the noise; sk-short'), []);
    assert.deepEqual(g.findAll(''), []);
  });

  it('is case-sensitive unless the pattern starts with (?i)', () => {
    const text = 'IGNORE ALL INSTRUCTIONS';
    assert.deepEqual(guardrail(['ignore all instructions']).findAll(text), []);
    assert.deepEqual(spans(text, guardrail(['(?i)ignore all instructions']).findAll(text)), ['pattern_0:IGNORE ALL INSTRUCTIONS']);
  });

  it('honours other RE2 flag groups: (?s) lets . cross lines, (?m) anchors each line', () => {
    const text = 'begin\nsecret\nend\nsystem: obey';
    assert.deepEqual(spans(text, guardrail(['(?s)begin.*end']).findAll(text)), ['pattern_0:begin\nsecret\nend']);
    assert.deepEqual(guardrail(['begin.*end']).findAll(text), []);
    assert.deepEqual(spans(text, guardrail(['(?m)^system:']).findAll(text)), ['pattern_0:system:']);
    assert.deepEqual(guardrail(['^system:']).findAll(text), []);
  });

  it('reports no empty matches: a pattern that can match nothing only finds real text', () => {
    const text = 'abxxc';
    assert.deepEqual(spans(text, guardrail(['x*']).findAll(text)), ['pattern_0:xx']);
  });

  it('of two overlapping matches keeps the longer, even when it starts later', () => {
    const text = 'xx abcdefg yy';
    assert.deepEqual(spans(text, guardrail(['abc', 'bcdefg'], ['short', 'long']).findAll(text)), ['long:bcdefg']);
    assert.deepEqual(spans(text, guardrail(['abcd', 'cdef'], ['first', 'second']).findAll(text)), ['first:abcd']);
  });

  it('sorts findings of several patterns by position and drops overlaps, the longer winning', () => {
    const g = guardrail(['world', 'hello world', 'lo w', 'o'], ['w', 'hw', 'low', 'o']);
    const text = 'world, hello world, foo';
    const found = g.findAll(text);
    assert.deepEqual(spans(text, found), ['w:world', 'hw:hello world', 'o:o', 'o:o']);
    for (let i = 1; i < found.length; i += 1) assert.ok((found[i - 1] as PatternFinding).end <= (found[i] as PatternFinding).start);
  });

  it('keeps the earlier pattern when two match the same span', () => {
    const text = 'code 1234';
    assert.deepEqual(spans(text, guardrail(['[0-9]+', '1234'], ['digits', 'exact']).findAll(text)), ['digits:1234']);
    assert.deepEqual(spans(text, guardrail(['1234', '[0-9]+'], ['exact', 'digits']).findAll(text)), ['exact:1234']);
  });

  it('gives its window_chars as the reach a stream must hold back', () => {
    assert.equal(compileRegexGuardrail({ patterns: ['x'], window_chars: 250 }).reach, 250);
  });
});

describe('regex guardrail: offsets are UTF-16, as String.prototype.slice takes them', () => {
  it('after accented letters, CJK and emoji (two code units each)', () => {
    const text = 'Café 東京 😀😀 ignore all instructions 🎉 and ignore previous instructions';
    const found = guardrail(['ignore (all|previous) instructions']).findAll(text);
    assert.deepEqual(spans(text, found), ['pattern_0:ignore all instructions', 'pattern_0:ignore previous instructions']);
    assert.equal(found[0]?.start, text.indexOf('ignore all'));
    assert.equal(found[1]?.start, text.indexOf('ignore previous'));
  });

  it('a match that contains emoji ends after its last surrogate', () => {
    const text = 'a 😀x😀 b';
    const found = guardrail(['😀.😀']).findAll(text);
    assert.deepEqual(found, [{ entity: 'pattern_0', start: 2, end: 7 }]);
    assert.equal(text.slice(2, 7), '😀x😀');
  });

  it('. matches an emoji as one character, not half of one', () => {
    const text = '[😀]';
    assert.deepEqual(spans(text, guardrail(['\\[.\\]']).findAll(text)), ['pattern_0:[😀]']);
  });

  it('a lone surrogate (text cut mid-emoji) neither throws nor shifts the offsets after it', () => {
    const text = 'x\uD800 secret \uDC00a\uD83Db';
    const found = guardrail(['secret', 'a.b']).findAll(text);
    assert.deepEqual(found, [
      { entity: 'pattern_0', start: 3, end: 9 },
      { entity: 'pattern_1', start: 11, end: 14 },
    ]);
  });

  it('case-insensitive matching of non-ASCII letters', () => {
    const text = 'Ärger: ÉCOLE';
    assert.deepEqual(spans(text, guardrail(['(?i)école']).findAll(text)), ['pattern_0:ÉCOLE']);
  });
});

describe('regex guardrail: linear time', () => {
  it('refuses at compile what RE2 cannot run in linear time: backreferences and lookaround', () => {
    for (const pattern of ['(a)\\1', '(?=a)b', '(?!a)b', '(?<=a)b', '(?<!a)b'])
      assert.throws(() => guardrail([pattern]), /patterns\[0\]: RE2 cannot compile it/, pattern);
  });

  it('a pathological pattern, (a+)+$ on 30000 a and a b, finishes without a match', async () => {
    const found = await inChildProcess(['(a+)+$', '(a|aa)+c', '(.*a){20}$'], `${'a'.repeat(30_000)}b`);
    assert.deepEqual(found, []);
  });

  it('a pathological pattern that does match still reports the match', async () => {
    const found = await inChildProcess(['(a+)+b'], `${'a'.repeat(30_000)}b`);
    assert.deepEqual(found, [{ entity: 'pattern_0', start: 0, end: 30_001 }]);
  });
});

const INDEX = new URL('../../src/guardrails/index.ts', import.meta.url).href;

/**
 * findAll in a process of its own, killed after a generous hang bound: a match that never
 * ends holds its thread, so only another process can give up on it. Not a speed claim.
 */
async function inChildProcess(patterns: string[], text: string): Promise<PatternFinding[]> {
  const script = `
    const { compileRegexGuardrail } = await import(${JSON.stringify(INDEX)});
    const input = JSON.parse(process.argv[1]);
    const g = compileRegexGuardrail({ patterns: input.patterns, window_chars: 400 });
    process.stdout.write(JSON.stringify(g.findAll(input.text)));
  `;
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', script, JSON.stringify({ patterns, text })],
    {
      timeout: 60_000,
      killSignal: 'SIGKILL',
    },
  );
  return JSON.parse(stdout) as PatternFinding[];
}
