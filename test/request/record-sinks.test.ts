import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { GenerationCandidate } from '../../src/live/index.js';
import {
  accessLogSink,
  Exchange,
  KeysUsed,
  keysUsedSink,
  metricsSink,
  type RecordSink,
  recentSink,
  recordTo,
} from '../../src/request/index.js';
import { AccessLog, createLogger, Metrics, RecentTraffic } from '../../src/telemetry/index.js';
import { chainOf, keyringFor, modelRequest, ResponseDouble, staticGeneration } from './chain-fixture.js';

// A finished request's record goes to a list of sinks built once. A sink that throws is
// counted (switchyard_record_sink_errors_total{sink}) and logged, and the sinks after it
// still take the record.

const gen = staticGeneration();
const [c0] = chainOf(gen, 'm') as [GenerationCandidate];
const principal = { keyId: 'k1', team: 'platform' };

function servedRecord(): Exchange {
  const res = new ResponseDouble();
  const req = { headers: { 'x-request-id': 'req-1' }, url: '/v1/chat/completions', method: 'POST' } as unknown as IncomingMessage;
  const x = new Exchange(req, res as unknown as ServerResponse, () => undefined);
  x.matched({ path: '/v1/chat/completions', operation: 'chat', protocol: 'openai' }, null);
  x.captured(gen, keyringFor(gen));
  x.authenticated(principal);
  x.asked(modelRequest(gen, 'm', { principal }));
  x.admitted();
  x.attemptStarted(null);
  x.committed(c0);
  x.headersArrived(performance.now());
  x.relayed({ outcome: 'complete', firstByteAt: null, events: 0 }, { inputTokens: 5, outputTokens: 7 });
  res.end('{}');
  x.done();
  x.done();
  return x;
}

const throwing: RecordSink = {
  name: 'broken',
  write() {
    throw new Error('this sink is broken');
  },
};

describe('record sinks', () => {
  it('a sink that throws is counted and logged; the sinks after it take the record all the same', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-sinks-'));
    const metrics = new Metrics(() => []);
    const logFile = join(dir, 'gateway.log');
    const logger = createLogger({ level: 'info', destination: logFile });
    const accessFile = join(dir, 'access.log');
    const accessLog = new AccessLog({ level: 'info', destination: accessFile, flushMs: 60_000 });
    const models = new RecentTraffic();
    const keysUsed = new KeysUsed();
    const record = recordTo(
      [
        keysUsedSink(keysUsed),
        throwing,
        metricsSink(metrics),
        recentSink(models, new RecentTraffic(), new RecentTraffic()),
        throwing,
        accessLogSink(accessLog),
      ],
      metrics,
      logger,
    );
    const x = servedRecord();
    record(x);
    record(x);
    accessLog.close();

    const text = await metrics.render();
    assert.match(text, /switchyard_record_sink_errors_total\{sink="broken"\} 4/);
    assert.match(
      text,
      /switchyard_requests_total\{model="m",provider="[^"]+",status="200",team="platform",endpoint="\/v1\/chat\/completions"\} 2/,
    );
    assert.match(text, /switchyard_tokens_total\{team="platform",model="m",provider="[^"]+",kind="output"\} 14/);
    const lines = readFileSync(accessFile, 'utf8').trim().split('\n');
    assert.equal(lines.length, 2, 'the access log, after the broken sink, wrote both lines');
    assert.equal((JSON.parse(lines[0] as string) as { request_id: string }).request_id, 'req-1');
    assert.ok(keysUsed.lastUsed('k1') !== null, 'the sink before the broken one took it too');
    assert.equal(Object.keys(models.models(Date.now(), 60_000)).length, 1, 'recent traffic took it');
    // Logged once a minute at most, whatever the number of failures.
    const errors = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; sink: string; err: { message: string } });
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.sink, 'broken');
    assert.equal(errors[0]?.err.message, 'this sink is broken');
  });

  it('the frozen record refuses a sink’s write: a sink cannot change what the next one reads', () => {
    const metrics = new Metrics(() => []);
    const logger = createLogger({ level: 'silent' });
    const meddling: RecordSink = { name: 'meddling', write: (r) => r.failed('internal_error') };
    const seen: (string | null)[] = [];
    const after: RecordSink = { name: 'after', write: (r) => seen.push(r.reason) };
    recordTo([meddling, after], metrics, logger)(servedRecord());
    assert.deepEqual(seen, [null]);
  });
});
