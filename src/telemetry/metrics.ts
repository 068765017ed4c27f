import type { Counter, Gauge, Histogram } from 'prom-client';
import { Registry } from 'prom-client';
import { addProcessMetrics, counter, gauge, histogram } from './registry.js';
import { CounterFamily, HistogramFamily } from './series.js';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** A guardrail's check: a pattern over a prompt takes a fraction of a ms, a service or a judge model seconds. */
const GUARDRAIL_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** A semantic lookup's cosine similarity: below the usual thresholds coarsely, finely near 1. */
const SIMILARITY_BUCKETS = [0.5, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.99, 1];

/** A provider's breaker state for the gauge: 0 closed, 1 open, 2 half-open. */
export type BreakerStateCode = 0 | 1 | 2;

/**
 * The gateway's Prometheus series, in a registry of its own (never the global one, so that
 * several gateways in one test process do not collide). Label values are bounded sets:
 * models and providers from config, statuses, reasons. Revisions and request ids are never
 * labels.
 */
export class Metrics {
  readonly registry = new Registry();
  // Updated for every request: series bound once per label values (see series.ts).
  /** model, provider, status, team, endpoint */
  readonly requests: CounterFamily;
  /** team, model, provider, kind (input, output, cache_read, cache_write) */
  readonly tokens: CounterFamily;
  /** model */
  readonly requestDuration: HistogramFamily;
  /** provider */
  readonly upstreamDuration: HistogramFamily;
  /** model, provider */
  readonly timeToFirstToken: HistogramFamily;
  /** model, provider */
  readonly costUsd: CounterFamily;
  readonly fallbacks: Counter<'provider' | 'reason'>;
  readonly retries: Counter<'provider' | 'reason'>;
  /** team, key (empty for none): priced spend of served requests, in USD. */
  readonly spendUsd: CounterFamily;
  readonly budgetExceeded: Counter<'team'>;
  readonly pricingMissing: Counter;
  readonly usageInvalid: Counter<'provider'>;
  readonly governanceStoreErrors: Counter<'operation'>;
  readonly governanceUnbooked: Counter<'reason'>;
  readonly usageMissing: Counter<'provider'>;
  readonly auditFailures: Counter;
  readonly auditRecordsLost: Counter;
  readonly auditHeadSequence: Gauge;
  readonly ledgerRowsLost: Counter;
  readonly heartbeatFailures: Counter<'store'>;
  readonly recordSinkErrors: Counter<'sink'>;
  readonly responsesStoreFailures: Counter<'operation'>;
  readonly jwksFetches: Counter<'issuer' | 'result' | 'reason'>;
  /** The audit writer's last seq, read at each scrape; null without an audit log. */
  auditHead: (() => number) | null = null;
  readonly reloads: Counter<'trigger' | 'result'>;
  readonly reloadDuration: Histogram;
  readonly generation: Gauge;
  readonly lastReloadSuccess: Gauge;
  readonly lastReloadRejection: Gauge;
  readonly overlayReloads: Counter<'result' | 'reason'>;
  readonly overlayUnroutable: Gauge;
  /** tool, provider, outcome: every tools/call on /mcp. */
  readonly mcpToolCalls: CounterFamily;
  /** tool */
  readonly mcpToolCallDuration: HistogramFamily;
  /** agent, method, outcome: every call on /a2a/<agent>. */
  readonly a2aRequests: CounterFamily;
  /** agent, method */
  readonly a2aRequestDuration: HistogramFamily;
  /** guardrail, phase, action: every guardrail verdict. */
  readonly guardrailVerdicts: CounterFamily;
  /** guardrail, phase */
  readonly guardrailDuration: HistogramFamily;
  /** guardrail, outcome: checks a guardrail service could not answer. */
  readonly guardrailErrors: CounterFamily;
  /** route, result (hit, miss, refresh, bypass, error): every request whose route has a cache. */
  readonly cacheLookups: CounterFamily;
  /** team: what the hits' entries cost when they were made, in USD. */
  readonly cacheSavedUsd: CounterFamily;
  readonly cacheSimilarity: Histogram;
  /** operation (lookup, store, drop): store operations that failed or timed out, counted by the request path. */
  readonly cacheErrors: Counter<'operation'>;
  /** The bytes the response cache's entries take, read at each scrape (set by the composition root with its store); null without one. */
  cacheBytes: (() => number | Promise<number>) | null = null;
  /** The task and context ids the gateway remembers the owners of, read at each scrape (set by the A2A service). */
  a2aTasksTracked: (() => Promise<number>) | null = null;
  /** Open client sessions and catalog sizes, read at each scrape (set by the MCP service). */
  mcpGauges: { sessions(): number; catalogs(): Iterable<readonly [provider: string, tools: number]> } | null = null;

