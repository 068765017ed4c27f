import { pathOf } from './endpoints.js';
import type { Exchange } from './exchange.js';
import type { Services } from './services.js';

/**
 * The one record of a finished request: metrics, cost and the access line, written once
 * when its response has ended or failed, whatever answered it (a relayed response, a
 * refusal before routing, a failover that ran out of candidates, a client that left).
 * Label values stay bounded: a model is a label only when the generation routes it, so a
 * client cannot mint series by inventing model names.
 */
export function recordRequest(svc: Services, x: Exchange): void {
  const { metrics } = svc;
  const gen = x.gen;
  const c = x.candidate;
  const durationMs = performance.now() - x.startedAt;
  const status = x.status;
  const routed = x.model !== undefined && gen !== null && gen.routes[x.model] !== undefined;
  const model = routed ? (x.model as string) : 'none';
  const provider = c?.provider.name ?? 'none';
  metrics.requests.series(model, provider, String(status)).inc();
  metrics.requestDuration.series(model).observe(durationMs / 1000);
  if (c !== null && x.headersAt !== null) metrics.upstreamDuration.series(provider).observe((x.headersAt - x.attemptStartedAt) / 1000);
  if (x.stream && c !== null && x.firstByteAt !== null) metrics.timeToFirstToken.series(model, provider).observe((x.firstByteAt - x.startedAt) / 1000);
  const cost = x.costMicroUsd;
  if (cost !== null && cost > 0) metrics.costUsd.series(model, provider).inc(cost / 1e6);
  if (gen !== null && !gen.config.log.access) return;
  const usage = x.usage;
  svc.accessLog.write({
    request_id: x.requestId,
    method: x.req.method,
    path: x.model === undefined ? pathOf(x.req) : undefined,
    model: x.model,
    provider,
    upstream_model: c?.upstreamModel,
    candidate: c?.stableId,
    generation: gen?.number,
    status,
    reason: x.reason ?? undefined,
    partial: status === 'partial',
    stream: x.stream,
    duration_ms: round3(durationMs),
    ttft_ms: x.stream && x.firstByteAt !== null ? round3(x.firstByteAt - x.startedAt) : undefined,
    fallback: x.failures.length === 0 ? undefined : x.failures.map((f) => `${f.provider}:${f.reason}`),
    input_tokens: usage?.inputTokens,
    output_tokens: usage?.outputTokens,
    cost_micro_usd: cost ?? undefined,
  });
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
