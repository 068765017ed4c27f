// The audit events and their builders. Each builder copies named fields only, so nothing
// a caller happens to hold (a prompt, a completion, a header, a key) can reach the log.

export interface AuditUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheReadTokens?: number;
}

/** Written after authentication and the pre-check: admitted, or refused with the reason. */
export interface RequestStartedInput {
  readonly requestId: string;
  readonly keyId: string | null;
  readonly team: string | null;
  readonly model: string | null;
  readonly generation: number | null;
  /** The keyring captured with the generation (its number); absent where none was. */
  readonly keyring?: number | null;
  readonly revision: string | null;
  readonly decision: 'admitted' | 'refused';
  /** The refusal's error code (`unauthorized`, `rate_limit_exceeded`, ...). */
  readonly reason: string | null;
}

export interface RequestCompletedInput {
  readonly requestId: string;
  readonly keyId: string | null;
  readonly team: string | null;
  readonly model: string | null;
  readonly provider: string | null;
  readonly upstreamModel: string | null;
  readonly stableId: string | null;
  readonly generation: number | null;
  /** The keyring captured with the generation (its number); absent where none was. */
  readonly keyring?: number | null;
  readonly revision: string | null;
  readonly status: number | 'partial';
  /** `provider:reason` for each candidate that failed before the one that answered. */
  readonly fallback: readonly string[];
  readonly partial: boolean;
  readonly usage: AuditUsage | null;
  /** The usage is the gateway's estimate of what a cut stream used, not the provider's report. */
  readonly usageEstimated: boolean;
  readonly costMicroUsd: number | null;
  readonly pricingMissing: boolean;
  readonly latencyMs: number;
  readonly ttftMs: number | null;
}

/** One tools/call on /mcp, however it ended: who called which tool, where it went, how long, whether the tool said it failed. Never its arguments or result. */
export interface ToolCalledInput {
  readonly requestId: string;
  readonly keyId: string | null;
  readonly team: string | null;
  /** The exposed tool name. */
  readonly tool: string;
  /** The MCP server that answered (or the last one tried), its tool name and candidate. */
  readonly provider: string | null;
  readonly upstreamTool: string | null;
  readonly stableId: string | null;
  readonly generation: number | null;
  /** The keyring captured with the generation (its number); absent where none was. */
  readonly keyring?: number | null;
  readonly revision: string | null;
  /** `result` (the tool answered; see isError), `error` (a JSON-RPC error), `refused` (governance), `failed` (no server answered). */
  readonly outcome: 'result' | 'error' | 'refused' | 'failed';
  /** The result's `isError`; null without a result. */
  readonly isError: boolean | null;
  /** The error's stable code (the catalog's, or the upstream's JSON-RPC code as text). */
  readonly reason: string | null;
  readonly fallback: readonly string[];
  readonly latencyMs: number;
}

/**
 * A guardrail that acted on a request or a tools/call (warn, mask, block), or a guardrail
 * service that could not answer: the categories it found and how many of each, never the
 * text it read or matched.
 */
export interface GuardrailVerdictInput {
  readonly requestId: string;
  readonly keyId: string | null;
  readonly team: string | null;
  readonly guardrail: string;
  readonly phase: string;
  readonly action: string;
  readonly categories: Readonly<Record<string, number>>;
  readonly error: { readonly kind: string; readonly outcome: string } | null;
  /** The mode a stream's output check ran under; null for anything else. */
  readonly stream: string | null;
  readonly latencyMs: number;
}

export interface ReloadInput {
  readonly trigger: string;
  readonly result: 'applied' | 'unchanged' | 'rejected';
  readonly generation: number | null;
  /** The keyring captured with the generation (its number); absent where none was. */
  readonly keyring?: number | null;
  readonly revision: string | null;
  /** Why a reload was rejected (messages never hold a secret). */
  readonly reason: string | null;
}

