import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ErrorCode, SwitchyardError, statusOf } from '../errors.js';
import { priceUsage } from '../governance/index.js';
import type { Generation, GenerationCandidate } from '../live/index.js';
import { CHAT_COMPLETIONS_PATH, chatBodyFor, type TokenUsage, upstreamHeaders } from '../providers/index.js';
import type { FailureReason } from '../resilience/index.js';
import { select } from '../routing/index.js';
import { readBody } from './body.js';
import { parseChatRequest } from './chat-request.js';
import { type AttemptResult, UpstreamExchange } from './relay.js';
import { sendError } from './respond.js';
import type { ListenerSettings, Services } from './services.js';
import { sessionKeyOf } from './session.js';

interface Failure {
  readonly provider: string;
  readonly reason: FailureReason;
  readonly detail: string;
}

/**
 * POST /v1/chat/completions. One pass: read and parse the body once, capture the
 * generation once, select a chain, then try candidates in order until one answers.
 * Failover happens only before the first response byte; everything after that point is
 * relayed as it comes. The request is priced with the captured generation's table.
 */
export async function handleChat(req: IncomingMessage, res: ServerResponse, svc: Services, settings: ListenerSettings): Promise<void> {
  const startedAt = performance.now();
  const raw = await readBody(req, settings.maxBodyBytes);
  const chat = parseChatRequest(raw);
  const gen = svc.holder.current();
  const route = gen.routes[chat.model];
  if (route === undefined) {
    // In overlay mode the control plane decides which models exist: a model it does not
    // list (or withdrew) is a no-route decision, not a typo.
    if (gen.overlay !== null) throw new SwitchyardError('no_route', `model "${chat.model}" has no candidate in overlay revision ${gen.overlay.revision}`, 'model');
    throw new SwitchyardError('model_not_found', `model "${chat.model}" is not routed by this gateway; GET /v1/models lists the models it serves`, 'model');
  }

  const sessionKey = sessionKeyOf(req, gen.config.routing.session_affinity);
  const bindingKey = sessionKey === undefined ? undefined : `${chat.model}\u0000${sessionKey}`;
  const boundStableId = bindingKey === undefined ? undefined : svc.affinity.get(bindingKey);
  const { chain } = select(route, { counters: svc.counters, random: svc.random, boundStableId });
  if (chain.length === 0) throw new SwitchyardError('no_route', `model "${chat.model}" has no candidate that can serve new requests right now`, 'model');

  const requestId = requestIdOf(req);
  const failures: Failure[] = [];
  const routed: Routed = { svc, gen, model: chat.model, stream: chat.stream, startedAt, requestId, failures };
  const accept = chat.stream ? 'text/event-stream' : 'application/json';

  const attempt = async (c: GenerationCandidate, probe: boolean): Promise<AttemptResult> => {
    const provider = c.provider;
    if (c.credentialProblem !== null) {
      if (probe) svc.breakers.release(c.identity);
      return { kind: 'failed', reason: 'credential_unavailable', detail: c.credentialProblem };
    }
    const calledAt = performance.now();
    const call = {
      method: 'POST' as const,
      path: CHAT_COMPLETIONS_PATH,
      headers: withRouting(upstreamHeaders(c.credential ?? provider.credential, provider.headers, accept, requestId), gen, c, requestId),
      body: chatBodyFor(raw, chat.parsed, c.upstreamModel),
      timeoutMs: provider.timeoutMs,
    };
    const result = await UpstreamExchange.run(res, provider.pool, provider.name, call, () => {
      // Called once the response is committed to this candidate: record it as healthy.
      svc.breakers.recordSuccess(c.identity);
      svc.metrics.upstreamDuration.observe({ provider: provider.name }, (performance.now() - calledAt) / 1000);
      const attribution: Record<string, string> = {
        'x-switchyard-provider': provider.name,
        'x-switchyard-model': c.upstreamModel,
        'x-switchyard-candidate': c.stableId,
        'x-switchyard-generation': String(gen.number),
        'x-switchyard-request-id': requestId,
      };
      if (gen.overlay !== null) attribution['x-switchyard-revision'] = gen.overlay.revision;
      if (failures.length > 0) attribution['x-switchyard-fallback'] = failures.map((f) => f.provider).join(',');
      return attribution;
    });
    if (result.kind === 'failed') svc.breakers.recordFailure(c.identity, probe);
    else if (result.kind === 'aborted' && probe) svc.breakers.release(c.identity);
    else if (result.kind === 'served') {
      if (result.outcome === 'partial') svc.breakers.recordFailure(c.identity, false);
      if (bindingKey !== undefined && result.status < 300) svc.affinity.bind(bindingKey, c.stableId);
    }
    return result;
  };

  let attempted = 0;
  // First pass skips candidates whose breaker is open. When every breaker was open, the
  // chain is tried anyway, in order: failing fast would turn a provider blip into an outage.
  for (let pass = 0; pass < 2 && attempted === 0; pass++) {
    for (const c of chain) {
      let probe = false;
      if (pass === 0) {
        const admission = svc.breakers.admit(c.identity);
        if (admission === 'deny') continue;
        probe = admission === 'probe';
      }
      attempted += 1;
      const result = await attempt(c, probe);
      if (result.kind === 'failed') {
        failures.push({ provider: c.provider.name, reason: result.reason, detail: result.detail });
        svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: result.reason });
        continue;
      }
      if (result.kind === 'aborted') {
        record(routed, c, 499, null);
        return;
      }
      const status = result.outcome === 'partial' ? 'partial' : result.outcome === 'aborted' ? 499 : result.status;
      if (chat.stream && result.firstByteAt !== null) {
        svc.metrics.timeToFirstToken.observe({ model: chat.model, provider: c.provider.name }, (result.firstByteAt - startedAt) / 1000);
      }
      record(routed, c, status, result.usage);
      return;
    }
  }

  const code = failureCode(failures);
  const summary = failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
  record(routed, null, statusOf(code), null);
  sendError(res, code, `all ${chain.length} candidate(s) for model "${chat.model}" failed (${summary})`);
}

