import type { GatewayConfig } from '../config/index.js';
import type { ParsedOverlay } from '../contract/index.js';
import type {
  AwsSigner,
  BearerTokenSource,
  Credential,
  PriceTable,
  ProviderPool,
  ProviderProtocol,
  ProviderType,
  ProviderWire,
} from '../providers/index.js';
import type { CandidateGroup, RoutableCandidate, Route } from '../routing/index.js';
import { runSteps, type Steps } from './steps.js';
import type { GenerationTopology } from './topology.js';

/** One admin API bearer token and what it may do. */
export interface AdminToken {
  readonly id: string;
  /** `admin`, `read_only`, or `team:<id>` (that team's keys and usage). */
  readonly role: string;
  readonly credential: Credential;
}

/**
 * Where a provider runs and processes data (`region`, `zones`): every candidate of it shares
 * the one zone set, built once per generation, so the residency filter costs a set lookup.
 */
export interface ProviderPlace {
  readonly region: string | null;
  /** null = unlabelled (outside every residency rule but one with `fail_closed: false`). */
  readonly zones: ReadonlySet<string> | null;
}

/** A configured provider as one generation sees it. */
export interface ProviderRuntime extends ProviderPlace {
  readonly name: string;
  readonly type: ProviderType;
  /**
   * The wire protocol its chat endpoint speaks: azure_openai speaks OpenAI's. A type that hosts
   * several publishers (vertex) speaks the candidate's (GenerationCandidate.protocol); this is
   * the one its own models speak.
   */
  readonly protocol: ProviderProtocol;
  readonly baseUrl: string;
  /** Its adapter's calls, with the type's settings bound in: paths, headers, body, signature, readers. */
  readonly wire: ProviderWire;
  /** `type base_url`, with the scope its adapter names (a region, a project/location): what breakers and pools are keyed by. */
  readonly identity: string;
  readonly timeoutMs: number;
  /** A non-streamed response's whole time; null = none. */
  readonly requestTimeoutMs: number | null;
  /** A stream's whole length; null = none. */
  readonly streamMaxMs: number | null;
  /** The largest event a stream may send (max_event_bytes). */
  readonly maxEventBytes: number;
  /** `retry`: tries of this provider again after a transient failure; null = none (no block, or attempts 0). */
  readonly retry: RetryPolicy | null;
  readonly pool: ProviderPool;
  readonly credential: Credential | null;
  /**
   * The cloud's bearer token sent as `Authorization: Bearer`: Entra ID for azure_openai with
   * `auth: {type: entra}` (instead of `api-key`), Google Cloud for vertex; null = none.
   */
  readonly bearer: BearerTokenSource | null;
  /** Signs every request (SigV4) with the provider's AWS keys, for a type that signs; null otherwise. */
  readonly signer: AwsSigner | null;
  readonly headers: Readonly<Record<string, string>>;
  /** `expose_headers`: upstream response headers passed to clients beyond the default allow-list. */
  readonly exposeHeaders: ReadonlySet<string> | null;
  /**
   * `models`: route model -> the name sent upstream, read when candidates are built. A
   * null-prototype object, so that a route named `constructor` finds nothing inherited.
   */
  readonly models: Readonly<Record<string, string>>;
}

/** `providers.<name>.retry`, as the failover loop reads it. */
export interface RetryPolicy {
  /** Retries after the first try, at least 1. */
  readonly attempts: number;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
}

export interface GenerationCandidate extends RoutableCandidate {
  readonly provider: ProviderRuntime;
  /** The model name sent upstream. */
  readonly upstreamModel: string;
  /** The wire protocol this candidate's calls speak: its provider's, or for vertex its publisher's (Claude: anthropic, Gemini: gemini). */
  readonly protocol: ProviderProtocol;
  /**
   * Overlay candidates may carry their own credential (resolved from the mount when the
   * generation is built). `credentialProblem` holds the reason when it could not be read: the
   * candidate then fails over with a 503-class reason instead of calling upstream.
   */
  readonly credential: Credential | null;
  readonly credentialProblem: string | null;
}

