import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Ledger, migrate, openDatabase, usageRecords, usageTotals } from '../../src/database/index.js';
import type { GenerationCandidate } from '../../src/live/index.js';
import {
  accessLogSink,
  cacheStatsSink,
  Exchange,
  ledgerSink,
  metricsSink,
  type RecordSink,
  recordTo,
  spanSink,
} from '../../src/request/index.js';
import type { CacheOutcome } from '../../src/request/request-record.js';
import { AccessLog, CacheStats, createLogger, Metrics, type Span, Tracing } from '../../src/telemetry/index.js';
import { Collector } from '../support/otlp.js';
import { chainOf, keyringFor, modelRequest, ResponseDouble, staticGeneration } from './chain-fixture.js';

// Every sink reports what the response cache made of a request: the metrics count lookups by
// route and result and the money hits saved, the stats of /admin/status keep them by route
// and team, a hit's ledger row names the candidate that made its entry and costs nothing, an
// embedding the cache asked for is billed under endpoint `cache`, and the access line and
// the span carry the result and the key.

const gen = staticGeneration();
const [c0] = chainOf(gen, 'm') as [GenerationCandidate];
const principal = { keyId: 'k1', team: 'platform' };
const KEY = 'a'.repeat(64);

const dir = mkdtempSync(join(tmpdir(), 'switchyard-cache-sinks-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function outcome(more: Partial<CacheOutcome>): CacheOutcome {
  return { result: 'miss', route: 'm', key: KEY, similarity: null, savedMicroUsd: null, origin: null, ...more };
}

const origin = { provider: c0.provider.name, model: c0.upstreamModel, candidate: c0.stableId };

const responses = new WeakMap<Exchange, ResponseDouble>();

function request(id: string, model: string, span: Span | null): Exchange {
  const res = new ResponseDouble();
  const req = { headers: { 'x-request-id': id }, url: '/v1/chat/completions', method: 'POST' } as unknown as IncomingMessage;
  const x = new Exchange(req, res as unknown as ServerResponse, () => undefined);
  x.matched({ path: '/v1/chat/completions', operation: 'chat', protocol: 'openai' }, span);
  x.captured(gen, keyringFor(gen));
  x.authenticated(principal);
  x.asked(modelRequest(gen, model, { principal }));
  x.admitted();
  responses.set(x, res);
  return x;
}

function end(x: Exchange): Exchange {
  responses.get(x)?.end('{}');
  // Once for the response's close, once for the handler: the record ends on the second.
  x.done();
  x.done();
  return x;
}

/** Answered from the cache: no candidate, no usage, no cost. */
function hitRecord(id: string, cache: CacheOutcome, span: Span | null = null): Exchange {
  const x = request(id, 'm', span);
  x.cacheLooked(cache);
  x.servedFromCache(3);
  return end(x);
}

/** Looked up, not found, served by c0 and priced; then stored (or, for a cache with none, not looked up at all). */
function servedRecord(id: string, cache: CacheOutcome | null, more: { model?: string; cacheCall?: boolean; span?: Span } = {}): Exchange {
  const x = request(id, more.model ?? 'm', more.span ?? null);
  if (more.cacheCall === true) x.askedByCache();
  if (cache !== null) x.cacheLooked(cache);
  x.attemptStarted(null);
  x.committed(c0);
  x.headersArrived(performance.now());
  x.relayed({ outcome: 'complete', firstByteAt: null, events: 0 }, { inputTokens: 5, outputTokens: 7 });
  x.metered({ inputTokens: 5, outputTokens: 7 }, false);
  x.settled(900, false);
  if (cache !== null && cache.result !== 'bypass') x.cacheStored();
  return end(x);
}

interface Sinks {
  readonly metrics: Metrics;
  readonly stats: CacheStats;
  readonly record: (x: Exchange) => void;
  finish(): Promise<{ access: Record<string, unknown>[]; rows: Record<string, unknown>[]; totals: Record<string, unknown>[] }>;
}

let files = 0;

async function sinks(): Promise<Sinks> {
  files += 1;
  const metrics = new Metrics(() => []);
  const stats = new CacheStats();
  const accessPath = join(dir, `access-${files}.log`);
  const accessLog = new AccessLog({ level: 'info', destination: accessPath, flushMs: 60_000 });
  const database = openDatabase({ url: `sqlite:${join(dir, `ledger-${files}.db`)}` });
  assert.equal((await migrate(database.db, database.engine)).ok, true);
  const ledger = new Ledger(database, { queueRows: 100, retentionDays: 30 });
  await ledger.start();
  const list: RecordSink[] = [metricsSink(metrics), ledgerSink(ledger), cacheStatsSink(stats), accessLogSink(accessLog)];
  const record = recordTo(list, metrics, createLogger({ level: 'silent' }));
  return {
    metrics,
    stats,
    record,
    async finish() {
      accessLog.close();
      await ledger.close();
      const page = await usageRecords(database, { from: '2000-01-01T00:00:00.000Z', to: '2100-01-01T00:00:00.000Z' }, {}, { limit: 100 });
      const totals = await usageTotals(database, { fromDay: '2000-01-01', toDay: '2100-01-01' }, {}, ['model', 'provider']);
      await database.close();
      const access = readFileSync(accessPath, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      return {
        access,
        rows: page.rows as unknown as Record<string, unknown>[],
        totals: totals as unknown as Record<string, unknown>[],
      };
    },
  };
}

describe('the record sinks report the response cache', () => {
  it('a miss then a hit: counted by route and result, the hit’s row names the entry’s maker, costs nothing and carries what it saved', async () => {
    const s = await sinks();
    s.record(servedRecord('req-1-miss', outcome({ result: 'miss' })));
    s.record(hitRecord('req-2-hit', outcome({ result: 'hit', savedMicroUsd: 900, origin })));
    const { access, rows, totals } = await s.finish();

    const text = await s.metrics.render();
    assert.match(text, /switchyard_cache_lookups_total\{route="m",result="miss"\} 1/);
    assert.match(text, /switchyard_cache_lookups_total\{route="m",result="hit"\} 1/);
    assert.match(text, /switchyard_cache_saved_usd_total\{team="platform"\} 0\.0009/);
    // A hit called no provider: it counts as a request under provider none.
    assert.match(
      text,
      /switchyard_requests_total\{model="m",provider="none",status="200",team="platform",endpoint="\/v1\/chat\/completions"\} 1/,
    );
    assert.match(text, new RegExp(`switchyard_requests_total\\{model="m",provider="${c0.provider.name}",status="200"`));
    assert.match(text, new RegExp(`switchyard_cost_usd_total\\{model="m",provider="${c0.provider.name}"\\} 0\\.0009\\n`));
    assert.doesNotMatch(text, /switchyard_cost_usd_total\{model="m",provider="none"\}/, 'a hit spends nothing');

    assert.deepEqual(
      rows.map((r) => [
        r.requestId,
        r.model,
        r.provider,
        r.candidate,
        r.inputTokens,
        r.outputTokens,
        r.costMicroUsd,
        r.cache,
        r.savedMicroUsd,
      ]),
      [
        ['req-1-miss', 'm', c0.provider.name, c0.stableId, 5, 7, 900, 'miss', 0],
        ['req-2-hit', 'm', c0.provider.name, c0.stableId, 0, 0, 0, 'hit', 900],
      ],
    );
    assert.deepEqual(
      totals.map((t) => [t.requests, t.costMicroUsd, t.cacheHits, t.savedMicroUsd]),
      [[2, 900, 1, 900]],
      'the day’s rollup: two requests, one paid for, one answered from the cache',
    );

    assert.deepEqual(
      access.map((l) => [l.request_id, l.provider, l.cache, l.cache_key, l.cache_stored]),
      [
        ['req-1-miss', c0.provider.name, 'miss', KEY, true],
        ['req-2-hit', 'none', 'hit', KEY, undefined],
      ],
    );
    assert.deepEqual(
      s.stats.view().map((v) => [v.route, v.team, v.lookups.hit, v.lookups.miss, v.hitRate, v.savedMicroUsd, v.stored]),
      [['m', 'platform', 1, 1, 0.5, 900, 1]],
    );
  });

  it('a bypass, a refresh, a store error and an unpriced hit: each counted, nothing saved, no key where there was none', async () => {
    const s = await sinks();
    s.record(servedRecord('req-bypass', outcome({ result: 'bypass', key: null })));
    s.record(servedRecord('req-refresh', outcome({ result: 'refresh' })));
    s.record(servedRecord('req-error', outcome({ result: 'error' })));
    s.record(hitRecord('req-unpriced', outcome({ result: 'hit', savedMicroUsd: null, origin })));
    const { access, rows } = await s.finish();

    const text = await s.metrics.render();
    for (const result of ['bypass', 'refresh', 'error', 'hit'])
      assert.match(text, new RegExp(`switchyard_cache_lookups_total\\{route="m",result="${result}"\\} 1`));
    assert.doesNotMatch(text, /switchyard_cache_saved_usd_total\{/, 'an unpriced hit saved nothing it can count');
    // Rows finished within one millisecond are in request id order: compared by id.
    assert.deepEqual(Object.fromEntries(rows.map((r) => [r.requestId, [r.cache, r.savedMicroUsd]])), {
      'req-bypass': ['bypass', 0],
      'req-refresh': ['refresh', 0],
      'req-error': ['error', 0],
      'req-unpriced': ['hit', 0],
    });
    const bypass = access.find((l) => l.request_id === 'req-bypass');
    assert.ok(bypass !== undefined && bypass.cache === 'bypass' && !('cache_key' in bypass));
    const [row] = s.stats.view();
    assert.deepEqual(row?.lookups, { hit: 1, miss: 0, refresh: 1, bypass: 1, error: 1 });
    assert.equal(row?.hitRate, 1 / 3, 'a bypass is not a request the cache could have answered');
    assert.equal(row?.stored, 2, 'the refreshed and the errored answers were kept');
    assert.ok(!('cache_stored' in (bypass ?? {})), 'a bypass stores nothing');
  });

  it('a route without a cache adds nothing: no lookup, a null ledger column, no access-line member', async () => {
    const s = await sinks();
    s.record(servedRecord('req-uncached', null));
    const { access, rows } = await s.finish();
    assert.doesNotMatch(await s.metrics.render(), /switchyard_cache_lookups_total\{/);
    assert.deepEqual([rows[0]?.cache, rows[0]?.savedMicroUsd], [null, 0]);
    assert.ok(!('cache' in (access[0] ?? {})) && !('cache_key' in (access[0] ?? {})));
    assert.deepEqual(s.stats.view(), []);
  });

  it('a lookup for a model the generation does not route counts under route none, in the metrics and the stats', async () => {
    const s = await sinks();
    s.record(servedRecord('req-unrouted', outcome({ route: 'invented-model' }), { model: 'invented-model' }));
    await s.finish();
    const text = await s.metrics.render();
    assert.match(text, /switchyard_cache_lookups_total\{route="none",result="miss"\} 1/);
    assert.doesNotMatch(text, /invented-model/);
    assert.deepEqual(
      s.stats.view().map((v) => v.route),
      ['none'],
    );
  });

  it('the cache’s own embedding of a prompt is billed as a ledger row of endpoint cache', async () => {
    const s = await sinks();
    s.record(servedRecord('req-embed', null, { cacheCall: true }));
    const { rows } = await s.finish();
    assert.deepEqual([rows[0]?.endpoint, rows[0]?.costMicroUsd, rows[0]?.cache], ['cache', 900, null]);
  });

  it('semantic similarity falls in its bucket, hit or miss; an exact lookup has none', async () => {
    const s = await sinks();
    s.record(hitRecord('req-near', outcome({ result: 'hit', similarity: 0.96, savedMicroUsd: 10, origin })));
    s.record(servedRecord('req-far', outcome({ result: 'miss', similarity: 0.62 })));
    s.record(servedRecord('req-exact', outcome({ result: 'miss' })));
    await s.finish();
    const text = await s.metrics.render();
    assert.match(text, /switchyard_cache_similarity_bucket\{le="0.5"\} 0/);
    assert.match(text, /switchyard_cache_similarity_bucket\{le="0.7"\} 1/);
    assert.match(text, /switchyard_cache_similarity_bucket\{le="0.95"\} 1/);
    assert.match(text, /switchyard_cache_similarity_bucket\{le="0.97"\} 2/);
    assert.match(text, /switchyard_cache_similarity_count 2/);
  });
});

describe('the cache metrics the request path and the store feed', () => {
  it('switchyard_cache_bytes is 0 without a store, reads the store’s hook at each scrape, and keeps its last value when the store fails', async () => {
    const metrics = new Metrics(() => []);
    assert.match(await metrics.render(), /switchyard_cache_bytes 0\n/);
    let bytes = 1234;
    metrics.cacheBytes = () => bytes;
    assert.match(await metrics.render(), /switchyard_cache_bytes 1234\n/);
    bytes = 99;
    metrics.cacheBytes = async () => bytes;
    assert.match(await metrics.render(), /switchyard_cache_bytes 99\n/);
    metrics.cacheBytes = async () => {
      throw new Error('redis down');
    };
    assert.match(await metrics.render(), /switchyard_cache_bytes 99\n/);
    metrics.cacheBytes = () => {
      throw new Error('store closed');
    };
    assert.match(await metrics.render(), /switchyard_cache_bytes 99\n/);
  });

  it('switchyard_cache_errors_total counts what the request path tells it, by operation', async () => {
    const metrics = new Metrics(() => []);
    metrics.cacheErrors.inc({ operation: 'lookup' });
    metrics.cacheErrors.inc({ operation: 'lookup' });
    metrics.cacheErrors.inc({ operation: 'store' });
    const text = await metrics.render();
    assert.match(text, /switchyard_cache_errors_total\{operation="lookup"\} 2/);
    assert.match(text, /switchyard_cache_errors_total\{operation="store"\} 1/);
  });
});

describe('the span sink reports the response cache', { timeout: 30_000 }, () => {
  it('a hit has its result and key on its span; a request of a route without a cache has neither', async () => {
    const collector = new Collector();
    const endpoint = await collector.listen();
    try {
      const tracing = await Tracing.start({
        endpoint,
        headers: {},
        serviceName: 'cache-sinks',
        serviceVersion: 'test',
        instance: 'test',
        sampleRatio: 1,
      });
      const sink = spanSink(tracing);
      sink.write(
        hitRecord('req-span-hit', outcome({ result: 'hit', savedMicroUsd: 5, origin }), tracing.startServer('POST', 'hit', '/hit', {})),
      );
      sink.write(
        servedRecord('req-span-bypass', outcome({ result: 'bypass', key: null }), {
          span: tracing.startServer('POST', 'bypass', '/bypass', {}),
        }),
      );
      sink.write(servedRecord('req-span-plain', null, { span: tracing.startServer('POST', 'plain', '/plain', {}) }));
      await tracing.shutdown();
      const attrs = (name: string) => {
        const span = collector.spans.find((x) => x.name === `POST ${name}`);
        assert.ok(span !== undefined, `spans: ${collector.spans.map((x) => x.name).join(', ')}`);
        return Object.fromEntries(span.attributes.map((a) => [a.key, a.value]));
      };
      const hit = attrs('hit');
      assert.deepEqual(hit['switchyard.cache.result'], { stringValue: 'hit' });
      assert.deepEqual(hit['switchyard.cache.key'], { stringValue: KEY });
      const bypass = attrs('bypass');
      assert.deepEqual(bypass['switchyard.cache.result'], { stringValue: 'bypass' });
      assert.ok(!('switchyard.cache.key' in bypass));
      const plain = attrs('plain');
      assert.ok(!('switchyard.cache.result' in plain) && !('switchyard.cache.key' in plain));
    } finally {
      await new Promise((r) => collector.server.close(r));
    }
  });
});

describe('cache stats', () => {
  it('rows by route then team; the hit rate leaves bypasses out and is null before any lookup the cache could answer', () => {
    const stats = new CacheStats();
    stats.record('m', 'research', 'bypass', 0);
    stats.record('m', 'platform', 'hit', 100);
    stats.record('m', 'platform', 'hit', 50);
    stats.record('m', 'platform', 'miss', 0, true);
    stats.record('m', 'platform', 'error', 0);
    stats.record('a', 'none', 'refresh', 0);
    assert.deepEqual(stats.view(), [
      { route: 'a', team: 'none', lookups: { hit: 0, miss: 0, refresh: 1, bypass: 0, error: 0 }, hitRate: 0, savedMicroUsd: 0, stored: 0 },
      {
        route: 'm',
        team: 'platform',
        lookups: { hit: 2, miss: 1, refresh: 0, bypass: 0, error: 1 },
        hitRate: 0.5,
        savedMicroUsd: 150,
        stored: 1,
      },
      {
        route: 'm',
        team: 'research',
        lookups: { hit: 0, miss: 0, refresh: 0, bypass: 1, error: 0 },
        hitRate: null,
        savedMicroUsd: 0,
        stored: 0,
      },
    ]);
  });
});