/**
 * One status for "every candidate failed": when all failures agree (all timeouts, all
 * 429s, all missing credentials) the client gets that specific answer; a mix is a 502.
 */
function failureCode(failures: readonly Failure[]): ErrorCode {
  const first = failures[0];
  if (first === undefined) return 'upstream_unavailable';
  if (failures.some((f) => f.reason !== first.reason)) return 'upstream_error';
  switch (first.reason) {
    case 'timeout':
      return 'upstream_timeout';
    case 'status_429':
      return 'upstream_rate_limited';
    case 'credential_unavailable':
      return 'credential_unavailable';
    default:
      return 'upstream_error';
  }
}

/** Grid provider-hop headers, so a provider behind a Grid hop can attribute the request. */
function withRouting(headers: Record<string, string>, gen: Generation, c: GenerationCandidate, requestId: string): Record<string, string> {
  if (gen.overlay === null) return headers;
  headers['x-ai-routing-candidate'] = c.stableId;
  headers['x-ai-routing-request-id'] = requestId;
  headers['x-ai-routing-revision'] = gen.overlay.revision;
  return headers;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** Micro-USD to a thousandth: enough for any price, and free of float noise in logs. */
function roundMicro(value: number | null): number | null {
  return value === null ? null : Math.round(value * 1000) / 1000;
}

/** What is known of a request once it is routed; everything its outcome line needs. */
interface Routed {
  readonly svc: Services;
  /** The generation captured at the start: the request is priced with its table. */
  readonly gen: Generation;
  readonly model: string;
  readonly stream: boolean;
  readonly startedAt: number;
  readonly requestId: string;
  readonly failures: readonly Failure[];
}

/** Metrics, cost and the access line for one finished request. c is null when every candidate failed. */
function record(r: Routed, c: GenerationCandidate | null, status: number | 'partial', usage: TokenUsage | null): void {
  const { svc, gen, model } = r;
  const durationMs = performance.now() - r.startedAt;
  const provider = c?.provider.name ?? 'none';
  svc.metrics.requests.inc({ model, provider, status: String(status) });
  svc.metrics.requestDuration.observe({ model }, durationMs / 1000);
  const costMicroUsd = usage === null || c === null ? null : roundMicro(priceUsage(gen.pricing, provider, c.upstreamModel, usage));
  if (costMicroUsd !== null && costMicroUsd > 0) svc.metrics.costUsd.inc({ model, provider }, costMicroUsd / 1e6);
  if (!gen.config.log.access || !svc.accessLog.enabled) return;
  svc.accessLog.write({
    request_id: r.requestId,
    model,
    provider,
    upstream_model: c?.upstreamModel,
    candidate: c?.stableId,
    generation: gen.number,
    status,
    partial: status === 'partial',
    stream: r.stream,
    duration_ms: Math.round(durationMs * 1000) / 1000,
    fallback: r.failures.length === 0 ? undefined : r.failures.map((f) => `${f.provider}:${f.reason}`),
    input_tokens: usage?.inputTokens,
    output_tokens: usage?.outputTokens,
    cost_micro_usd: costMicroUsd ?? undefined,
  });
}
