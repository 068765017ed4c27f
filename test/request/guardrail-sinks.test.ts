import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { AuditWriter, verifyAuditFile } from '../../src/audit/index.js';
import { Ledger, migrate, openDatabase, usageRecords } from '../../src/database/index.js';
import type { GuardrailVerdict } from '../../src/guardrails/index.js';
import type { GenerationCandidate } from '../../src/live/index.js';
import {
  accessLogSink,
  auditSink,
  Exchange,
  guardrailStatsSink,
  ledgerSink,
  metricsSink,
  type RecordSink,
  recordTo,
  spanSink,
} from '../../src/request/index.js';
import { AccessLog, createLogger, GuardrailStats, Metrics, type Span, Tracing } from '../../src/telemetry/index.js';
import { Collector } from '../support/otlp.js';
import { chainOf, keyringFor, modelRequest, ResponseDouble, staticGeneration } from './chain-fixture.js';

// Every sink reports a record's guardrail verdicts, for a model request and a tools/call
// alike: the metrics count them, the stats of /admin/status keep them, the ledger row has the
// strongest action, the access line names the guardrails that acted, and the audit log has
// a record per verdict that acted or failed; no sink ever holds the text a guardrail read.

const gen = staticGeneration();
const [c0] = chainOf(gen, 'm') as [GenerationCandidate];
const principal = { keyId: 'k1', team: 'platform' };
const SECRET_TEXT = 'alice@example.com';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-guardrail-sinks-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const masked: GuardrailVerdict = { guardrail: 'pii', phase: 'input', action: 'mask', categories: { email: 2 }, latencyMs: 0.4 };
const blocked: GuardrailVerdict = {
  guardrail: 'secrets',
  phase: 'output',
  action: 'block',
  categories: { aws_access_key: 1 },
  latencyMs: 1.2,
  stream: 'window',
};
const failedOpen: GuardrailVerdict = {
  guardrail: 'moderation',
  phase: 'input',
  action: 'allow',
  categories: {},
  latencyMs: 200,
  error: { kind: 'timeout', outcome: 'fail_open' },
};
const allowed: GuardrailVerdict = { guardrail: 'pii', phase: 'output', action: 'allow', categories: {}, latencyMs: 0.2 };

function request(id: string, path: string): { x: Exchange; res: ResponseDouble } {
  const res = new ResponseDouble();
  const req = { headers: { 'x-request-id': id }, url: path, method: 'POST' } as unknown as IncomingMessage;
  return { x: new Exchange(req, res as unknown as ServerResponse, () => undefined), res };
}

function servedRecord(id: string, verdicts: readonly GuardrailVerdict[], span: Span | null = null): Exchange {
  const { x, res } = request(id, '/v1/chat/completions');
  x.matched({ path: '/v1/chat/completions', operation: 'chat', protocol: 'openai' }, span);
  x.captured(gen, keyringFor(gen));
  x.authenticated(principal);
  x.asked(modelRequest(gen, 'm', { principal }));
  x.admitted();
  x.attemptStarted(null);
  x.committed(c0);
  x.headersArrived(performance.now());
  for (const v of verdicts) x.guardrailChecked(v);
  x.relayed({ outcome: 'complete', firstByteAt: null, events: 0 }, { inputTokens: 5, outputTokens: 7 });
  res.end('{}');
  // Once for the response's close, once for the handler: the record ends on the second.
  x.done();
  x.done();
  return x;
}

function toolCallRecord(id: string, verdicts: readonly GuardrailVerdict[]): Exchange {
  const { x, res } = request(id, '/mcp');
  x.matched({ path: '/mcp' }, null);
  x.captured(gen, keyringFor(gen));
  x.authenticated(principal);
  x.callStarted(false);
  x.toolCalled({
    tool: 'echo',
    routed: true,
    candidate: null,
    outcome: 'refused',
    reason: 'guardrail_blocked',
    fallback: [],
    failedCandidates: [],
  });
  for (const v of verdicts) x.guardrailChecked(v);
  res.end('{}');
  // Once for the response's close, once for the handler: the record ends on the second.
  x.done();
  x.done();
  return x;
}

interface Sinks {
  readonly metrics: Metrics;
  readonly stats: GuardrailStats;
  readonly record: (x: Exchange) => void;
  /** Closes every writer and returns what each wrote. */
  finish(): Promise<{
    access: Record<string, unknown>[];
    audit: Record<string, unknown>[];
    auditPath: string;
    rows: Record<string, unknown>[];
  }>;
}

let files = 0;

