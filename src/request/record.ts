import { requestCompleted, toolCalled } from '../audit/index.js';
import type { Principal } from '../governance/index.js';
import type { Generation, GenerationCandidate } from '../live/index.js';
import type { TokenUsage } from '../providers/index.js';
import { genAiOperation, genAiSystem, type Tracing } from '../telemetry/index.js';
import { type Exchange, type Failure, pathOf, type ToolCallRecord } from './exchange.js';
import type { Services } from './services.js';

/**
 * The one record of a finished request: metrics, cost and the access line, written once
 * when its response has ended or failed, whatever answered it (a relayed response, a
 * refusal before routing, a failover that ran out of candidates, a client that left).
 * Label values stay bounded: a model is a label only when the generation routes it, so a
 * client cannot mint series by inventing model names.
 */
export function recordRequest(svc: Services, x: Exchange): void {
  const keyId = x.principal?.keyId;
  if (keyId != null) svc.keysUsed.seen(keyId, Date.now());
  if (x.toolCall !== null) return recordToolCall(svc, x, x.toolCall);
  const { metrics } = svc;
  const gen = x.gen;
  const c = x.candidate;
  const durationMs = performance.now() - x.startedAt;
  const status = x.status;
  const routed = x.model !== undefined && gen !== null && gen.routes[x.model] !== undefined;
  const model = routed ? (x.model as string) : 'none';
  const provider = c?.provider.name ?? 'none';
  const principal = x.principal;
  const team = principal?.team ?? 'none';
  metrics.requests.series(model, provider, String(status), team, x.endpoint).inc();
  const usage = x.usage;
  if (usage !== null) countTokens(svc, team, model, provider, usage);
  if (svc.ledger !== null && principal !== null) {
    svc.ledger.record({
      atMs: Date.now(),
      requestId: x.requestId,
      team,
      keyId: principal.keyId ?? 'none',
      endpoint: x.endpoint,
      model,
      provider,
      candidate: c?.stableId ?? 'none',
      inputTokens: usage?.inputTokens ?? 0,
      outputTokens: usage?.outputTokens ?? 0,
      cacheReadTokens: usage?.cacheReadTokens ?? 0,
      cacheWriteTokens: usage?.cacheWriteTokens ?? 0,
      costMicroUsd: x.costMicroUsd ?? 0,
      status: status === 'partial' ? x.res.statusCode : status,
      partial: isPartial(x, status),
      durationMs,
    });
  }
  metrics.requestDuration.series(model).observe(durationMs / 1000);
  if (c !== null && x.headersAt !== null) metrics.upstreamDuration.series(provider).observe((x.headersAt - x.attemptStartedAt) / 1000);
  if (x.stream && c !== null && x.firstByteAt !== null)
    metrics.timeToFirstToken.series(model, provider).observe((x.firstByteAt - x.startedAt) / 1000);
  const cost = x.costMicroUsd;
  if (cost !== null && cost > 0) metrics.costUsd.series(model, provider).inc(cost / 1e6);
  svc.recent.record(
    Date.now(),
    durationMs,
    status === 'partial' || status >= 500,
    c !== null || x.failures.length > 0,
    routed ? model : null,
    c?.stableId ?? null,
    provider,
    x.failures,
  );
  if (x.admitted && svc.audit !== null) auditCompleted(svc, x, status, durationMs);
  if (x.span !== null && svc.tracing !== null) endServerSpan(svc.tracing, x, status);
  if ((gen !== null && !gen.config.log.access) || !svc.accessLog.enabled) return;
  svc.accessLog.writeFields(accessLine(x, status, durationMs, x.model, provider));
}

/** `switchyard_tokens_total`, for every request with usage, priced or not (a kind with no tokens is left alone). */
function countTokens(svc: Services, team: string, model: string, provider: string, usage: TokenUsage): void {
  const tokens = svc.metrics.tokens;
  if (usage.inputTokens > 0) tokens.series(team, model, provider, 'input').inc(usage.inputTokens);
  if (usage.outputTokens > 0) tokens.series(team, model, provider, 'output').inc(usage.outputTokens);
  const cacheRead = usage.cacheReadTokens ?? 0;
  if (cacheRead > 0) tokens.series(team, model, provider, 'cache_read').inc(cacheRead);
  const cacheWrite = usage.cacheWriteTokens ?? 0;
  if (cacheWrite > 0) tokens.series(team, model, provider, 'cache_write').inc(cacheWrite);
}

