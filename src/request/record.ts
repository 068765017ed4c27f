import type { Logger, Metrics } from '../telemetry/index.js';
import type { RequestRecord } from './request-record.js';

/**
 * One place a finished request's record goes: metrics, the usage ledger, recent traffic,
 * the audit log, the server span, the access log. A sink takes the frozen record and
 * returns at once (whatever it does later, such as a batched write, is its own); it reads
 * nothing else of the request. Label values stay bounded: a model is a label only when its
 * generation routes it (RequestRecord.routedModel).
 */
export interface RecordSink {
  /** A short name: the `sink` label of `switchyard_record_sink_errors_total`, and the log's. */
  readonly name: string;
  write(record: RequestRecord): void;
}

/** How often a failing sink is logged, at most: one that fails on every request would otherwise flood the log. */
const SINK_WARNING_INTERVAL_MS = 60_000;

/**
 * The record's fan-out: each finished request's record goes to every sink of `sinks` (a
 * list the composition root builds once, at start), in order. A sink that throws is
 * counted and logged (at most once a minute per sink, with how many went unlogged) and
 * never keeps the record from the sinks after it, nor reaches the client, whose response
 * has already ended.
 */
export function recordTo(sinks: readonly RecordSink[], metrics: Metrics, logger: Logger): (record: RequestRecord) => void {
  const warned = new Map<string, { atMs: number; suppressed: number }>();
  const failed = (sink: RecordSink, err: unknown): void => {
    metrics.recordSinkErrors.inc({ sink: sink.name });
    const now = Date.now();
    const last = warned.get(sink.name);
    if (last !== undefined && now - last.atMs < SINK_WARNING_INTERVAL_MS) {
      last.suppressed += 1;
      return;
    }
    logger.error({
      msg: 'a record sink failed; the request was answered and its other sinks took its record',
      sink: sink.name,
      err: { message: (err as Error)?.message, stack: (err as Error)?.stack },
      suppressed: last?.suppressed ?? 0,
    });
    warned.set(sink.name, { atMs: now, suppressed: 0 });
  };
  return (record) => {
    for (const sink of sinks) {
      try {
        sink.write(record);
      } catch (err) {
        failed(sink, err);
      }
    }
  };
}
