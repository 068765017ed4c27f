import type { Principal } from '../governance/index.js';
import { actedGuardrails } from '../guardrails/index.js';
import type { Generation, GenerationCandidate } from '../live/index.js';
import type { AccessLog } from '../telemetry/index.js';
import { agentCallMembers } from './a2a/record.js';
import { cacheMembers } from './cache-sinks.js';
import { pathOf } from './exchange.js';
import type { RecordSink } from './record.js';
import { fallbackEntry } from './record-sinks.js';
import type { AgentCallRecord, RequestRecord, ToolCallRecord } from './request-record.js';

/**
 * The access line of every finished request, when the access log is on (`log.access` in
 * the request's generation, and a level that writes it): the hot sink, so its members are
 * serialised by hand and what is the same for many requests is cached.
 */
export function accessLogSink(accessLog: AccessLog): RecordSink {
  return {
    name: 'access_log',
    write(r) {
      const gen = r.gen;
      if ((gen !== null && !gen.config.log.access) || !accessLog.enabled) return;
      const agentCall = r.agentCall;
      if (agentCall !== null) return accessLog.writeFields(agentCallLine(r, agentCall));
      const call = r.toolCall;
      accessLog.writeFields(call === null ? accessLine(r) : toolCallLine(r, call));
    },
  };
}

const q = JSON.stringify;

/** The access line's caller members, per principal (the keyring's principals are frozen and shared by every request of a key). */
const callers = new WeakMap<Principal, string>();

/**
 * `,"team":…,"key":…` for an authenticated caller: the key's id, never its secret (`"principal":…`
 * for a signed-in caller, never its token). Nothing
 * for a request refused before it had a caller (401), nor for the open gateway's anonymous one.
 */
function callerMembers(p: Principal | null): string {
  if (p === null) return '';
  let members = callers.get(p);
  if (members === undefined) {
    // A signed-in caller's principal id stands where a key's id would.
    const who = p.keyId === null ? '' : p.grant !== undefined ? `,"principal":${q(p.keyId)}` : `,"key":${q(p.keyId)}`;
    members = `${p.team === null ? '' : `,"team":${q(p.team)}`}${who}`;
    callers.set(p, members);
  }
  return members;
}

/** The access line's members that are the same for every request a candidate serves under a model, per generation. */
const servedBy = new WeakMap<GenerationCandidate, { readonly gen: Generation; readonly model: string; readonly members: string }>();

function servedByMembers(gen: Generation, c: GenerationCandidate, model: string): string {
  const known = servedBy.get(c);
  if (known !== undefined && known.gen === gen && known.model === model) return known.members;
  const members = `,"model":${q(model)},"provider":${q(c.provider.name)},"upstream_model":${q(c.upstreamModel)},"candidate":${q(c.stableId)},"generation":${gen.number},"topology":"${gen.digest}"`;
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
function accessLine(r: RequestRecord): string {
  const c = r.candidate;
  const gen = r.gen;
  const model = r.model;
  const status = r.status;
  let s = `,"request_id":"${r.requestId}","method":"${r.req.method ?? ''}"${callerMembers(r.principal)}`;
  if (c !== null && gen !== null && model !== undefined) s += servedByMembers(gen, c, model);
  else {
    s += model === undefined ? `,"path":${q(pathOf(r.req))}` : `,"model":${q(model)}`;
    s += `,"provider":${q(c?.provider.name ?? 'none')}`;
    if (c !== null) s += `,"upstream_model":${q(c.upstreamModel)},"candidate":${q(c.stableId)}`;
    if (gen !== null) s += `,"generation":${gen.number},"topology":"${gen.digest}"`;
  }
  // Per request, not per candidate: a keyring swap changes it without a new generation.
  if (r.keyring !== null) s += `,"keyring":${r.keyring.number}`;
  s += `,"status":${typeof status === 'number' ? status : '"partial"'}`;
  if (r.reason !== null) s += `,"reason":"${r.reason}"`;
  s += `,"partial":${status === 'partial'},"stream":${r.stream},"duration_ms":${msText(r.durationMs)}`;
  if (r.stream && r.firstByteAt !== null) s += `,"ttft_ms":${msText(r.firstByteAt - r.startedAt)}`;
  if (r.failures.length > 0) s += `,"fallback":${q(r.failures.map(fallbackEntry))}`;
  if (r.dropped !== null && c !== null) s += `,"dropped":${q(r.dropped)}`;
  const usage = r.usage;
  if (usage !== null) s += `,"input_tokens":${usage.inputTokens},"output_tokens":${usage.outputTokens}`;
  if (r.usageEstimated) s += ',"usage_estimated":true';
  if (r.costMicroUsd !== null) s += `,"cost_micro_usd":${r.costMicroUsd}`;
  return s + cacheMembers(r) + guardrailsMember(r);
}

/** A tools/call's access line: the tool, the MCP server that answered and the outcome; never its arguments or result. */
function toolCallLine(r: RequestRecord, call: ToolCallRecord): string {
  const c = call.candidate;
  const gen = r.gen;
  const status = r.status;
  let s = `,"request_id":"${r.requestId}","method":"POST"${callerMembers(r.principal)},"mcp_method":"tools/call","tool":${q(call.tool)},"provider":${q(c?.server.name ?? 'none')}`;
  if (c !== null) s += `,"upstream_tool":${q(c.upstreamTool)},"candidate":${q(c.stableId)}`;
  if (gen !== null) s += `,"generation":${gen.number}`;
  if (r.keyring !== null) s += `,"keyring":${r.keyring.number}`;
  s += `,"status":${typeof status === 'number' ? status : '"partial"'},"outcome":"${call.outcome}"`;
  if (call.reason !== null) s += `,"reason":${q(call.reason)}`;
  s += `,"stream":${r.stream},"duration_ms":${msText(r.durationMs)}`;
  if (call.fallback.length > 0) s += `,"fallback":${q(call.fallback)}`;
  return s + guardrailsMember(r);
}

/** A call on /a2a/<agent>'s access line: the agent, method, where it went, the task and how it ended; never the message. */
function agentCallLine(r: RequestRecord, call: AgentCallRecord): string {
  return `,"request_id":"${r.requestId}","method":${q(r.req.method ?? 'POST')}${callerMembers(r.principal)}${agentCallMembers(r, call)},"stream":${r.stream},"duration_ms":${msText(r.durationMs)}`;
}

/** `,"guardrails":["pii","secrets"]`: the guardrails that acted (warn, mask, block), each once; nothing when none did. */
function guardrailsMember(r: RequestRecord): string {
  if (r.guardrails.length === 0) return '';
  const acted = actedGuardrails(r.guardrails);
  return acted.length === 0 ? '' : `,"guardrails":${q(acted)}`;
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