/** Cut midway, by the upstream or by the client leaving after the response began. */
function isPartial(x: Exchange, status: number | 'partial'): boolean {
  return status === 'partial' || (x.outcome === 'aborted' && x.headersAt !== null);
}

/**
 * A tools/call's record: its metrics (the tool a label only when the generation routes it),
 * its audit record (who, which tool, where, how long, isError; never the arguments or the
 * result) and its access line.
 */
function recordToolCall(svc: Services, x: Exchange, call: ToolCallRecord): void {
  const durationMs = performance.now() - x.startedAt;
  const tool = call.routed ? call.tool : 'none';
  const c = call.candidate;
  const answered = call.outcome === 'result' || call.outcome === 'tool_error' || call.outcome === 'error';
  const provider = answered && c !== null ? c.server.name : 'none';
  svc.metrics.mcpToolCalls.series(tool, provider, call.outcome).inc();
  svc.metrics.mcpToolCallDuration.series(tool).observe(durationMs / 1000);
  const gen = x.gen;
  const status = x.status;
  const principal = x.principal;
  if (svc.ledger !== null && principal !== null) {
    svc.ledger.record({
      atMs: Date.now(),
      requestId: x.requestId,
      team: principal.team ?? 'none',
      keyId: principal.keyId ?? 'none',
      endpoint: x.endpoint,
      model: tool,
      provider,
      candidate: answered ? (c?.stableId ?? 'none') : 'none',
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costMicroUsd: 0,
      status: status === 'partial' ? x.res.statusCode : status,
      partial: status === 'partial',
      durationMs,
    });
  }
  svc.mcp.recent.record(
    Date.now(),
    durationMs,
    call.outcome === 'failed',
    answered || call.fallback.length > 0,
    call.routed ? call.tool : null,
    answered ? (c?.stableId ?? null) : null,
    provider,
    call.fallback.map((f, i) => ({ candidate: call.failedCandidates[i] ?? f })),
  );
  if (svc.audit !== null) {
    svc.audit.append(
      toolCalled({
        requestId: x.requestId,
        keyId: x.principal?.keyId ?? null,
        team: x.principal?.team ?? null,
        tool: call.tool,
        provider: c?.server.name ?? null,
        upstreamTool: c?.upstreamTool ?? null,
        stableId: c?.stableId ?? null,
        generation: gen?.number ?? null,
        keyring: x.keyring?.number ?? null,
        revision: gen?.overlay?.revision ?? null,
        outcome: call.outcome === 'tool_error' ? 'result' : call.outcome,
        isError: call.outcome === 'result' ? false : call.outcome === 'tool_error' ? true : null,
        reason: call.reason,
        fallback: call.fallback,
        latencyMs: durationMs,
      }),
    );
  }
  if (x.span !== null && svc.tracing !== null) {
    x.span.setAttribute('http.response.status_code', typeof status === 'number' ? status : x.res.statusCode);
    x.span.setAttribute('switchyard.request_id', x.requestId);
    if (gen !== null) x.span.setAttribute('switchyard.generation', gen.number);
    x.span.end();
  }
  if ((gen !== null && !gen.config.log.access) || !svc.accessLog.enabled) return;
  let s = `,"request_id":"${x.requestId}","method":"POST"${callerMembers(x.principal)},"mcp_method":"tools/call","tool":${q(call.tool)},"provider":${q(c?.server.name ?? 'none')}`;
  if (c !== null) s += `,"upstream_tool":${q(c.upstreamTool)},"candidate":${q(c.stableId)}`;
  if (gen !== null) s += `,"generation":${gen.number}`;
  if (x.keyring !== null) s += `,"keyring":${x.keyring.number}`;
  s += `,"status":${typeof status === 'number' ? status : '"partial"'},"outcome":"${call.outcome}"`;
  if (call.reason !== null) s += `,"reason":${q(call.reason)}`;
  s += `,"stream":${x.stream},"duration_ms":${msText(durationMs)}`;
  if (call.fallback.length > 0) s += `,"fallback":${q(call.fallback)}`;
  svc.accessLog.writeFields(s);
}

