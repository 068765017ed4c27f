import { type AuditWriter, guardrailVerdict } from '../audit/index.js';
import { actedGuardrails, strongestAction } from '../guardrails/index.js';
import type { GuardrailStats, Metrics, Span } from '../telemetry/index.js';
import type { RecordSink } from './record.js';
import type { RequestRecord } from './request-record.js';

// What the sinks make of a record's guardrail verdicts, for a model request and a
// tools/call alike. Label values stay bounded: a verdict only ever names a configured
// guardrail, and its phase, action and error outcome are closed sets.

/** `switchyard_guardrail_verdicts_total`, `switchyard_guardrail_duration_seconds`, `switchyard_guardrail_errors_total`. */
export function countGuardrails(metrics: Metrics, r: RequestRecord): void {
  for (const v of r.guardrails) {
    metrics.guardrailVerdicts.series(v.guardrail, v.phase, v.action).inc();
    metrics.guardrailDuration.series(v.guardrail, v.phase).observe(v.latencyMs / 1000);
    if (v.error !== undefined) metrics.guardrailErrors.series(v.guardrail, v.error.outcome).inc();
  }
}

/** Each guardrail's verdicts, errors and latency since start: /admin/status and the status page. */
export function guardrailStatsSink(stats: GuardrailStats): RecordSink {
  return {
    name: 'guardrails',
    write(r) {
      for (const v of r.guardrails) stats.record(v.guardrail, v.phase, v.action, v.latencyMs, v.error?.outcome ?? null);
    },
  };
}

/**
 * An audit record per verdict that acted (warn, mask, block) or whose service could not
 * answer (even when fail_open let the request through): the categories and their counts,
 * never the text.
 */
export function auditGuardrails(audit: AuditWriter, r: RequestRecord): void {
  for (const v of r.guardrails) {
    if (v.action === 'allow' && v.error === undefined) continue;
    audit.append(
      guardrailVerdict({
        requestId: r.requestId,
        keyId: r.principal?.keyId ?? null,
        team: r.principal?.team ?? null,
        guardrail: v.guardrail,
        phase: v.phase,
        action: v.action,
        categories: v.categories,
        error: v.error ?? null,
        stream: v.stream ?? null,
        latencyMs: v.latencyMs,
      }),
    );
  }
}

/** The strongest action and the guardrails that acted, on the request's (or tools/call's) span; nothing when none acted. */
export function guardrailAttributes(span: Span, r: RequestRecord): void {
  const action = strongestAction(r.guardrails);
  if (action === null) return;
  span.setAttribute('switchyard.guardrail.action', action);
  span.setAttribute('switchyard.guardrail.names', actedGuardrails(r.guardrails));
}
