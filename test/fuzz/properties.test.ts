import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseConfigText } from '../../src/config/index.js';
import { computeRevision, parseOverlay, REJECT_REASONS } from '../../src/contract/index.js';
import { chatBodyFor, usageFromJson, usageFromSseTail, withStreamUsage } from '../../src/providers/index.js';

// Property-based tests of the parsers that take outside input (ADR 0013). Each property says
// what must hold for any input: never throw, every rejection has a reason (and a path), an
// accepted overlay's revision is the digest of its content. Fixed seed in `npm test`;
// `npm run fuzz` runs many more cases (FUZZ_RUNS, FUZZ_SEED).

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const SEED = Number(process.env.FUZZ_SEED ?? 20261201);
const params = { numRuns: RUNS, seed: SEED, endOnFailure: true };

const VECTORS = join(import.meta.dirname, '../contract/vectors');
const validEnvelope = JSON.parse(readFileSync(join(VECTORS, 'minimal-envelope.json'), 'utf8')) as Record<string, unknown>;
const groupsEnvelope = JSON.parse(readFileSync(join(VECTORS, 'selection-groups-valid.json'), 'utf8')) as Record<string, unknown>;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every path (array of keys and indexes) into a JSON value. */
function pathsOf(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const out: Array<Array<string | number>> = [prefix];
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) out.push(...pathsOf(v, [...prefix, i]));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  }
  return out;
}

/** A copy of `doc` with the value at `path` replaced by `value`, or removed when `value` is undefined. */
function mutate(doc: unknown, path: Array<string | number>, value: Json | undefined): unknown {
  if (path.length === 0) return value ?? null;
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path.at(-1) as string | number;
  if (value === undefined) {
    if (Array.isArray(node)) node.splice(last as number, 1);
    else delete node[last];
  } else node[last] = value;
  return copy;
}

const json = fc.jsonValue() as fc.Arbitrary<Json>;

/** A valid envelope changed in one place: a value replaced or removed. */
const mutatedEnvelope = fc.constantFrom(validEnvelope, groupsEnvelope).chain((doc) => {
  const paths = pathsOf(doc);
  return fc.tuple(fc.constantFrom(...paths), fc.option(json, { nil: undefined })).map(([path, value]) => mutate(doc, path, value));
});

/** Text cut short or with one byte changed. */
function damaged(text: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.nat({ max: text.length }).map((n) => text.slice(0, n)),
    fc.tuple(fc.nat({ max: Math.max(0, text.length - 1) }), fc.integer({ min: 0, max: 255 })).map(([i, b]) => {
      const bytes = Buffer.from(text);
      bytes[Math.min(i, bytes.length - 1)] = b;
      return bytes.toString('latin1');
    }),
  );
}

function checkOverlay(input: string | Uint8Array): void {
  const r = parseOverlay(input);
  if (r.ok) {
    const document = JSON.parse(Buffer.from(input).toString('utf8')) as Record<string, unknown>;
    const payload = (document.overlay ?? document) as Parameters<typeof computeRevision>[0];
    assert.equal(r.overlay.revision, computeRevision(payload), 'an accepted overlay is the digest of its content');
  } else {
    assert.ok((REJECT_REASONS as readonly string[]).includes(r.reason), `a known reason: ${r.reason}`);
    assert.ok(r.message.length > 0, 'a message');
  }
}

describe('overlay parser properties', () => {
  it('any JSON value: never throws; a rejection has a known reason; an accepted overlay round-trips its digest', () => {
    fc.assert(
      fc.property(json, (v) => checkOverlay(JSON.stringify(v) ?? 'null')),
      params,
    );
  });

  it('a valid envelope changed in one place: the same', () => {
    fc.assert(
      fc.property(mutatedEnvelope, (doc) => checkOverlay(JSON.stringify(doc) ?? 'null')),
      params,
    );
  });

  it('a valid envelope cut short or with a byte changed: the same', () => {
    fc.assert(
      fc.property(damaged(JSON.stringify(validEnvelope)), (text) => checkOverlay(Buffer.from(text, 'latin1'))),
      params,
    );
  });
});

const VALID_CONFIG = `server: { listen: "127.0.0.1:8080" }
providers:
  east: { type: openai, base_url: "http://127.0.0.1:9001/v1", timeout_ms: 1000 }
routing:
  routes:
    m: { policy: ordered, candidates: [ { provider: east, model: up-m, weight: 2 } ] }
pricing: { models: { m: { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } } }
`;

function checkConfig(text: string): void {
  const r = parseConfigText(text, {});
  if (r.ok) return;
  assert.ok(r.issues.length > 0, 'a refusal says why');
  for (const issue of r.issues) {
    assert.equal(typeof issue.path, 'string', 'every issue has a path ("" = the file)');
    assert.ok(issue.message.length > 0, 'and a message');
  }
}

describe('config loader properties', () => {
  it('any text: never throws, and every error has a path and a message', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (t) => checkConfig(t)),
      params,
    );
  });

  it('any JSON document as config: the same', () => {
    fc.assert(
      fc.property(json, (v) => checkConfig(JSON.stringify(v) ?? 'null')),
      params,
    );
  });

  it('a valid config cut short or with a byte changed: the same', () => {
    fc.assert(
      fc.property(damaged(VALID_CONFIG), (t) => checkConfig(t)),
      params,
    );
  });
});

const COMPLETION = JSON.stringify({
  id: 'c',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
});
const SSE_TAIL = `data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: {"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}\n\ndata: [DONE]\n\n`;

describe('usage readers and the body splicer', () => {
  it('usage readers: damaged inputs never throw, and what they read is whole numbers', () => {
    fc.assert(
      fc.property(fc.oneof(damaged(COMPLETION), damaged(SSE_TAIL), fc.string({ maxLength: 300 })), (text) => {
        for (const u of [usageFromJson(Buffer.from(text, 'latin1')), usageFromSseTail(text)]) {
          if (u === null) continue;
          assert.ok(Number.isSafeInteger(u.inputTokens) && u.inputTokens >= 0);
          assert.ok(Number.isSafeInteger(u.outputTokens) && u.outputTokens >= 0);
        }
      }),
      params,
    );
  });

  it('the model splice: for any JSON object body, the result is that object with only the model replaced', () => {
    const body = fc.dictionary(fc.string({ maxLength: 12 }), json, { maxKeys: 6 }).map((o) => ({ ...o, model: 'client-model' }));
    fc.assert(
      fc.property(body, fc.string({ minLength: 1, maxLength: 40 }), fc.boolean(), (parsed, upstream, pretty) => {
        const raw = Buffer.from(JSON.stringify(parsed, null, pretty ? 2 : undefined));
        const out = chatBodyFor(raw, parsed, upstream);
        const spliced = JSON.parse(Buffer.from(out).toString('utf8')) as Record<string, unknown>;
        // Compared as JSON (a -0 in the input is 0 on the wire either way).
        assert.deepEqual(spliced, JSON.parse(JSON.stringify({ ...parsed, model: upstream })));
        const streamed = JSON.parse(Buffer.from(withStreamUsage(out, parsed, upstream)).toString('utf8')) as Record<string, unknown>;
        assert.equal((streamed.stream_options as { include_usage?: unknown } | undefined)?.include_usage, true);
        assert.equal(streamed.model, upstream);
      }),
      params,
    );
  });
});
