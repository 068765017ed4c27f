import { type AuditWriter, requestCompleted, toolCalled } from '../audit/index.js';
import { strongestAction } from '../guardrails/index.js';
import type { TokenUsage } from '../providers/index.js';
import { genAiOperation, genAiSystem, type Metrics, type RecentTraffic, type Tracing } from '../telemetry/index.js';
import { agentLedgerRow, agentSpanAttributes, auditAgentCall, countAgentCall, recentAgentCall } from './a2a/record.js';
import { cacheAttributes, countCache, savedMicroUsd } from './cache-sinks.js';
import { auditGuardrails, countGuardrails, guardrailAttributes } from './guardrail-sinks.js';
import type { KeysUsed } from './keys-used.js';
import type { RecordSink } from './record.js';
import type { Failure, RequestRecord, ToolCallRecord } from './request-record.js';
import { triedCandidates } from './residency.js';
import { type UsageLedger, untokenedRow } from './usage-row.js';

// The sinks of a finished request's record, but the access log's (access-line.ts). Each
// takes both kinds of record: a model request's, and a tools/call's on /mcp (toolCall set).

/** When each key was last used (the status page's "last used"). */
export function keysUsedSink(keysUsed: KeysUsed): RecordSink {
  return {
    name: 'keys_used',
    write(r) {
      const p = r.principal;
      // Signed-in principals are not keys: there is no key row to note, and no bound on how many there are.
      if (p != null && p.keyId !== null && p.grant === undefined) keysUsed.seen(p.keyId, r.endedAtMs);
    },
  };
}

/** Requests, tokens, durations and cost; tools/calls and their duration; the guardrails' verdicts on either; the response cache's lookups. */
export function metricsSink(metrics: Metrics): RecordSink {
  return {
    name: 'metrics',
    write(r) {
      countGuardrails(metrics, r);
      const agentCall = r.agentCall;
      if (agentCall !== null) return countAgentCall(metrics, r, agentCall);
      const call = r.toolCall;
      if (call !== null) {
        const tool = call.routed ? call.tool : 'none';
        metrics.mcpToolCalls.series(tool, toolProvider(call), call.outcome).inc();
        metrics.mcpToolCallDuration.series(tool).observe(r.durationMs / 1000);
        return;
      }
      countCache(metrics, r);
      const model = r.routedModel ?? 'none';
      const c = r.candidate;
      const provider = c?.provider.name ?? 'none';
      const team = r.principal?.team ?? 'none';
      metrics.requests.series(model, provider, String(r.status), team, r.endpoint).inc();
      const usage = r.usage;
      if (usage !== null) countTokens(metrics, team, model, provider, usage);
      metrics.requestDuration.series(model).observe(r.durationMs / 1000);
      if (c !== null && r.headersAt !== null) metrics.upstreamDuration.series(provider).observe((r.headersAt - r.attemptStartedAt) / 1000);
      if (r.stream && c !== null && r.firstByteAt !== null)
        metrics.timeToFirstToken.series(model, provider).observe((r.firstByteAt - r.startedAt) / 1000);
      const cost = r.costMicroUsd;
      if (cost !== null && cost > 0) metrics.costUsd.series(model, provider).inc(cost / 1e6);
    },
  };
}

/** `switchyard_tokens_total`, for every request with usage, priced or not (a kind with no tokens is left alone). */
function countTokens(metrics: Metrics, team: string, model: string, provider: string, usage: TokenUsage): void {
  const tokens = metrics.tokens;
  if (usage.inputTokens > 0) tokens.series(team, model, provider, 'input').inc(usage.inputTokens);
  if (usage.outputTokens > 0) tokens.series(team, model, provider, 'output').inc(usage.outputTokens);
  const cacheRead = usage.cacheReadTokens ?? 0;
  if (cacheRead > 0) tokens.series(team, model, provider, 'cache_read').inc(cacheRead);
  const cacheWrite = usage.cacheWriteTokens ?? 0;
  if (cacheWrite > 0) tokens.series(team, model, provider, 'cache_write').inc(cacheWrite);
}

/** A tools/call answered by an MCP server (a result, a tool error or its JSON-RPC error): that server. */
function answered(call: ToolCallRecord): boolean {
  return call.outcome === 'result' || call.outcome === 'tool_error' || call.outcome === 'error';
}

function toolProvider(call: ToolCallRecord): string {
  return answered(call) && call.candidate !== null ? call.candidate.server.name : 'none';
}

/** Cut midway, by the upstream or by the client leaving after the response began. */
export function isPartial(r: RequestRecord): boolean {
  return r.status === 'partial' || (r.outcome === 'aborted' && r.headersAt !== null);
}