async function sinks(): Promise<Sinks> {
  files += 1;
  const metrics = new Metrics(() => []);
  const stats = new GuardrailStats();
  const accessPath = join(dir, `access-${files}.log`);
  const accessLog = new AccessLog({ level: 'info', destination: accessPath, flushMs: 60_000 });
  const auditPath = join(dir, `audit-${files}.jsonl`);
  const audit = await AuditWriter.open({ path: auditPath, instance: 'test' });
  const database = openDatabase({ url: `sqlite:${join(dir, `ledger-${files}.db`)}` });
  assert.equal((await migrate(database.db, database.engine)).ok, true);
  const ledger = new Ledger(database, { queueRows: 100, retentionDays: 30 });
  await ledger.start();
  const list: RecordSink[] = [
    metricsSink(metrics),
    ledgerSink(ledger),
    guardrailStatsSink(stats),
    auditSink(audit),
    accessLogSink(accessLog),
  ];
  const record = recordTo(list, metrics, createLogger({ level: 'silent' }));
  return {
    metrics,
    stats,
    record,
    async finish() {
      accessLog.close();
      await audit.close();
      await ledger.close();
      const page = await usageRecords(database, { from: '2000-01-01T00:00:00.000Z', to: '2100-01-01T00:00:00.000Z' }, {}, { limit: 100 });
      await database.close();
      const jsonLines = (path: string) =>
        readFileSync(path, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as Record<string, unknown>);
      return {
        access: jsonLines(accessPath),
        audit: jsonLines(auditPath),
        auditPath,
        rows: page.rows as unknown as Record<string, unknown>[],
      };
    },
  };
}

describe('the record sinks report guardrail verdicts', () => {
  it('a model request that was masked, blocked and checked through a service timeout: counted, kept, audited and named in its line', async () => {
    const s = await sinks();
    s.record(servedRecord('req-guarded', [masked, failedOpen, allowed, blocked]));
    const { access, audit, auditPath, rows } = await s.finish();

    const text = await s.metrics.render();
    assert.match(text, /switchyard_guardrail_verdicts_total\{guardrail="pii",phase="input",action="mask"\} 1/);
    assert.match(text, /switchyard_guardrail_verdicts_total\{guardrail="pii",phase="output",action="allow"\} 1/);
    assert.match(text, /switchyard_guardrail_verdicts_total\{guardrail="secrets",phase="output",action="block"\} 1/);
    assert.match(text, /switchyard_guardrail_verdicts_total\{guardrail="moderation",phase="input",action="allow"\} 1/);
    assert.match(text, /switchyard_guardrail_errors_total\{guardrail="moderation",outcome="fail_open"\} 1/);
    assert.doesNotMatch(text, /switchyard_guardrail_errors_total\{guardrail="pii"/);
    // 0.4 ms falls in the 0.0005 s bucket, not the 0.00025 s one.
    assert.match(text, /switchyard_guardrail_duration_seconds_bucket\{le="0.00025",guardrail="pii",phase="input"\} 0/);
    assert.match(text, /switchyard_guardrail_duration_seconds_bucket\{le="0.0005",guardrail="pii",phase="input"\} 1/);
    assert.match(text, /switchyard_guardrail_duration_seconds_count\{guardrail="moderation",phase="input"\} 1/);

    const pii = s.stats.view('pii');
    assert.deepEqual(pii.verdicts, { input: { mask: 1 }, output: { allow: 1 } });
    assert.equal(pii.checks, 2);
    assert.deepEqual(s.stats.view('moderation').errors, { fail_open: 1 });

    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.guardrail, 'block', 'the strongest action');

    assert.equal(access.length, 1);
    assert.deepEqual(access[0]?.guardrails, ['pii', 'secrets'], 'the guardrails that acted, each once, in order');

    const verdicts = audit.filter((r) => r.event === 'guardrail_verdict');
    assert.deepEqual(
      verdicts.map((r) => [r.guardrail, r.phase, r.action]),
      [
        ['pii', 'input', 'mask'],
        ['moderation', 'input', 'allow'],
        ['secrets', 'output', 'block'],
      ],
      'every verdict that acted, and the service that failed open; not the clean check',
    );
    assert.deepEqual(verdicts[0], {
      ...verdicts[0],
      request_id: 'req-guarded',
      key_id: 'k1',
      team: 'platform',
      categories: { email: 2 },
      error: null,
      stream: null,
      latency_ms: 0.4,
    });
    assert.deepEqual([verdicts[1]?.error, verdicts[2]?.stream], [{ kind: 'timeout', outcome: 'fail_open' }, 'window']);
    assert.equal(audit.at(-1)?.event, 'request_completed', 'the request’s own record follows its verdicts');
    const chain = await verifyAuditFile(auditPath);
    assert.ok(chain.ok && chain.records === audit.length, JSON.stringify(chain));
    for (const line of [...access, ...audit]) assert.ok(!JSON.stringify(line).includes(SECRET_TEXT));
  });

  it('a tools/call whose arguments a guardrail blocked: the same metrics, row, line and audit record as a model request', async () => {
    const s = await sinks();
    const argumentsBlocked: GuardrailVerdict = {
      guardrail: 'secrets',
      phase: 'arguments',
      action: 'block',
      categories: { github_token: 1 },
      latencyMs: 0.05,
    };
    s.record(toolCallRecord('call-guarded', [argumentsBlocked]));
    const { access, audit, rows } = await s.finish();

    assert.match(await s.metrics.render(), /switchyard_guardrail_verdicts_total\{guardrail="secrets",phase="arguments",action="block"\} 1/);
    assert.deepEqual(s.stats.view('secrets').verdicts, { arguments: { block: 1 } });
    assert.deepEqual([rows[0]?.endpoint, rows[0]?.guardrail], ['/mcp', 'block']);
    assert.deepEqual([access[0]?.tool, access[0]?.guardrails], ['echo', ['secrets']]);
    assert.deepEqual(
      audit.map((r) => [r.event, r.phase ?? null, r.action ?? null]),
      [
        ['guardrail_verdict', 'arguments', 'block'],
        ['tool_called', null, null],
      ],
    );
  });

  it('a request whose guardrails found nothing: counted as allow, but no audit record, no access-line member and a null ledger column', async () => {
    const s = await sinks();
    s.record(servedRecord('req-clean', [{ ...allowed, phase: 'input' }, allowed]));
    s.record(servedRecord('req-unguarded', []));
    const { access, audit, rows } = await s.finish();

    assert.match(await s.metrics.render(), /switchyard_guardrail_verdicts_total\{guardrail="pii",phase="output",action="allow"\} 1/);
    assert.deepEqual(
      rows.map((r) => r.guardrail),
      [null, null],
    );
    assert.ok(access.every((l) => !('guardrails' in l)));
    assert.deepEqual(
      audit.map((r) => r.event),
      ['request_completed', 'request_completed'],
    );
  });
});

