import { type AuditWriter, agentCalled } from '../../audit/index.js';
import type { Metrics, RecentTraffic, Span } from '../../telemetry/index.js';
import type { AgentCallRecord, RequestRecord } from '../request-record.js';
import { triedCandidates } from '../residency.js';
import { type UsageLedger, untokenedRow } from '../usage-row.js';

// What each sink of a finished request's record makes of a call on /a2a/<agent>: a metric,
// a ledger row (endpoint /a2a/<agent>, the agent as model, no tokens and no cost), the status
// page's recent traffic, an audit record, the span's attributes and an access line. Never a
// message's content: ids, the method, the task's state, where it went and how it ended.

const q = JSON.stringify;

/** An agent answered (its result, or its own JSON-RPC error): that upstream. */
function answered(call: AgentCallRecord): boolean {
  return call.outcome === 'answered' || call.outcome === 'error';
}

function agentProvider(call: AgentCallRecord): string {
  return answered(call) && call.candidate !== null ? call.candidate.server.name : 'none';
}

export function countAgentCall(metrics: Metrics, r: RequestRecord, call: AgentCallRecord): void {
  const agent = call.routed ? call.agent : 'none';
  metrics.a2aRequests.series(agent, call.method, call.outcome).inc();
  metrics.a2aRequestDuration.series(agent, call.method).observe(r.durationMs / 1000);
}

export function agentLedgerRow(ledger: UsageLedger, r: RequestRecord, call: AgentCallRecord): void {
  const row = untokenedRow(r, {
    // As other rows carry their path: one agent's calls are one endpoint.
    endpoint: call.routed ? `/a2a/${call.agent}` : '/a2a',
    model: call.routed ? call.agent : 'none',
    provider: agentProvider(call),
    candidate: answered(call) ? (call.candidate?.stableId ?? 'none') : 'none',
    guardrail: null,
  });
  if (row !== null) ledger.record(row);
}

export function recentAgentCall(agents: RecentTraffic, r: RequestRecord, call: AgentCallRecord): void {
  const ok = answered(call);
  agents.record(
    r.endedAtMs,
    r.durationMs,
    call.outcome === 'failed',
    ok || call.fallback.length > 0,
    call.routed ? call.agent : null,
    ok ? (call.candidate?.stableId ?? null) : null,
    agentProvider(call),
    triedCandidates(call.fallback, call.failedCandidates),
  );
}

export function auditAgentCall(audit: AuditWriter, r: RequestRecord, call: AgentCallRecord): void {
  const c = call.candidate;
  audit.append(
    agentCalled({
      requestId: r.requestId,
      keyId: r.principal?.keyId ?? null,
      team: r.principal?.team ?? null,
      agent: call.agent,
      method: call.method,
      version: call.version,
      provider: c?.server.name ?? null,
      stableId: c?.stableId ?? null,
      taskId: call.taskId,
      contextId: call.contextId,
      state: call.state,
      generation: r.gen?.number ?? null,
      keyring: r.keyring?.number ?? null,
      outcome: call.outcome,
      reason: call.reason,
      fallback: call.fallback,
      latencyMs: r.durationMs,
    }),
  );
}

/** OpenTelemetry's GenAI agent conventions: invoke_agent, the agent's name, and the task as an attribute. */
export function agentSpanAttributes(span: Span, call: AgentCallRecord): void {
  span.setAttribute('gen_ai.operation.name', 'invoke_agent');
  span.setAttribute('gen_ai.agent.name', call.agent);
  span.setAttribute('switchyard.a2a.method', call.method);
  span.setAttribute('switchyard.a2a.outcome', call.outcome);
  if (call.taskId !== null) span.setAttribute('switchyard.a2a.task_id', call.taskId);
  if (call.contextId !== null) span.setAttribute('gen_ai.conversation.id', call.contextId);
  if (call.state !== null) span.setAttribute('switchyard.a2a.task_state', call.state);
  if (call.candidate !== null) span.setAttribute('switchyard.provider', call.candidate.server.name);
}

/** An agent call's access line members after the caller's: the agent, method, where it went, the task; never the message. */
export function agentCallMembers(r: RequestRecord, call: AgentCallRecord): string {
  const c = call.candidate;
  const gen = r.gen;
  const status = r.status;
  let s = `,"agent":${q(call.agent)},"a2a_method":${q(call.method)}`;
  if (call.version !== null) s += `,"a2a_version":"${call.version}"`;
  s += `,"provider":${q(c?.server.name ?? 'none')}`;
  if (c !== null) s += `,"candidate":${q(c.stableId)}`;
  if (call.taskId !== null) s += `,"task_id":${q(call.taskId)}`;
  if (call.contextId !== null) s += `,"context_id":${q(call.contextId)}`;
  if (call.state !== null) s += `,"task_state":${q(call.state)}`;
  if (gen !== null) s += `,"generation":${gen.number}`;
  if (r.keyring !== null) s += `,"keyring":${r.keyring.number}`;
  s += `,"status":${typeof status === 'number' ? status : '"partial"'},"outcome":"${call.outcome}"`;
  if (call.reason !== null) s += `,"reason":${q(call.reason)}`;
  if (call.fallback.length > 0) s += `,"fallback":${q(call.fallback)}`;
  return s;
}