/** One ledger row per finished request of an authenticated caller (a tool's: no tokens, no cost). */
export function ledgerSink(ledger: UsageLedger): RecordSink {
  return {
    name: 'ledger',
    write(r) {
      const principal = r.principal;
      if (principal === null) return;
      const agentCall = r.agentCall;
      if (agentCall !== null) return agentLedgerRow(ledger, r, agentCall);
      const call = r.toolCall;
      const status = r.status;
      if (call !== null) {
        const row = untokenedRow(r, {
          endpoint: r.endpoint,
          model: call.routed ? call.tool : 'none',
          provider: toolProvider(call),
          candidate: answered(call) ? (call.candidate?.stableId ?? 'none') : 'none',
          guardrail: strongestAction(r.guardrails),
        });
        if (row !== null) ledger.record(row);
        return;
      }
      const c = r.candidate;
      const usage = r.usage;
      const cache = r.cache;
      // A hit has no candidate: its row names the one that made the entry, and what that cost then.
      const origin = cache?.result === 'hit' ? cache.origin : null;
      ledger.record({
        atMs: r.endedAtMs,
        requestId: r.requestId,
        team: principal.team ?? 'none',
        keyId: principal.keyId ?? 'none',
        // A judge guardrail's question is billed as the guardrail's, apart from the request it judged.
        // So is the response cache's embedding of a prompt, as the cache's.
        endpoint: r.guardrailQuestion ? 'guardrail' : r.cacheCall ? 'cache' : r.endpoint,
        model: r.routedModel ?? 'none',
        provider: c?.provider.name ?? origin?.provider ?? 'none',
        candidate: c?.stableId ?? origin?.candidate ?? 'none',
        inputTokens: usage?.inputTokens ?? 0,
        outputTokens: usage?.outputTokens ?? 0,
        cacheReadTokens: usage?.cacheReadTokens ?? 0,
        cacheWriteTokens: usage?.cacheWriteTokens ?? 0,
        costMicroUsd: r.costMicroUsd ?? 0,
        status: status === 'partial' ? r.statusCode : status,
        partial: isPartial(r),
        durationMs: r.durationMs,
        guardrail: strongestAction(r.guardrails),
        cache: cache?.result ?? null,
        savedMicroUsd: savedMicroUsd(cache),
      });
    },
  };
}

/** The status page's recent traffic: models, tools on /mcp, and agents on /a2a. */
export function recentSink(models: RecentTraffic, tools: RecentTraffic, agents: RecentTraffic): RecordSink {
  return {
    name: 'recent_traffic',
    write(r) {
      const agentCall = r.agentCall;
      if (agentCall !== null) return recentAgentCall(agents, r, agentCall);
      const call = r.toolCall;
      if (call !== null) {
        const ok = answered(call);
        tools.record(
          r.endedAtMs,
          r.durationMs,
          call.outcome === 'failed',
          ok || call.fallback.length > 0,
          call.routed ? call.tool : null,
          ok ? (call.candidate?.stableId ?? null) : null,
          toolProvider(call),
          triedCandidates(call.fallback, call.failedCandidates),
        );
        return;
      }
      const c = r.candidate;
      const status = r.status;
      const failures = r.failures.length === 0 ? r.failures : tried(r.failures);
      models.record(
        r.endedAtMs,
        r.durationMs,
        status === 'partial' || status >= 500,
        c !== null || failures.length > 0,
        r.routedModel,
        c?.stableId ?? null,
        c?.provider.name ?? 'none',
        failures,
      );
    },
  };
}

/**
 * The audit record of an admitted request (what served it, what it used and cost), and of
 * every tools/call (who, which tool, where, how long, isError), each after the records of
 * the guardrails that acted on it. Never a prompt, a completion, a tool's arguments or
 * result, or a secret.
 */
export function auditSink(audit: AuditWriter): RecordSink {
  return {
    name: 'audit',
    write(r) {
      auditGuardrails(audit, r);
      const agentCall = r.agentCall;
      if (agentCall !== null) return auditAgentCall(audit, r, agentCall);
      const call = r.toolCall;
      if (call !== null) return auditToolCall(audit, r, call);
      if (!r.isAdmitted) return;
      const c = r.candidate;
      audit.append(
        requestCompleted({
          requestId: r.requestId,
          keyId: r.principal?.keyId ?? null,
          team: r.principal?.team ?? null,
          model: r.model ?? null,
          provider: c?.provider.name ?? null,
          upstreamModel: c?.upstreamModel ?? null,
          stableId: c?.stableId ?? null,
          generation: r.gen?.number ?? null,
          keyring: r.keyring?.number ?? null,
          revision: r.gen?.overlay?.revision ?? null,
          status: r.status,
          fallback: r.failures.map(fallbackEntry),
          partial: isPartial(r),
          usageEstimated: r.usageEstimated,
          usage: r.usage,
          costMicroUsd: r.costMicroUsd,
          pricingMissing: r.pricingMissing,
          latencyMs: round3(r.durationMs),
          ttftMs: r.firstByteAt === null ? null : round3(r.firstByteAt - r.startedAt),
        }),
      );
    },
  };
}