/**
 * The request's server span gets what the record knows: the model asked for and the one
 * that answered, the usage, the generation and revision that routed it, and whether it
 * failed over. A 5xx or a cut stream is an error; a 4xx is the client's, not the span's.
 */
function endServerSpan(tracing: Tracing, x: Exchange, status: number | 'partial'): void {
  const span = x.span as NonNullable<Exchange['span']>;
  const c = x.candidate;
  const gen = x.gen;
  span.setAttribute('http.response.status_code', typeof status === 'number' ? status : x.res.statusCode);
  span.setAttribute('switchyard.fallback', x.failures.length > 0);
  span.setAttribute('switchyard.request_id', x.requestId);
  if (x.model !== undefined) {
    span.setAttribute('gen_ai.operation.name', genAiOperation(x.operation));
    span.setAttribute('gen_ai.request.model', x.model);
  }
  if (gen !== null) {
    span.setAttribute('switchyard.generation', gen.number);
    if (gen.overlay !== null) span.setAttribute('switchyard.revision', gen.overlay.revision);
  }
  if (c !== null) {
    span.setAttribute('gen_ai.response.model', c.upstreamModel);
    span.setAttribute('gen_ai.provider.name', genAiSystem(c.provider.type));
    span.setAttribute('switchyard.provider', c.provider.name);
  }
  const usage = x.usage;
  if (usage !== null) {
    span.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
    span.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
  }
  if (x.costMicroUsd !== null) span.setAttribute('switchyard.cost_usd', x.costMicroUsd / 1e6);
  if (status === 'partial' || status === 499 || (typeof status === 'number' && status >= 500)) {
    tracing.fail(span, x.reason ?? (status === 'partial' ? 'stream_interrupted' : String(status)), x.reason ?? String(status), false);
  }
  span.end();
}

/** The audit record of an admitted request: what served it, what it used and cost. No prompt, completion or secret. */
function auditCompleted(svc: Services, x: Exchange, status: number | 'partial', durationMs: number): void {
  const c = x.candidate;
  svc.audit?.append(
    requestCompleted({
      requestId: x.requestId,
      keyId: x.principal?.keyId ?? null,
      team: x.principal?.team ?? null,
      model: x.model ?? null,
      provider: c?.provider.name ?? null,
      upstreamModel: c?.upstreamModel ?? null,
      stableId: c?.stableId ?? null,
      generation: x.gen?.number ?? null,
      keyring: x.keyring?.number ?? null,
      revision: x.gen?.overlay?.revision ?? null,
      status,
      fallback: x.failures.map(fallbackEntry),
      partial: isPartial(x, status),
      usageEstimated: x.usageEstimated,
      usage: x.usage,
      costMicroUsd: x.costMicroUsd,
      pricingMissing: x.pricingMissing,
      latencyMs: round3(durationMs),
      ttftMs: x.firstByteAt === null ? null : round3(x.firstByteAt - x.startedAt),
    }),
  );
}

const q = JSON.stringify;

/** `provider:reason`, and for a candidate that could not take the request `provider:unable:field`. */
function fallbackEntry(f: Failure): string {
  return f.reason === 'unable' ? `${f.provider}:unable:${f.detail}` : `${f.provider}:${f.reason}`;
}

/** The access line's caller members, per principal (the keyring's principals are frozen and shared by every request of a key). */
const callers = new WeakMap<Principal, string>();

/**
 * `,"team":…,"key":…` for an authenticated caller: the key's id, never its secret. Nothing
 * for a request refused before it had a caller (401), nor for the open gateway's anonymous one.
 */