  constructor(breakerStates: () => Iterable<readonly [provider: string, state: BreakerStateCode]>) {
    const r = this.registry;
    this.requests = new CounterFamily(
      r,
      'switchyard_requests_total',
      'Requests by model, serving provider, outcome status (HTTP status, "partial" for a stream cut after its first byte, 499 when the client left), team ("none" for an anonymous or unauthenticated caller) and endpoint (the path of the route it matched, "none" for a path the listener does not serve). Requests for a model the gateway does not route count under model "none".',
      ['model', 'provider', 'status', 'team', 'endpoint'],
    );
    this.tokens = new CounterFamily(
      r,
      'switchyard_tokens_total',
      'Tokens of every request with usage, priced or not, by team ("none" for an anonymous caller), model, serving provider and kind: input, output, cache_read, cache_write.',
      ['team', 'model', 'provider', 'kind'],
    );
    this.requestDuration = new HistogramFamily(
      r,
      'switchyard_request_duration_seconds',
      'Time from request received to response end.',
      ['model'],
      LATENCY_BUCKETS,
    );
    this.upstreamDuration = new HistogramFamily(
      r,
      'switchyard_upstream_duration_seconds',
      'Time from the upstream call to its response headers, for the attempt that served the request.',
      ['provider'],
      LATENCY_BUCKETS,
    );
    this.timeToFirstToken = new HistogramFamily(
      r,
      'switchyard_time_to_first_token_seconds',
      'For streams: time from request received to the first body chunk sent to the client.',
      ['model', 'provider'],
      LATENCY_BUCKETS,
    );
    this.fallbacks = counter(r, 'switchyard_fallbacks_total', 'Candidates given up on before the first byte, by provider and reason.', [
      'provider',
      'reason',
    ]);
    this.retries = counter(
      r,
      'switchyard_upstream_retries_total',
      'Failed tries of a candidate that were tried again on the same provider (providers.<name>.retry), by provider and reason.',
      ['provider', 'reason'],
    );
    this.spendUsd = new CounterFamily(r, 'switchyard_spend_usd_total', 'Priced spend of served requests by team and key, in USD.', [
      'team',
      'key',
    ]);
    this.budgetExceeded = counter(
      r,
      'switchyard_budget_exceeded_total',
      'Requests admitted over a team budget whose on_exceeded is warn.',
      ['team'],
    );
    this.pricingMissing = counter(
      r,
      'switchyard_pricing_missing_total',
      'Served requests whose model has no price (billed 0 under pricing.on_missing: allow).',
    );
    this.usageInvalid = counter(
      r,
      'switchyard_usage_invalid_total',
      'Responses whose reported usage was not sane (negative, fractional, or past the bounds of the request), billed as missing.',
      ['provider'],
    );
    this.governanceStoreErrors = counter(
      r,
      'switchyard_governance_store_errors_total',
      'Failed governance store operations (Redis unreachable or timing out), by operation.',
      ['operation'],
    );
    this.usageMissing = counter(
      r,
      'switchyard_usage_missing_total',
      'Successful answers whose usage could not be read (none reported, or not sane), billed their reservation.',
      ['provider'],
    );
    this.governanceUnbooked = counter(
      r,
      'switchyard_governance_unbooked_total',
      'Served requests whose usage is not in the governance books, by reason: fail_open (admitted while the store was down) or settle_failed (the settle did not reach the store in time).',
      ['reason'],
    );
    this.auditFailures = counter(
      r,
      'switchyard_audit_failures_total',
      'Audit records that could not be appended (retried, or dropped when the backlog is full).',
    );
    this.auditRecordsLost = counter(
      r,
      'switchyard_audit_records_lost_total',
      'Audit records never written (dropped when the backlog is full, or unwritten at shutdown); a gap record in the file counts them.',
    );
    this.ledgerRowsLost = counter(
      r,
      'switchyard_ledger_rows_lost_total',
      'Usage ledger rows never written: dropped when the queue (database.ledger_queue) was full, or unwritten at shutdown. A row with endpoint "ledger" in the ledger counts those it could record.',
    );
    this.heartbeatFailures = counter(
      r,
      'switchyard_replica_heartbeat_failures_total',
      "This replica's heartbeats that could not be written, by store (database, redis): other replicas then see it as behind.",
      ['store'],
    );
    this.responsesStoreFailures = counter(
      r,
      'switchyard_responses_store_failures_total',
      "Writes to the response store (routing.responses.store) that failed after the answer was sent: the response's id is then not found later, never a wrong conversation.",
      ['operation'],
    );
    this.jwksFetches = counter(
      r,
      'switchyard_jwks_fetches_total',
      "Fetches of a trusted issuer's signing keys (auth.jwt), by issuer id, result (ok, error) and reason: start, reload, recheck, retry, or unknown_kid (a token named a key the gateway did not hold; one fetch serves every such request while it runs).",
      ['issuer', 'result', 'reason'],
    );
    this.recordSinkErrors = counter(
      r,
      'switchyard_record_sink_errors_total',
      "Finished requests' records a sink failed to take (it threw); the other sinks and the client are not affected.",
      ['sink'],
    );
    const metrics = this;
    this.auditHeadSequence = gauge(
      r,
      'switchyard_audit_head_sequence',
      'The seq of the last audit record written (from 1 at the genesis record, across rotated files); 0 without an audit log. With its hash (GET /admin/status) it is the head `audit verify --head` checks.',
      [],
      function () {
        this.set(metrics.auditHead?.() ?? 0);
      },
    );
    this.costUsd = new CounterFamily(r, 'switchyard_cost_usd_total', 'Priced spend of served requests, in USD.', ['model', 'provider']);
    this.reloads = counter(r, 'switchyard_reload_total', 'Reloads by trigger and result.', ['trigger', 'result']);
    this.reloadDuration = histogram(
      r,
      'switchyard_reload_duration_seconds',
      'Time to read, validate, build and swap a generation.',
      LATENCY_BUCKETS,
    );
    this.generation = gauge(r, 'switchyard_generation', 'The serving generation number.');
    this.lastReloadSuccess = gauge(
      r,
      'switchyard_last_reload_success_timestamp_seconds',
      'When the last successful reload (or the start-up build) was swapped in.',
    );
    // Beside the success time it tells whether the newest input is serving: a rejection later
    // than the last success means the gateway still serves an older config or overlay revision
    // (a repeated refusal of the same bytes keeps the first one's time).
    this.lastReloadRejection = gauge(
      r,
      'switchyard_last_reload_rejection_timestamp_seconds',
      'When a reload was last rejected (0: never); later than the last success means an older revision still serves.',
    );
    this.overlayReloads = counter(r, 'switchyard_overlay_reload_total', 'Overlay reads by result and rejection reason.', [
      'result',
      'reason',
    ]);
    this.overlayUnroutable = gauge(
      r,
      'switchyard_overlay_unroutable_candidates',
      'Overlay candidates whose cluster names no configured provider (kept, never selected).',
    );
    this.mcpToolCalls = new CounterFamily(
      r,
      'switchyard_mcp_tool_calls_total',
      'tools/call on /mcp by exposed tool, the MCP server that answered ("none" when none did) and outcome: result, tool_error (a result with isError), error (a JSON-RPC error from the server), refused (by governance or because no candidate can serve the tool), failed (no server answered).',
      ['tool', 'provider', 'outcome'],
    );
    this.mcpToolCallDuration = new HistogramFamily(
      r,
      'switchyard_mcp_tool_call_duration_seconds',
      'Time from a tools/call received to its answer sent.',
      ['tool'],
      LATENCY_BUCKETS,
    );
    this.a2aRequests = new CounterFamily(
      r,
      'switchyard_a2a_requests_total',
      'Calls on /a2a/<agent> by exposed agent ("none" when not routed), method in A2A 1.0 words (SendMessage, GetTask, ...; "none" when unreadable) and outcome: answered, error (the agent\'s JSON-RPC error), refused (by the gateway: authentication, allow-list, limit, an unknown or foreign task), failed (no agent answered, or the answer broke off), aborted (the client left first).',
      ['agent', 'method', 'outcome'],
    );
    this.a2aRequestDuration = new HistogramFamily(
      r,
      'switchyard_a2a_request_duration_seconds',
      'Time from a call on /a2a/<agent> received to its answer ended (a stream: to its last event).',
      ['agent', 'method'],
      LATENCY_BUCKETS,
    );
    this.guardrailVerdicts = new CounterFamily(
      r,
      'switchyard_guardrail_verdicts_total',
      'Guardrail verdicts by guardrail (its name in config), phase (input, output, arguments, results) and action: allow (nothing found), warn, mask, block.',
      ['guardrail', 'phase', 'action'],
    );
    this.guardrailDuration = new HistogramFamily(
      r,
      'switchyard_guardrail_duration_seconds',
      "Time a guardrail's check took, by guardrail and phase (a stream's output: the sum of its checks).",
      ['guardrail', 'phase'],
      GUARDRAIL_BUCKETS,
    );
    this.guardrailErrors = new CounterFamily(
      r,
      'switchyard_guardrail_errors_total',
      'Guardrail checks a service could not answer (timeout, error, invalid answer), by guardrail and outcome: fail_open (served) or fail_closed (refused).',
      ['guardrail', 'outcome'],
    );
    this.cacheLookups = new CounterFamily(
      r,
      'switchyard_cache_lookups_total',
      'Requests of routes with a response cache, by route (the requested model; "none" for one the generation does not route) and result: hit (answered from the cache), miss, refresh (the client asked for a fresh answer), bypass (neither looked up nor stored), error (the store failed or was too slow: answered as a miss).',
      ['route', 'result'],
    );
    this.cacheSavedUsd = new CounterFamily(
      r,
      'switchyard_cache_saved_usd_total',
      'What the answers served from the response cache cost when their entries were made, by the team served ("none" for an anonymous caller), in USD: the spend the hits saved.',
      ['team'],
    );
    this.cacheSimilarity = histogram(
      r,
      'switchyard_cache_similarity',
      "Semantic lookups' cosine similarity between the request's last user turn and the nearest entry's, hits and misses alike.",
      SIMILARITY_BUCKETS,
    );
    this.cacheErrors = counter(
      r,
      'switchyard_cache_errors_total',
      'Response cache store operations that failed or timed out, by operation: lookup (answered as a miss), store (the answer was sent, not kept), drop.',
      ['operation'],
    );
    let cacheBytesRead = 0;
    gauge(
      r,
      'switchyard_cache_bytes',
      "The bytes the response cache's entries take (each entry's JSON); 0 without a cache store.",
      [],
      async function () {
        const read = metrics.cacheBytes;
        // A store that cannot answer this scrape leaves the last value it gave, never a false 0.
        if (read === null) cacheBytesRead = 0;
        else
          cacheBytesRead = await Promise.resolve()
            .then(read)
            .catch(() => cacheBytesRead);
        this.set(cacheBytesRead);
      },
    );
    let tasksTracked = 0;
    gauge(
      r,
      'switchyard_a2a_tasks_tracked',
      "Task and context ids whose owner (candidate and team) the gateway remembers: this replica's, or the fleet's in Redis.",
      [],
      async function () {
        const read = metrics.a2aTasksTracked;
        if (read === null) tasksTracked = 0;
        else
          tasksTracked = await Promise.resolve()
            .then(read)
            .catch(() => tasksTracked);
        this.set(tasksTracked);
      },
    );
    gauge(r, 'switchyard_mcp_sessions', 'Open MCP client sessions on /mcp.', [], function () {
      this.set(metrics.mcpGauges?.sessions() ?? 0);
    });
    gauge(
      r,
      'switchyard_mcp_catalog_tools',
      'Tools in the last listing of each MCP server (type: mcp provider).',
      ['provider'],
      function () {
        this.reset();
        for (const [provider, tools] of metrics.mcpGauges?.catalogs() ?? []) this.set({ provider }, tools);
      },
    );
    gauge(r, 'switchyard_breaker_state', 'Circuit breaker state by provider: 0 closed, 1 open, 2 half-open.', ['provider'], function () {
      this.reset();
      for (const [provider, state] of breakerStates()) this.set({ provider }, state);
    });
    addProcessMetrics(r, 'switchyard_');
  }