export interface AdminWriteInput {
  /** The admin token's id (`admin` for server.admin_token, `anonymous` on an open admin listener). */
  readonly token: string;
  readonly action: 'create' | 'update' | 'delete' | 'revoke' | 'rotate';
  readonly object: 'team' | 'key' | 'provider' | 'route' | 'tool_route' | 'price';
  /** The team's or key's id (the record's own `id` is its ULID); null when the request named none that could be read. */
  readonly objectId: string | null;
  /**
   * `applied`: committed. `refused`: answered 4xx after the token was authenticated, nothing
   * written. `failed`: the database failed before the commit, nothing written. `unknown`: the
   * commit was sent, its answer lost, and the database could not be asked again.
   */
  readonly outcome: 'applied' | 'refused' | 'failed' | 'unknown';
  /** The error code of an attempt that was not applied (`forbidden`, `outcome_unknown`, ...); null when applied. */
  readonly reason: string | null;
  /** The fields written, as sent (a key's secret is never among them), or null. */
  readonly change: Readonly<Record<string, unknown>> | null;
  /** The database version the write committed; null when it did not (or it is unknown). */
  readonly version: number | null;
}

/** A write attempt through the admin API to a managed team or key: who, what, the change and how it ended. */
export function adminWrite(x: AdminWriteInput): AuditEvent {
  return {
    event: 'admin_write',
    token: x.token,
    action: x.action,
    object: x.object,
    object_id: x.objectId,
    outcome: x.outcome,
    reason: x.reason,
    change: x.change,
    version: x.version,
  };
}

/** An event's own fields; the writer adds id, ts, instance, seq and prev_hash. */
export type AuditEvent = {
  readonly event:
    | 'request_started'
    | 'request_completed'
    | 'tool_called'
    | 'agent_called'
    | 'guardrail_verdict'
    | 'reload'
    | 'gap'
    | 'anchor'
    | 'admin_write';
} & Readonly<Record<string, unknown>>;

/**
 * What a gap record says was lost. The writer writes these itself: `torn_tail` when it cut
 * an incomplete last line at start-up, `records_lost` when records could not be written
 * (the backlog overflowed while the disk refused). `after_seq` is the seq of the last whole
 * record before the loss (0: none); the gap record itself takes the next seq.
 */
export type GapInput =
  | { readonly reason: 'torn_tail'; readonly cutBytes: number; readonly cutSha256: string; readonly afterSeq: number }
  | { readonly reason: 'records_lost'; readonly records: number; readonly afterSeq: number };

export function gap(x: GapInput): AuditEvent {
  return x.reason === 'torn_tail'
    ? { event: 'gap', reason: x.reason, cut_bytes: x.cutBytes, cut_sha256: x.cutSha256, after_seq: x.afterSeq }
    : { event: 'gap', reason: x.reason, records: x.records, after_seq: x.afterSeq };
}

export function requestStarted(x: RequestStartedInput): AuditEvent {
  return {
    event: 'request_started',
    request_id: x.requestId,
    key_id: x.keyId,
    team: x.team,
    model: x.model,
    generation: x.generation,
    ...(x.keyring === undefined ? {} : { keyring: x.keyring }),
    revision: x.revision,
    decision: x.decision,
    reason: x.reason,
  };
}

export function requestCompleted(x: RequestCompletedInput): AuditEvent {
  return {
    event: 'request_completed',
    request_id: x.requestId,
    key_id: x.keyId,
    team: x.team,
    model: x.model,
    provider: x.provider,
    upstream_model: x.upstreamModel,
    stable_id: x.stableId,
    generation: x.generation,
    ...(x.keyring === undefined ? {} : { keyring: x.keyring }),
    revision: x.revision,
    status: x.status,
    fallback: [...x.fallback],
    partial: x.partial,
    usage:
      x.usage === null
        ? null
        : { input_tokens: x.usage.inputTokens, output_tokens: x.usage.outputTokens, cache_read_tokens: x.usage.cacheReadTokens ?? 0 },
    usage_estimated: x.usageEstimated,
    cost_micro_usd: x.costMicroUsd,
    pricing_missing: x.pricingMissing,
    latency_ms: round3(x.latencyMs),
    ttft_ms: x.ttftMs === null ? null : round3(x.ttftMs),
  };
}