function auditToolCall(audit: AuditWriter, r: RequestRecord, call: ToolCallRecord): void {
  const c = call.candidate;
  audit.append(
    toolCalled({
      requestId: r.requestId,
      keyId: r.principal?.keyId ?? null,
      team: r.principal?.team ?? null,
      tool: call.tool,
      provider: c?.server.name ?? null,
      upstreamTool: c?.upstreamTool ?? null,
      stableId: c?.stableId ?? null,
      generation: r.gen?.number ?? null,
      keyring: r.keyring?.number ?? null,
      revision: r.gen?.overlay?.revision ?? null,
      outcome: call.outcome === 'tool_error' ? 'result' : call.outcome,
      isError: call.outcome === 'result' ? false : call.outcome === 'tool_error' ? true : null,
      reason: call.reason,
      fallback: call.fallback,
      latencyMs: r.durationMs,
    }),
  );
}

/** The failures of candidates that were tried: one outside the caller's zones was never sent anything, so it failed nothing. */
function tried(failures: readonly Failure[]): readonly Failure[] {
  return failures.some((f) => f.reason === 'residency') ? failures.filter((f) => f.reason !== 'residency') : failures;
}

/** `provider:reason`, and for a candidate that could not take the request `provider:unable:field`. */
export function fallbackEntry(f: Failure): string {
  return f.reason === 'unable' ? `${f.provider}:unable:${f.detail}` : `${f.provider}:${f.reason}`;
}

export function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/**
 * The request's server span gets what the record knows, and ends: the model asked for and
 * the one that answered, the usage, the generation and revision that routed it, and
 * whether it failed over. A 5xx or a cut stream is an error; a 4xx is the client's, not
 * the span's. A tools/call's span gets its status, request id and generation.
 */
export function spanSink(tracing: Tracing): RecordSink {
  return {
    name: 'span',
    write(r) {
      const span = r.span;
      if (span === null) return;
      const status = r.status;
      const gen = r.gen;
      span.setAttribute('http.response.status_code', typeof status === 'number' ? status : r.statusCode);
      if (r.guardrails.length > 0) guardrailAttributes(span, r);
      cacheAttributes(span, r);
      const agentCall = r.agentCall;
      if (agentCall !== null) {
        agentSpanAttributes(span, agentCall);
        if (agentCall.outcome === 'failed') tracing.fail(span, agentCall.reason ?? 'failed', agentCall.reason ?? 'failed', false);
      }
      if (r.toolCall !== null || agentCall !== null) {
        span.setAttribute('switchyard.request_id', r.requestId);
        if (gen !== null) span.setAttribute('switchyard.generation', gen.number);
        span.end();
        return;
      }
      const c = r.candidate;
      span.setAttribute('switchyard.fallback', r.failures.length > 0);
      span.setAttribute('switchyard.request_id', r.requestId);
      if (r.model !== undefined) {
        span.setAttribute('gen_ai.operation.name', genAiOperation(r.operation));
        span.setAttribute('gen_ai.request.model', r.model);
      }
      if (gen !== null) {
        span.setAttribute('switchyard.generation', gen.number);
        span.setAttribute('switchyard.topology', gen.digest);
        if (gen.overlay !== null) span.setAttribute('switchyard.revision', gen.overlay.revision);
      }
      if (c !== null) {
        span.setAttribute('gen_ai.response.model', c.upstreamModel);
        span.setAttribute('gen_ai.provider.name', genAiSystem(c.provider.type));
        span.setAttribute('switchyard.provider', c.provider.name);
      }
      const usage = r.usage;
      if (usage !== null) {
        span.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
        span.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
      }
      if (r.costMicroUsd !== null) span.setAttribute('switchyard.cost_usd', r.costMicroUsd / 1e6);
      if (status === 'partial' || status === 499 || (typeof status === 'number' && status >= 500)) {
        tracing.fail(span, r.reason ?? (status === 'partial' ? 'stream_interrupted' : String(status)), r.reason ?? String(status), false);
      }
      span.end();
    },
  };
}