/** A provider of `type: mcp`: an MCP server whose tools the /mcp endpoint routes to. */
export interface McpServerRuntime extends ProviderPlace {
  readonly name: string;
  /** The server's MCP endpoint (Streamable HTTP), as configured: http://host:port/mcp. */
  readonly url: string;
  /** `mcp <url>`: what its breaker and pool are keyed by. */
  readonly identity: string;
  readonly timeoutMs: number;
  readonly pool: ProviderPool;
  /** Sent as `Authorization: Bearer`; never the caller's own. */
  readonly credential: Credential | null;
  readonly headers: Readonly<Record<string, string>>;
  /** `tools`: exposed name -> the name the server lists it under (null-prototype). */
  readonly tools: Readonly<Record<string, string>>;
  /** `trust_annotations`: its readOnlyHint / idempotentHint make a call safe to send again. */
  readonly trustAnnotations: boolean;
}

/** One server that may serve an exposed tool. */
export interface ToolCandidate extends RoutableCandidate {
  readonly server: McpServerRuntime;
  /** The tool's name on that server. */
  readonly upstreamTool: string;
  /** An overlay candidate's own bearer, read at build (as a model candidate's); null = the server's. */
  readonly credential: Credential | null;
  readonly credentialProblem: string | null;
}

/** A tool route: `model` is the exposed tool name. */
export interface ToolRoute extends Route<ToolCandidate> {
  /** `retry_safe`: the operator's word that a call may be sent again to another candidate. */
  readonly retrySafe: boolean;
}

/** The /mcp endpoint's routing in one generation. */
export interface GenerationTools {
  /** The configured MCP servers, by provider name. */
  readonly servers: Readonly<Record<string, McpServerRuntime>>;
  /** Tool routes by exposed name: routing.tools, or the overlay's mcp_tool candidates. */
  readonly routes: Readonly<Record<string, ToolRoute>>;
  /** `routing.tools_from`: servers whose every listed tool is exposed under a prefix. */
  readonly from: ReadonlyArray<{ readonly provider: string; readonly prefix: string }>;
}

/** A provider of `type: a2a`: an upstream agent speaking the Agent2Agent protocol. */
export interface AgentServerRuntime extends ProviderPlace {
  readonly name: string;
  /** `base_url` without a trailing slash: calls go to the JSON-RPC endpoint its card names, on this origin. */
  readonly baseUrl: string;
  /** base_url joined with card_path. */
  readonly cardUrl: string;
  /** `a2a <base_url>`: what its breaker and pool are keyed by. */
  readonly identity: string;
  /** Time to the answer's head, and the longest silence between two events of a stream. */
  readonly timeoutMs: number;
  /** The provider's own bound on a call's whole answer; null = a2a.call_timeout_ms alone. */
  readonly requestTimeoutMs: number | null;
  /** The provider's own bound on a stream's length; null = a2a.stream_max_ms alone. */
  readonly streamMaxMs: number | null;
  readonly pool: ProviderPool;
  /** Sent as `Authorization: Bearer`; never the caller's own. */
  readonly credential: Credential | null;
  readonly headers: Readonly<Record<string, string>>;
}

/** One upstream agent that may serve an exposed agent. */
export interface AgentCandidate extends RoutableCandidate {
  readonly server: AgentServerRuntime;
  readonly credential: null;
  readonly credentialProblem: null;
}

/** An exposed agent (`routing.agents.<name>`): `model` is the agent's name. */
export type AgentRoute = Route<AgentCandidate>;

/** The /a2a endpoints' routing in one generation. */
export interface GenerationAgents {
  /** The configured upstream agents, by provider name. */
  readonly servers: Readonly<Record<string, AgentServerRuntime>>;
  /** Exposed agents by name. */
  readonly routes: Readonly<Record<string, AgentRoute>>;
  /** The exposed agents' names, in the config's order. */
  readonly names: readonly string[];
}

export type GenerationRoute = Route<GenerationCandidate>;
export type GenerationGroup = CandidateGroup<GenerationCandidate>;

/** The overlay revision a generation serves (overlay mode only). */
export interface OverlaySnapshot {
  readonly revision: string;
  readonly format: 'envelope' | 'legacy';
  readonly rawSha256: string;
  readonly network: string | null;
  readonly localSite: string;
  readonly selectionMode: string;
  readonly sourceUid: string | null;
  readonly sourceGeneration: number | null;
  readonly renderedAt: string | null;
  readonly candidateCount: number;
  readonly candidatesPerModel: Readonly<Record<string, number>>;
  /** The same for mcp_tool candidates, per exposed tool. */
  readonly candidatesPerTool: Readonly<Record<string, number>>;
  /**
   * Candidates whose cluster names no configured provider of their kind (a model's: not
   * type mcp; a tool's: type mcp): kept out of routing, reported. `model` is the tool's name for a tool.
   */
  readonly unroutable: ReadonlyArray<{
    readonly stable_id: string;
    readonly kind: 'inference_model' | 'mcp_tool';
    readonly model: string;
    readonly cluster: string;
  }>;
  /** The validated overlay, for rollback protection against the next one. */
  readonly parsed: ParsedOverlay;
}