describe('the span sink reports guardrail verdicts', { timeout: 30_000 }, () => {
  it('a request a guardrail acted on has the strongest action and the guardrails’ names on its span; a clean one has neither', async () => {
    const collector = new Collector();
    const endpoint = await collector.listen();
    const spans = collector.spans;
    try {
      const tracing = await Tracing.start({
        endpoint,
        headers: {},
        serviceName: 'guardrail-sinks',
        serviceVersion: 'test',
        instance: 'test',
        sampleRatio: 1,
      });
      const sink = spanSink(tracing);
      sink.write(servedRecord('req-span-guarded', [masked, allowed, blocked], tracing.startServer('POST', 'guarded', '/guarded', {})));
      sink.write(servedRecord('req-span-clean', [allowed], tracing.startServer('POST', 'clean', '/clean', {})));
      await tracing.shutdown();
      const attrs = (name: string) => {
        const span = spans.find((x) => x.name === `POST ${name}`);
        assert.ok(span !== undefined, `spans: ${spans.map((x) => x.name).join(', ')}`);
        return Object.fromEntries(span.attributes.map((a) => [a.key, a.value]));
      };
      const guarded = attrs('guarded');
      assert.deepEqual(guarded['switchyard.guardrail.action'], { stringValue: 'block' });
      assert.deepEqual(guarded['switchyard.guardrail.names'], {
        arrayValue: { values: [{ stringValue: 'pii' }, { stringValue: 'secrets' }] },
      });
      const clean = attrs('clean');
      assert.ok(!('switchyard.guardrail.action' in clean) && !('switchyard.guardrail.names' in clean));
    } finally {
      await new Promise((r) => collector.server.close(r));
    }
  });
});

describe('guardrail stats', () => {
  it('p50 and p99 come from a fixed histogram: within a quarter of the true value, and null before any check', () => {
    const stats = new GuardrailStats();
    assert.deepEqual(stats.view('pii'), { verdicts: {}, errors: {}, checks: 0, p50Ms: null, p99Ms: null });
    for (let i = 1; i <= 1000; i++) stats.record('pii', 'input', 'allow', i / 10, null);
    const v = stats.view('pii');
    assert.equal(v.checks, 1000);
    assert.ok(v.p50Ms !== null && v.p50Ms >= 50 && v.p50Ms <= 50 * 1.25, String(v.p50Ms));
    assert.ok(v.p99Ms !== null && v.p99Ms >= 99 && v.p99Ms <= 99 * 1.25, String(v.p99Ms));
    stats.record('judge', 'output', 'block', 0, 'fail_closed');
    stats.record('judge', 'output', 'block', 10 * 60_000, 'fail_closed');
    assert.deepEqual(stats.view('judge').errors, { fail_closed: 2 });
  });
});