export interface AgentCalledInput {
  readonly requestId: string;
  readonly keyId: string | null;
  readonly team: string | null;
  /** The exposed agent. */
  readonly agent: string;
  /** The A2A method, in 1.0's words, and the version the client spoke. */
  readonly method: string;
  readonly version: string | null;
  /** The upstream agent that answered (or the last one tried), and its candidate. */
  readonly provider: string | null;
  readonly stableId: string | null;
  /** The task the call named or created, and its state after the call; never a message's content. */
  readonly taskId: string | null;
  readonly contextId: string | null;
  readonly state: string | null;
  readonly generation: number | null;
  readonly keyring: number | null;
  /** `answered`, `error` (the agent's JSON-RPC error), `refused` (by the gateway), `failed` (no agent answered). */
  readonly outcome: string;
  readonly reason: string | null;
  readonly fallback: readonly string[];
  readonly latencyMs: number;
}

/** One call on /a2a/<agent>: who, which agent and method, where it went, the task and its state; never the message. */
export function agentCalled(x: AgentCalledInput): AuditEvent {
  return {
    event: 'agent_called',
    request_id: x.requestId,
    key_id: x.keyId,
    team: x.team,
    agent: x.agent,
    method: x.method,
    version: x.version,
    provider: x.provider,
    stable_id: x.stableId,
    task_id: x.taskId,
    context_id: x.contextId,
    state: x.state,
    generation: x.generation,
    keyring: x.keyring,
    outcome: x.outcome,
    reason: x.reason,
    fallback: [...x.fallback],
    latency_ms: round3(x.latencyMs),
  };
}

export function toolCalled(x: ToolCalledInput): AuditEvent {
  return {
    event: 'tool_called',
    request_id: x.requestId,
    key_id: x.keyId,
    team: x.team,
    tool: x.tool,
    provider: x.provider,
    upstream_tool: x.upstreamTool,
    stable_id: x.stableId,
    generation: x.generation,
    ...(x.keyring === undefined ? {} : { keyring: x.keyring }),
    revision: x.revision,
    outcome: x.outcome,
    is_error: x.isError,
    reason: x.reason,
    fallback: [...x.fallback],
    latency_ms: round3(x.latencyMs),
  };
}

/** A service's categories are its own words: at most this many, each cut to CATEGORY_MAX_CHARS. */
const MAX_CATEGORIES = 32;
const CATEGORY_MAX_CHARS = 128;

export function guardrailVerdict(x: GuardrailVerdictInput): AuditEvent {
  const categories: Record<string, number> = {};
  for (const [name, count] of Object.entries(x.categories).slice(0, MAX_CATEGORIES)) categories[name.slice(0, CATEGORY_MAX_CHARS)] = count;
  return {
    event: 'guardrail_verdict',
    request_id: x.requestId,
    key_id: x.keyId,
    team: x.team,
    guardrail: x.guardrail,
    phase: x.phase,
    action: x.action,
    categories,
    error: x.error === null ? null : { kind: x.error.kind, outcome: x.error.outcome },
    stream: x.stream,
    latency_ms: round3(x.latencyMs),
  };
}

export function reload(x: ReloadInput): AuditEvent {
  return {
    event: 'reload',
    trigger: x.trigger,
    result: x.result,
    generation: x.generation,
    ...(x.keyring === undefined ? {} : { keyring: x.keyring }),
    revision: x.revision,
    reason: x.reason,
  };
}

/**
 * Why the writer went on in another file: the old one was deleted, replaced at its path, or
 * cut under it; or the writer rotated it itself (`audit.max_bytes`).
 */
export type AnchorReason = 'file_deleted' | 'file_replaced' | 'file_truncated' | 'file_rotated';

/**
 * The first record the writer writes in a file it had to reopen: the seq and hash of the
 * last record it wrote in the old one. In a new, empty file this record's prev_hash is that
 * hash too, so the new file continues the old file's chain.
 */
export function anchor(x: { readonly reason: AnchorReason; readonly previousSeq: number; readonly previousHash: string }): AuditEvent {
  return { event: 'anchor', reason: x.reason, previous_seq: x.previousSeq, previous_hash: x.previousHash };
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