/**
 * The routing a reload may change, as ONE deep-frozen object. A request reads
 * `holder.current()` once and uses only that object, so it can never see half of two
 * generations; pricing lives here so a request is billed at the prices of the routes that
 * served it. Who may call, and within which limits, is the keyring (keyring.ts), captured
 * with it: `config` is the config file's own, and its teams and keys are the file's only.
 */
export interface Generation {
  readonly number: number;
  readonly builtAt: string;
  /** SHA-256 of the config bytes this generation was built from. */
  readonly sourceHash: string;
  /**
   * The topology digest (digest.ts): SHA-256 of its providers, routing and prices alone, the
   * same on every replica that serves the same topology, wherever it was read from.
   */
  readonly digest: string;
  /** The effective config: the file's, with the database's providers, routes and prices joined by `database.topology`. */
  readonly config: GatewayConfig;
  /** The config file's own, as read: what a database change is joined to again. */
  readonly fileConfig: GatewayConfig;
  /** Which providers, routes and prices came from the database, at which topology version. */
  readonly topology: GenerationTopology;
  readonly providers: Readonly<Record<string, ProviderRuntime>>;
  readonly routes: Readonly<Record<string, GenerationRoute>>;
  /** The /mcp endpoint's servers and tool routes. */
  readonly tools: GenerationTools;
  /** The /a2a endpoints' upstream agents and exposed agents. */
  readonly agents: GenerationAgents;
  /**
   * The routes' names, in order (a static config's order): what walks every route reads,
   * since taking the keys of a map of 60k routes holds the event loop 10-15 ms.
   */
  readonly models: readonly string[];
  /** The identities of every provider (MCP servers included), for breaker retention. */
  readonly identities: readonly string[];
  /** Keys of every round-robin group, for counter retention. */
  readonly counterKeys: ReadonlySet<string>;
  /** Per routed model, when (epoch seconds) it was first routed, kept across generations while it stays routed. */
  readonly modelsFirstSeen: Readonly<Record<string, number>>;
  /** The pre-rendered body of `GET /v1/models`. */
  readonly modelsBody: string;
  readonly pricing: PriceTable;
  /** The serving overlay revision, or null in static mode. */
  readonly overlay: OverlaySnapshot | null;
  /** The admin API's bearer token (`server.admin_token`), or null when none is set. */
  readonly adminToken: Credential | null;
  /** Every admin token with its role: `server.admin_tokens`, and `server.admin_token` as id "admin", role admin. */
  readonly adminTokens: readonly AdminToken[];
  /** `telemetry.otlp.headers`, resolved; null when tracing is off. Read once, at start-up. */
  readonly otlpHeaders: Readonly<Record<string, Credential>> | null;
}

/** Objects frozen between two points where a sliced freeze may pause. */
const FREEZE_STEP = 256;

/**
 * Freezes plain objects and arrays all the way down; stateful class instances are left
 * alone, and so is anything already frozen (with what it holds: whoever froze it froze it
 * whole, as the build does route by route). Iterative, with a pause point every few hundred
 * objects: a large generation holds hundreds of thousands.
 */
export function* deepFreezeSteps(root: unknown): Steps<void> {
  const stack: unknown[] = [root];
  let frozen = 0;
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object' || Object.isFrozen(value)) continue;
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null && !Array.isArray(value)) continue;
    Object.freeze(value);
    // Only what may need freezing goes on the stack: most values are strings and numbers.
    for (const key of Object.keys(value)) {
      const child = (value as Record<string, unknown>)[key];
      if (child !== null && typeof child === 'object' && !Object.isFrozen(child)) stack.push(child);
    }
    frozen += 1;
    if (frozen % FREEZE_STEP === 0) yield;
  }
}

/** deepFreezeSteps, all at once. */
export function deepFreeze<T>(value: T): T {
  runSteps(deepFreezeSteps(value));
  return value;
}