function callerMembers(p: Principal | null): string {
  if (p === null) return '';
  let members = callers.get(p);
  if (members === undefined) {
    members = `${p.team === null ? '' : `,"team":${q(p.team)}`}${p.keyId === null ? '' : `,"key":${q(p.keyId)}`}`;
    callers.set(p, members);
  }
  return members;
}

/** The access line's members that are the same for every request a candidate serves under a model, per generation. */
const servedBy = new WeakMap<GenerationCandidate, { readonly gen: Generation; readonly model: string; readonly members: string }>();

function servedByMembers(gen: Generation, c: GenerationCandidate, model: string): string {
  const known = servedBy.get(c);
  if (known !== undefined && known.gen === gen && known.model === model) return known.members;
  const members = `,"model":${q(model)},"provider":${q(c.provider.name)},"upstream_model":${q(c.upstreamModel)},"candidate":${q(c.stableId)},"generation":${gen.number}`;
  servedBy.set(c, { gen, model, members });
  return members;
}

/**
 * The access line's members, serialised by hand: a generic JSON.stringify of the record
 * object cost twice as much. Every string that a client or a config can influence goes
 * through JSON.stringify (the request id is a UUID or matched a token pattern, and the
 * method is one llhttp accepted: neither needs it); the rest are numbers and booleans.
 * Absent fields are left out.
 */
function accessLine(x: Exchange, status: number | 'partial', durationMs: number, model: string | undefined, provider: string): string {
  const c = x.candidate;
  const gen = x.gen;
  let s = `,"request_id":"${x.requestId}","method":"${x.req.method ?? ''}"${callerMembers(x.principal)}`;
  if (c !== null && gen !== null && model !== undefined) s += servedByMembers(gen, c, model);
  else {
    s += model === undefined ? `,"path":${q(pathOf(x.req))}` : `,"model":${q(model)}`;
    s += `,"provider":${q(provider)}`;
    if (c !== null) s += `,"upstream_model":${q(c.upstreamModel)},"candidate":${q(c.stableId)}`;
    if (gen !== null) s += `,"generation":${gen.number}`;
  }
  // Per request, not per candidate: a keyring swap changes it without a new generation.
  if (x.keyring !== null) s += `,"keyring":${x.keyring.number}`;
  s += `,"status":${typeof status === 'number' ? status : '"partial"'}`;
  if (x.reason !== null) s += `,"reason":"${x.reason}"`;
  s += `,"partial":${status === 'partial'},"stream":${x.stream},"duration_ms":${msText(durationMs)}`;
  if (x.stream && x.firstByteAt !== null) s += `,"ttft_ms":${msText(x.firstByteAt - x.startedAt)}`;
  if (x.failures.length > 0) s += `,"fallback":${q(x.failures.map(fallbackEntry))}`;
  if (x.dropped !== null && x.candidate !== null) s += `,"dropped":${q(x.dropped)}`;
  const usage = x.usage;
  if (usage !== null) s += `,"input_tokens":${usage.inputTokens},"output_tokens":${usage.outputTokens}`;
  if (x.usageEstimated) s += ',"usage_estimated":true';
  if (x.costMicroUsd !== null) s += `,"cost_micro_usd":${x.costMicroUsd}`;
  return s;
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** ".001" to ".999" with trailing zeros dropped, and "" for 0: what `String(k / 1000)` prints after the point. */
const THOUSANDTHS: readonly string[] = Array.from({ length: 1000 }, (_, k) =>
  k === 0 ? '' : `.${String(k).padStart(3, '0').replace(/0+$/, '')}`,
);

/**
 * `String(round3(ms))`, the same text, built from two integers: formatting a double is the
 * dearest step of the access line (V8's number-to-string cache never holds a duration).
 */
export function msText(ms: number): string {
  const us = Math.round(ms * 1000);
  if (!(us >= 0 && us < 2 ** 31)) return String(us / 1000);
  const whole = Math.floor(us / 1000);
  return `${whole}${THOUSANDTHS[us - whole * 1000] as string}`;
}