  /**
   * `switchyard_budget_spent_usd{team}` and `switchyard_budget_limit_usd{team}`, read from
   * the governance store when scraped, so an alert on "budget near its limit" is one
   * expression. A store that cannot answer leaves the gauges empty for that scrape.
   */
  trackBudgets(
    read: () => Promise<ReadonlyArray<{ readonly team: string; readonly spentUsd: number; readonly limitUsd: number | null }>>,
    storeUp: () => boolean,
  ): void {
    const r = this.registry;
    let latest: Promise<ReadonlyArray<{ readonly team: string; readonly spentUsd: number; readonly limitUsd: number | null }>> | null =
      null;
    // One store read per scrape serves both gauges.
    const budgets = () => (latest ??= read().finally(() => setImmediate(() => (latest = null))));
    gauge(
      r,
      'switchyard_budget_spent_usd',
      'Spend this UTC month by team, in USD (settled requests plus open reservations are in /admin/status).',
      ['team'],
      async function () {
        this.reset();
        for (const b of await budgets().catch(() => [])) this.set({ team: b.team }, b.spentUsd);
      },
    );
    gauge(r, 'switchyard_budget_limit_usd', 'Monthly budget by team, in USD (teams with a budget only).', ['team'], async function () {
      this.reset();
      for (const b of await budgets().catch(() => [])) if (b.limitUsd !== null) this.set({ team: b.team }, b.limitUsd);
    });
    gauge(
      r,
      'switchyard_governance_store_up',
      "1 while the governance store answers (its last call succeeded: a request's, or this scrape's read of the budgets), else 0.",
      [],
      async function () {
        // After this scrape's own read, which is a fresh test of the store.
        await budgets().catch(() => []);
        this.set(storeUp() ? 1 : 0);
      },
    );
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
