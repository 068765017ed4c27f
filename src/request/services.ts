import type { AuditWriter } from '../audit/index.js';
import type { JwtAuthority } from '../auth/index.js';
import type { CacheStore } from '../cache/index.js';
import type { PolicedStore } from '../governance/index.js';
import type { GenerationHolder, KeyringHolder } from '../live/index.js';
import type { PoolRegistry, TokenSourceRegistry } from '../providers/index.js';
import type { BreakerRegistry } from '../resilience/index.js';
import type { ResponseStore } from '../responses/index.js';
import type { RoundRobinCounters, SessionAffinity } from '../routing/index.js';
import type { AccessLog, CacheStats, GuardrailStats, Logger, Metrics, RecentTraffic, Tracing } from '../telemetry/index.js';
import type { A2aService } from './a2a/service.js';
import type { KeysUsed } from './keys-used.js';
import type { McpService } from './mcp/service.js';
import type { ResponseOwners } from './response-owners.js';
import type { UsageLedger } from './usage-row.js';

/**
 * The stateful services, built once by the composition root and never rebuilt by a
 * reload (invariant 3: the stateful services are the same objects after any number of reloads). Handlers receive this object; only the generation
 * inside the holder changes.
 */
export interface Services {
  readonly holder: GenerationHolder;
  /** The serving keyring (keys, teams, limits), swapped on its own by a database change. */
  readonly keyring: KeyringHolder;
  readonly breakers: BreakerRegistry;
  readonly counters: RoundRobinCounters;
  readonly affinity: SessionAffinity;
  /** Which candidate created each Responses API response id (response-owners.ts). */
  readonly responses: ResponseOwners;
  /** The gateway's own store of the responses it served and the Conversations API's conversations. */
  readonly responseStore: ResponseStore;
  /** The response cache's store (memory or Redis), built at start; a reload keeps it. */
  readonly cache: CacheStore;
  readonly pools: PoolRegistry;
  /** The cloud credential sources (Entra ID and Google Cloud tokens, AWS keys), kept fresh off the request path and across reloads. */
  readonly tokens: TokenSourceRegistry;
  readonly metrics: Metrics;
  /** The last 15 minutes of API traffic, for the status page. */
  readonly recent: RecentTraffic;
  /** Each guardrail's verdicts, errors and latency since start, for /admin/status and the status page. */
  readonly guardrailStats: GuardrailStats;
  /** The response cache's lookups by route and team since start, for /admin/status and the status page. */
  readonly cacheStats: CacheStats;
  readonly logger: Logger;
  readonly accessLog: AccessLog;
  /** The governance store (memory or Redis): counters by team and key id, kept across reloads. */
  readonly governance: PolicedStore;
  /** The hash-chained audit log (`audit.file`), or null when none is configured. */
  readonly audit: AuditWriter | null;
  /** OpenTelemetry traces (`telemetry.otlp`), or null when off. */
  readonly tracing: Tracing | null;
  readonly random: () => number;
  /** The /mcp endpoint: client sessions, the MCP clients of the configured servers, the tool view. */
  readonly mcp: McpService;
  /** The /a2a endpoints: the upstream agents' cards, who owns each task, the recent traffic. */
  readonly a2a: A2aService;
  /** When each key was last used (noted once a minute per key), for managed keys' last_used_at. */
  readonly keysUsed: KeysUsed;
  /** The usage ledger (one row per finished request of an authenticated caller), or null without a database. */
  readonly ledger: UsageLedger | null;
  /** Callers who sign in: the trusted issuers, their keys and the tokens already verified (auth.jwt). */
  readonly auth: JwtAuthority;
}

/** Settings fixed at start-up (changing them takes a restart). */
export interface ListenerSettings {
  readonly maxBodyBytes: number;
  /** The gateway's version, for the serverInfo /mcp answers initialize with. */
  readonly version?: string;
}
