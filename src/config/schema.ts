import { z } from 'zod';
import { a2aSchema, agentName } from './a2a-schema.js';
import { authSchema } from './auth-schema.js';
import { cacheSchema, callerCacheSchema, routeCacheSchema } from './cache-schema.js';
import {
  checkGuardrailReferences,
  guardrailAttachmentSchema,
  guardrailsSchema,
  mcpGuardrailAttachmentSchema,
} from './guardrails-schema.js';
import { adminTokenRequired } from './listen-address.js';
import { providerSchema } from './provider-types.js';
import { type ResidencyConfig, residencySchema, widerResidency } from './residency-schema.js';
import { positiveInt, redisUrlSchema, type retrySchema, secretQueryParams, secretRefSchema, tlsSchema, toolName } from './schema-parts.js';

export type { AwsAuthConfig, EntraAuthConfig, GcpAuthConfig, ProviderConfig, ProviderConfigOf } from './provider-types.js';
export { type SecretRef, secretRefSchema, TOOL_NAME } from './schema-parts.js';

// The gateway config, as the user writes it. zod is the only parser: every other folder
// reads the typed result and never re-checks it. Unknown keys are errors everywhere, so a
// typo is reported instead of silently ignored.

const hostPortPattern = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;
const listenSchema = z
  .string()
  .regex(hostPortPattern, 'must be host:port, e.g. 127.0.0.1:8080 or [::1]:8080')
  // Only a well-formed address gets the range check: one mistake, one message.
  .refine((s) => !hostPortPattern.test(s) || Number(s.slice(s.lastIndexOf(':') + 1)) <= 65535, 'port must be 0-65535');

/** What an admin token may do: everything, read everything, or one team's keys and usage. */
const ADMIN_ROLE = /^(admin|read_only|team:[A-Za-z0-9][A-Za-z0-9_.-]{0,63})$/;
const adminTokenSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)'),
  token: secretRefSchema,
  role: z.string().regex(ADMIN_ROLE, 'must be "admin", "read_only" or "team:<team id>"'),
});

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** 4 or 6 for an IP address literal, 0 otherwise (the URL parser judges IPv6, as it would in a URL). */
function ipFamily(address: string): 0 | 4 | 6 {
  if (IPV4.test(address)) return 4;
  if (!address.includes(':') || /[^0-9A-Fa-f:.]/.test(address)) return 0;
  return URL.canParse(`http://[${address}]/`) ? 6 : 0;
}

/** An IP address or a CIDR range (10.0.0.0/8, fd00::/8). */
const cidrSchema = z.string().refine((text) => {
  const slash = text.indexOf('/');
  const family = ipFamily(slash < 0 ? text : text.slice(0, slash));
  if (family === 0) return false;
  if (slash < 0) return true;
  const bits = text.slice(slash + 1);
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}, 'must be an IP address or a CIDR range such as 10.0.0.0/8 or fd00::/8');

const serverSchema = z
  .strictObject({
    listen: listenSchema.default('127.0.0.1:8080'),
    admin_listen: listenSchema.optional(),
    admin_token: secretRefSchema.optional(),
    /** Scoped admin tokens; `admin_token` is one more, with id "admin" and role admin. */
    admin_tokens: z
      .array(adminTokenSchema)
      .max(1000)
      .superRefine((tokens, ctx) => {
        const seen = new Map<string, number>();
        tokens.forEach((t, i) => {
          const other = seen.get(t.id);
          if (other !== undefined)
            ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate token id "${t.id}" (also admin_tokens[${other}])` });
          else seen.set(t.id, i);
        });
      })
      .optional(),
    max_body_bytes: positiveInt.max(1024 * 1024 * 1024).default(10 * 1024 * 1024),
    /** The largest config file a reload reads (ADR 0013); the next reload uses the serving value. */
    max_config_bytes: positiveInt.max(64 * 1024 * 1024).default(4 * 1024 * 1024),
    drain_timeout_ms: z.number().int().min(0).max(3_600_000).default(10_000),
    /** After SIGTERM, keep accepting (with Connection: close) this long while /readyz says 503: a preStop sleep's job. */
    drain_delay_ms: z.number().int().min(0).max(600_000).default(0),
    /** Open client connections per listener; more are refused at accept (ADR 0013). */
    max_connections: positiveInt.max(1_000_000).default(10_000),
    /** Time for a client to send its request headers. */
    headers_timeout_ms: positiveInt.max(600_000).default(10_000),
    /** Time for a client to send its whole request, body included. */
    body_timeout_ms: positiveInt.max(3_600_000).default(60_000),
    /** How long an idle keep-alive connection stays open: above a load balancer's idle timeout. */
    keep_alive_timeout_ms: positiveInt.max(600_000).default(65_000),
    watch_config: z.boolean().default(false),
    watch_debounce_ms: z.number().int().min(0).max(60_000).default(200),
    /**
     * The API listener's /metrics answers without the admin token even when keys are
     * configured (its series name teams and key ids and show their spend).
     */
    public_metrics: z.boolean().default(false),
    /**
     * Proxies (IP addresses or CIDR ranges) whose X-Forwarded-Proto, -Host and -Prefix (or
     * Forwarded) headers are believed when the gateway names its own URL, as in the agent
     * cards it serves; anyone else's are ignored.
     */
    trusted_proxies: z.array(cidrSchema).max(1024).default([]),
    /**
     * Loopback and private addresses (IPs or CIDR ranges) that `POST /admin/v1/providers/test`
     * may probe; link-local and metadata addresses are refused whatever it lists.
     */
    admin_probe_allow: z.array(cidrSchema).max(1024).default([]),
  })
  .refine((s) => s.admin_token !== undefined || (s.admin_tokens ?? []).length > 0 || !adminTokenRequired(s.admin_listen), {
    path: ['admin_token'],
    error: (issue) =>
      `required when server.admin_listen (${(issue.input as { admin_listen?: string }).admin_listen}) is not a loopback address`,
    // Checked even when another server key is wrong, so every error shows in one pass; only
    // a malformed admin_listen (its own error) leaves nothing to judge.
    // Not at all when server itself is not a mapping (found by the config fuzz test: `server:`).
    when: (payload) =>
      payload.value !== null &&
      typeof payload.value === 'object' &&
      !payload.issues.some((i) => i.path?.[0] === 'admin_listen' || i.path?.[0] === 'admin_token'),
  });

export type RetryConfig = z.infer<typeof retrySchema>;

const policySchema = z.enum(['ordered', 'round_robin', 'random', 'weighted']);
export type Policy = z.infer<typeof policySchema>;

const candidateSchema = z.strictObject({
  provider: z.string().min(1),
  /** The model name sent upstream; defaults to the route's name. */
  model: z.string().min(1).optional(),
  /** azure_openai: the deployment to call; defaults to `model`, then the route's name. */
  deployment: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be an Azure deployment name')
    .optional(),
  /** vertex: whose model it is (Gemini models are Google's, Claude is Anthropic's); by default anthropic for claude-*, else google. */
  publisher: z.enum(['google', 'anthropic'], { error: 'must be "google" or "anthropic"' }).optional(),
  weight: z.number().int().min(1).max(1000).default(1),
});

/** Across every failover attempt: a whole non-streamed response, or a stream's start. */
const deadlineMs = positiveInt.max(3_600_000).optional();

/**
 * Crossing protocols: `lenient` drops a hint the other protocol has no field for (and
 * clamps a value out of its range), listing it in `x-switchyard-dropped`; `strict` treats
 * such a candidate as unable to take the request instead.
 */
const translationSchema = z.enum(['lenient', 'strict']);

/**
 * Client-error answers that fail over to the next candidate instead of reaching the client:
 * a prompt too long for this model, a refusal by this provider's content filter.
 */
const fallbackOn = z
  .array(z.enum(['context_length', 'content_filter'], { error: 'must be "context_length" or "content_filter"' }))
  .max(2)
  .refine((list) => new Set(list).size === list.length, 'lists a class twice')
  .optional();

export const routeSchema = z.strictObject({
  policy: policySchema.default('ordered'),
  candidates: z.array(candidateSchema).min(1, 'a route needs at least one candidate'),
  deadline_ms: deadlineMs,
  /** This route's translation mode; defaults to routing.translation. */
  translation: translationSchema.optional(),
  fallback_on: fallbackOn,
  /** Guardrails on this route's requests and answers; a team's and a key's are added to them. */
  guardrails: guardrailAttachmentSchema.optional(),
  /** The response cache for this route's requests (default off). */
  cache: routeCacheSchema.optional(),
});

/** A tool route's candidate: an mcp provider, and the tool's name there (default: the exposed name, or the provider's `tools` map). */
const toolCandidateSchema = z.strictObject({
  provider: z.string().min(1),
  tool: z.string().min(1, 'must be a non-empty tool name').optional(),
  weight: z.number().int().min(1).max(1000).default(1),
});

/** `routing.tools.<exposed name>`: the servers that serve one tool; several candidates are replicas of it. */
export const toolRouteSchema = z.strictObject({
  policy: policySchema.default('ordered'),
  candidates: z.array(toolCandidateSchema).min(1, 'a tool route needs at least one candidate'),
  /**
   * The operator's word that a call of this tool may be sent again to another candidate
   * after a timeout, a dropped connection or a 5xx (it reads, or it is idempotent). Without
   * it only a call that never reached its candidate moves on.
   */
  retry_safe: z.boolean().default(false),
});

/** An agent route's candidate: a provider of type a2a. */
const agentCandidateSchema = z.strictObject({
  provider: z.string().min(1),
  weight: z.number().int().min(1).max(1000).default(1),
});

/**
 * `routing.agents.<agent name>`: the upstream agents that serve one exposed agent (replicas
 * of one agent, or a primary and a fallback). A new task is routed by the policy; every
 * follow-up goes to the candidate that owns the task.
 */
const agentRouteSchema = z.strictObject({
  policy: policySchema.default('ordered'),
  candidates: z.array(agentCandidateSchema).min(1, 'an agent needs at least one candidate'),
});

/** `routing.tools_from[]`: expose every tool a server lists, under an optional prefix. */
const toolsFromSchema = z.strictObject({
  provider: z.string().min(1),
  prefix: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{0,64}$/, 'must be 0-64 of A-Z a-z 0-9 _ - . (it starts every exposed tool name)')
    .default(''),
});

/** Sticky sessions: a request's session key comes from the header, or else the cookie. */
const sessionAffinitySchema = z.strictObject({
  header: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name')
    .transform((h) => h.toLowerCase())
    .default('x-session-id'),
  cookie: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'must be a cookie name')
    .optional(),
  ttl_s: positiveInt.max(30 * 24 * 3600).default(3600),
  max_entries: positiveInt.max(10_000_000).default(10_000),
});

/**
 * Which candidate created each Responses API response id (its follow-ups must go there),
 * and where the gateway keeps the responses and conversations it serves itself. OpenAI
 * keeps a stored response for 30 days, hence the default TTL and retention.
 */
const responsesSchema = z.strictObject({
  ttl_s: positiveInt.max(90 * 24 * 3600).default(30 * 24 * 3600),
  max_entries: positiveInt.max(10_000_000).default(100_000),
  /** redis: the governance store's Redis; database: `database.url` (both checked across sections). */
  store: z.enum(['memory', 'redis', 'database'], { error: 'must be "memory", "redis" or "database"' }).default('memory'),
  /** The database store drops responses and conversations older than this. */
  retention_days: positiveInt.max(3650).default(30),
  /** Most items a conversation, or a chain of responses rebuilt as one context, may hold. */
  max_items: positiveInt.max(100_000).default(1000),
});

const scopeField = z.string().min(1).max(256);

/** Overlay mode: candidates come from a control plane's versioned overlay file. */
const overlaySchema = z.strictObject({
  /** Watched through its parent directory and never resolved, so ConfigMap symlink swaps are seen. */
  file: z.string().min(1, 'must be a file path'),
  /** Any subset; each field set must match the envelope's scope. A legacy payload is then refused. */
  expected_scope: z
    .strictObject({
      network: scopeField.optional(),
      gateway: scopeField.optional(),
      namespace: scopeField.optional(),
      local_site: scopeField.optional(),
    })
    .optional(),
  reload: z
    .strictObject({
      enabled: z.boolean().default(true),
      debounce_ms: z.number().int().min(0).max(60_000).default(500),
      /** The safety-net re-check that catches lost events. */
      recheck_ms: z.number().int().min(100).max(3_600_000).default(10_000),
    })
    .prefault({}),
  max_bytes: positiveInt.max(64 * 1024 * 1024).default(2 * 1024 * 1024),
  /** A candidate credential {namespace, name, key} is read from {base}/{namespace}/{name}/{key}. */
  credential_mount_base: z.string().min(1).default('/run/secrets/grid-credentials'),
  /** deadline_ms for every model in overlay mode (see routes.*.deadline_ms). */
  deadline_ms: deadlineMs,
  /** fallback_on for every model in overlay mode (see routes.*.fallback_on). */
  fallback_on: fallbackOn,
});

const routingSchema = z
  .strictObject({
    routes: z.record(z.string().min(1), routeSchema).optional(),
    overlay: overlaySchema.optional(),
    session_affinity: sessionAffinitySchema.optional(),
    responses: responsesSchema.optional(),
    /** Every route's translation mode, unless the route sets its own; overlay routes always follow it. */
    translation: translationSchema.default('lenient'),
    /** Static tool routes of the /mcp endpoint, by exposed tool name. */
    tools: z.record(toolName, toolRouteSchema).optional(),
    /** Servers whose every listed tool is exposed (under the prefix), beside routing.tools. */
    tools_from: z.array(toolsFromSchema).max(256).optional(),
    /** Agents served at /a2a/<agent name> (the Agent2Agent protocol), by exposed name. */
    agents: z.record(agentName, agentRouteSchema).optional(),
  })
  .superRefine((routing, ctx) => {
    const staticTools = routing.tools !== undefined || routing.tools_from !== undefined || routing.agents !== undefined;
    if (routing.routes !== undefined && routing.overlay !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'routing.routes (static) and routing.overlay are mutually exclusive; set exactly one',
      });
    } else if (routing.routes === undefined && routing.overlay === undefined && !staticTools) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message:
          'set either routing.routes (static routes) or routing.overlay (candidates from an overlay file), or tool routes (routing.tools, routing.tools_from), or agents (routing.agents)',
      });
    }
    if (routing.overlay !== undefined) {
      // The overlay's mcp_tool candidates are the tool routes in overlay mode, as its models are the model routes.
      for (const key of ['tools', 'tools_from'] as const)
        if (routing[key] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: 'does not apply with routing.overlay: tool routes come from its mcp_tool candidates',
          });
    }
    toolsFromCollisions(routing.tools_from ?? [], ctx);
  });

/**
 * Two tools_from sources whose prefixes could make one exposed name (one prefix starts the
 * other, the same one included) are refused, naming both: which server a name would reach
 * must never depend on what the servers happen to list.
 */
function toolsFromCollisions(sources: ReadonlyArray<{ provider: string; prefix: string }>, ctx: z.RefinementCtx): void {
  sources.forEach((b, j) => {
    for (let i = 0; i < j; i += 1) {
      const a = sources[i] as { provider: string; prefix: string };
      if (!a.prefix.startsWith(b.prefix) && !b.prefix.startsWith(a.prefix)) continue;
      ctx.addIssue({
        code: 'custom',
        path: ['tools_from', j, 'prefix'],
        message: `may expose the same tool names as routing.tools_from[${i}] (provider "${a.provider}", prefix "${a.prefix}") and this one (provider "${b.provider}", prefix "${b.prefix}"): give each a prefix that does not start another's`,
      });
      return;
    }
  });
}

/** `mcp`: the /mcp endpoint's client sessions and origins, and how often upstream catalogs are re-listed. */
const mcpSchema = z.strictObject({
  /**
   * Browser origins (`https://app.example.com`) allowed to call /mcp, or `*`. A request
   * without an Origin header (not a browser) is always allowed, and so is a loopback origin
   * (localhost, 127.0.0.1, [::1]); any other is refused with 403 (DNS rebinding).
   */
  allowed_origins: z
    .array(
      z
        .string()
        .refine((o) => o === '*' || (URL.canParse(o) && new URL(o).origin === o), 'must be an origin (scheme://host[:port], no path) or *'),
    )
    .max(256)
    .default([]),
  /** Client sessions (Mcp-Session-Id): idle ones expire after ttl_s; past max_entries the idlest goes. */
  sessions: z
    .strictObject({
      ttl_s: positiveInt.max(7 * 24 * 3600).default(3600),
      max_entries: positiveInt.max(1_000_000).default(10_000),
      /** One key's sessions at most: at its cap a key's own idlest session goes (429 when every one is busy). */
      max_per_key: positiveInt.max(1_000_000).default(100),
    })
    .prefault({}),
  /** Each upstream's tools are listed again this often (besides its list_changed notifications); 0 = only on notifications. */
  catalog_recheck_ms: z.number().int().min(0).max(86_400_000).default(60_000),
  /** Changes closer together than this reach client sessions as one notifications/tools/list_changed. */
  list_changed_debounce_ms: z.number().int().min(0).max(60_000).default(100),
  /**
   * The longest a tools/call may take, failovers included: at the limit the upstream call is
   * cancelled (notifications/cancelled) and the client gets `upstream_timeout`.
   */
  call_timeout_ms: positiveInt.max(86_400_000).default(300_000),
  /**
   * The Responses API's `{type: "mcp", server_label}` tool that names this gateway's own tool
   * catalog: the gateway lists the caller's tools, offers them to the model, and runs each
   * call through its tool routes itself.
   */
  responses_label: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -')
    .default('switchyard'),
  /** `server_url`s that also name this gateway (how clients reach it); absent `server_url` always does. */
  responses_self_urls: z
    .array(z.string().refine((u) => URL.canParse(u), 'must be a URL'))
    .max(64)
    .default([]),
  /** The most tool calls the gateway runs for one Responses request before it answers with what it has. */
  responses_max_calls: positiveInt.max(256).default(16),
  /** Guardrails on every tools/call's arguments and results. */
  guardrails: mcpGuardrailAttachmentSchema.optional(),
});

/** USD per million tokens; so tokens x price is micro-USD exactly. */
export const priceSchema = z.strictObject({
  input_usd_per_mtok: z.number().min(0),
  output_usd_per_mtok: z.number().min(0),
  /** Prompt tokens read from the provider's cache; absent = the input price. */
  cache_read_usd_per_mtok: z.number().min(0).optional(),
  /** Prompt tokens written to the provider's cache (Anthropic's cache creation); absent = the input price. */
  cache_write_usd_per_mtok: z.number().min(0).optional(),
  /**
   * The most output tokens the model writes in one answer. A request that sets no output cap
   * reserves this instead of governance.default_max_tokens, and is sent no larger a cap.
   */
  max_output_tokens: positiveInt.optional(),
});

const pricingSchema = z.strictObject({
  /** Keyed by upstream model (`gpt-4o-mini`) or provider-qualified (`east/gpt-4o-mini`, which wins). */
  models: z.record(z.string().min(1), priceSchema).default({}),
  /** A model without a price: serve it at cost 0 and flag it (allow, also when absent), or refuse it (block). */
  on_missing: z.enum(['allow', 'block'], { error: 'must be "allow" or "block"' }).optional(),
});

const breakerSchema = z.strictObject({
  failure_threshold: positiveInt.max(1000).default(5),
  open_base_ms: positiveInt.max(600_000).default(1_000),
  open_max_ms: positiveInt.max(3_600_000).default(30_000),
});

const logSchema = z.strictObject({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** One line per proxied request. */
  access: z.boolean().default(true),
});

/**
 * OpenTelemetry traces over OTLP/HTTP (ADR 0018): off unless `otlp` is set. The header
 * values are secrets (a collector's API key), so they are references like every credential.
 */
const telemetrySchema = z.strictObject({
  otlp: z
    .strictObject({
      /** The collector's traces URL, e.g. http://127.0.0.1:4318/v1/traces (sent as given). */
      endpoint: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
      headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an HTTP header name'), secretRefSchema).default({}),
      /** `service.name` on every span. */
      service_name: z.string().min(1).max(128).default('switchyard'),
      /** Share of new traces recorded (a continued trace follows its parent's decision). */
      sample_ratio: z.number().min(0).max(1).default(1),
    })
    .optional(),
});

// --- Governance (ADR 0009): teams, keys, the governance store, the audit log. ---

const idPattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const idSchema = z.string().regex(idPattern, 'must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)');
const limitCount = z.number().int().min(0);
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
/** One hash, or two while a key is rotated; normalised to a lowercase list. */
const sha256Schema = z
  .union([z.string(), z.array(z.string())], { error: 'must be a SHA-256 (64 hex digits) or a list of two' })
  .superRefine((v, ctx) => {
    const list = typeof v === 'string' ? [v] : v;
    if (list.length < 1 || list.length > 2)
      ctx.addIssue({ code: 'custom', path: [], message: 'give one hash, or two (old and new) while rotating' });
    list.forEach((h, i) => {
      if (!SHA256_HEX.test(h))
        ctx.addIssue({
          code: 'custom',
          path: typeof v === 'string' ? [] : [i],
          message: 'must be the 64 hex digits of a SHA-256 (see `switchyard keys create`)',
        });
    });
  })
  .transform((v) => (typeof v === 'string' ? [v] : v).map((h) => h.toLowerCase()));
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
const rfc3339Schema = z
  .string()
  .refine((v) => RFC3339.test(v) && !Number.isNaN(Date.parse(v)), 'must be an RFC 3339 timestamp, e.g. 2027-06-30T00:00:00Z');

export const teamSchema = z.strictObject({
  /** Glob patterns (`*`, `?`); absent = every model. */
  allowed_models: z.array(z.string().min(1).max(256)).optional(),
  /** Glob patterns over exposed tool names (/mcp); absent = every tool. */
  allowed_tools: z.array(z.string().min(1).max(256)).optional(),
  /** Glob patterns over exposed agent names (/a2a); absent = every agent. */
  allowed_agents: z.array(z.string().min(1).max(256)).optional(),
  /**
   * rpm counts model requests and, each in a window of its own, tools/call on /mcp and
   * messages to agents on /a2a; tpm applies to models only.
   */
  rate_limit: z.strictObject({ rpm: limitCount.optional(), tpm: limitCount.optional() }).optional(),
  quota: z
    .strictObject({
      tokens_per_day: limitCount.optional(),
      tool_calls_per_day: limitCount.optional(),
      /** Messages to agents (SendMessage, SendStreamingMessage) a UTC day; reads are not counted. */
      agent_messages_per_day: limitCount.optional(),
    })
    .optional(),
  budget: z
    .strictObject({
      usd_per_month: z.number().min(0),
      on_exceeded: z.enum(['block', 'warn'], { error: 'must be "block" or "warn"' }).default('block'),
    })
    .optional(),
  /** Added to the route's guardrails: a team cannot remove one. */
  guardrails: guardrailAttachmentSchema.optional(),
  /** `off`: this team's requests neither use nor fill the response cache. */
  cache: callerCacheSchema.optional(),
  /** The zones its requests may reach (providers' `zones`); absent = no limit. */
  residency: residencySchema.optional(),
});

/** A key by its SHA-256 (one, or two while it is rotated) or by a secret reference, never in clear. */
export const keySchema = z
  .strictObject({
    id: idSchema,
    team: idSchema,
    sha256: sha256Schema.optional(),
    key: secretRefSchema.optional(),
    rpm: limitCount.optional(),
    tpm: limitCount.optional(),
    tokens_per_day: limitCount.optional(),
    budget_usd_per_month: z.number().min(0).optional(),
    /** Glob patterns over model names, within the team's; absent = the team's. */
    allowed_models: z.array(z.string().min(1).max(256)).optional(),
    /** Glob patterns over exposed tool names, within the team's; absent = the team's. */
    allowed_tools: z.array(z.string().min(1).max(256)).optional(),
    /** tools/call a UTC day, for this key. */
    tool_calls_per_day: limitCount.optional(),
    /** Glob patterns over exposed agent names, within the team's; absent = the team's. */
    allowed_agents: z.array(z.string().min(1).max(256)).optional(),
    /** Messages to agents a UTC day, for this key. */
    agent_messages_per_day: limitCount.optional(),
    expires_at: rfc3339Schema.optional(),
    /** Added to the route's and the team's guardrails. */
    guardrails: guardrailAttachmentSchema.optional(),
    /** `off`: this key's requests neither use nor fill the response cache. */
    cache: callerCacheSchema.optional(),
    /** The zones its requests may reach, within its team's; absent = the team's. */
    residency: residencySchema.optional(),
  })
  .superRefine((k, ctx) => {
    if ((k.sha256 === undefined) === (k.key === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'set exactly one of sha256 (the hash of the key) or key ({env: NAME} or {file: PATH})',
      });
    }
  });

/** The Redis connection's keys: refused with the memory store, which would silently ignore them. */
const REDIS_ONLY = ['redis_url', 'redis_username', 'redis_password', 'redis_tls'] as const;

export const governanceSchema = z
  .strictObject({
    store: z.enum(['memory', 'redis'], { error: 'must be "memory" or "redis"' }).default('memory'),
    redis_url: redisUrlSchema('governance').optional(),
    /** The ACL user (Redis 6+); absent = the default user (or the URL's user). */
    redis_username: secretRefSchema.optional(),
    /** AUTH's password: `requirepass`, or the ACL user's. */
    redis_password: secretRefSchema.optional(),
    /** For a rediss:// URL: a private CA, a client certificate, the name to verify (as a provider's tls). */
    redis_tls: tlsSchema.optional(),
    key_prefix: z.string().min(1).max(128).default('switchyard:'),
    on_store_error: z.enum(['fail_closed', 'fail_open'], { error: 'must be "fail_closed" or "fail_open"' }).default('fail_closed'),
    /** The output reserved when a request gives no max_tokens. */
    default_max_tokens: positiveInt.max(10_000_000).default(4096),
    /** Send the reserved output cap upstream when a limit applies and the request gives none. */
    cap_output: z.boolean().default(true),
  })
  .superRefine((g, ctx) => {
    if (g.store === 'redis' && g.redis_url === undefined)
      ctx.addIssue({ code: 'custom', path: ['redis_url'], message: 'is required when store is "redis"' });
    if (g.store === 'memory') {
      for (const key of REDIS_ONLY)
        if (g[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'only applies when store is "redis"' });
      return;
    }
    // AUTH takes a user with its password: a user alone would authenticate with nothing.
    if (g.redis_username !== undefined && g.redis_password === undefined)
      ctx.addIssue({ code: 'custom', path: ['redis_password'], message: 'is required with governance.redis_username' });
    const url = g.redis_url !== undefined && URL.canParse(g.redis_url) ? new URL(g.redis_url) : null;
    if (url !== null && url.username !== '' && g.redis_username !== undefined)
      ctx.addIssue({ code: 'custom', path: ['redis_url'], message: 'names a user, and so does governance.redis_username: keep one' });
    // Over redis:// the files would be read and never used: refuse rather than connect in clear.
    if (url !== null && url.protocol === 'redis:' && g.redis_tls !== undefined)
      ctx.addIssue({ code: 'custom', path: ['redis_tls'], message: 'applies to a rediss:// URL only' });
  });

/**
 * Managed teams and keys and the usage ledger: SQLite for one replica, Postgres for several.
 * The password and TLS files are references, as everywhere; a password in the URL is refused.
 */
export const databaseSchema = z
  .strictObject({
    url: z
      .string()
      .min(1)
      .refine(
        (u) => u.startsWith('sqlite:') || ((u.startsWith('postgres://') || u.startsWith('postgresql://')) && URL.canParse(u)),
        'must be sqlite:<path> or postgres://user@host:port/database',
      )
      .refine(
        (u) => !u.startsWith('postgres') || !URL.canParse(u) || new URL(u).password === '',
        'must not contain a password: give it as database.password ({env: NAME} or {file: PATH})',
      )
      .superRefine((u, ctx) => {
        const refused = secretQueryParams(u, 'postgres');
        if (refused.length > 0)
          ctx.addIssue({
            code: 'custom',
            message: `must not carry ${refused.join(', ')} in its query: give the password as database.password ({env: NAME} or {file: PATH}) and the TLS files as database.tls`,
          });
      }),
    password: secretRefSchema.optional(),
    tls: tlsSchema.optional(),
    /** How often a replica compares its version with the database's, for a notification it missed. */
    recheck_ms: z.number().int().min(0).max(3_600_000).default(5000),
    /** Ledger rows held in memory before they are written; past it rows are counted as lost. */
    ledger_queue: positiveInt.max(10_000_000).default(100_000),
    /** Raw ledger rows are kept this many days; the daily rollups are kept. */
    usage_retention_days: positiveInt.max(3650).default(30),
    /** The longest range one usage API query may cover: it bounds what a cursor walk scans. */
    usage_max_range_days: positiveInt.max(36_500).default(400),
    /**
     * Where providers, model routes, tool routes and prices come from: the config file only,
     * the database only (after `switchyard db seed`), or both (the file's read-only).
     */
    topology: z.enum(['file', 'database', 'merged'], { error: 'must be "file", "database" or "merged"' }).default('merged'),
  })
  .superRefine((d, ctx) => {
    if (d.url.startsWith('sqlite:') && (d.password !== undefined || d.tls !== undefined))
      ctx.addIssue({ code: 'custom', path: [d.password !== undefined ? 'password' : 'tls'], message: 'applies to a postgres:// URL only' });
  });

export const auditSchema = z.strictObject({
  /** Append-only JSONL, hash-chained; an existing file's chain is continued. */
  file: z.string().min(1, 'must be a file path'),
  /** Past this size the writer renames the file to `<file>.<UTC time>` and starts a new one anchored to it. */
  max_bytes: z.number().int().min(4096).max(1_099_511_627_776).optional(),
});

/** Keys name configured teams, within their residency; key ids and key hashes are unique. Paths name the entry. */
function checkGovernanceReferences(
  config: {
    teams?: Record<string, { residency?: ResidencyConfig }>;
    keys?: ReadonlyArray<{ id: string; team: string; sha256?: readonly string[]; residency?: ResidencyConfig }>;
  },
  ctx: z.RefinementCtx,
): void {
  const teams = config.teams ?? {};
  const ids = new Map<string, number>();
  const hashes = new Map<string, number>();
  (config.keys ?? []).forEach((k, i) => {
    const team = teams[k.team];
    if (team === undefined) ctx.addIssue({ code: 'custom', path: ['keys', i, 'team'], message: `unknown team "${k.team}"` });
    for (const w of widerResidency(k.residency, team?.residency, k.team))
      ctx.addIssue({ code: 'custom', path: ['keys', i, 'residency', ...w.path], message: w.message });
    const seen = ids.get(k.id);
    if (seen !== undefined)
      ctx.addIssue({ code: 'custom', path: ['keys', i, 'id'], message: `duplicate key id "${k.id}" (also keys[${seen}])` });
    else ids.set(k.id, i);
    for (const h of new Set(k.sha256 ?? [])) {
      const other = hashes.get(h);
      if (other !== undefined)
        ctx.addIssue({ code: 'custom', path: ['keys', i, 'sha256'], message: `the same hash is already used by keys[${other}]` });
      else hashes.set(h, i);
    }
  });
}

export const configSchema = z
  .strictObject({
    server: serverSchema.prefault({}),
    log: logSchema.prefault({}),
    telemetry: telemetrySchema.prefault({}),
    providers: z.record(
      z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'provider names are 1-64 of A-Z a-z 0-9 _ . -'),
      providerSchema,
    ),
    routing: routingSchema,
    pricing: pricingSchema.prefault({}),
    resilience: z.strictObject({ breaker: breakerSchema.prefault({}) }).prefault({}),
    teams: z.record(idSchema, teamSchema).optional(),
    keys: z.array(keySchema).optional(),
    governance: governanceSchema.prefault({}),
    audit: auditSchema.optional(),
    database: databaseSchema.optional(),
    mcp: mcpSchema.prefault({}),
    /** Callers who sign in with a JWT, beside API keys. */
    auth: authSchema.optional(),
    /** Named checks on prompts, answers and tool calls; routes, teams, keys and mcp attach them by name. */
    guardrails: guardrailsSchema.optional(),
    /** The response cache's store and bounds; routes turn it on. */
    cache: cacheSchema.prefault({}),
    /** The bounds of the /a2a endpoints and how long task ownership is remembered; routing.agents exposes agents. */
    a2a: a2aSchema.prefault({}),
  })
  .superRefine(checkGovernanceReferences)
  .superRefine(checkGuardrailReferences);

export type GatewayConfig = z.infer<typeof configSchema>;
export type ServerConfig = GatewayConfig['server'];
export type RouteConfig = z.infer<typeof routeSchema>;
export type OverlayConfig = z.infer<typeof overlaySchema>;
export type PricingConfig = GatewayConfig['pricing'];
export type BreakerConfig = GatewayConfig['resilience']['breaker'];
export type TeamConfig = z.infer<typeof teamSchema>;
export type KeyConfig = z.infer<typeof keySchema>;
export type GovernanceConfig = GatewayConfig['governance'];
export type AuditConfig = z.infer<typeof auditSchema>;
export type DatabaseConfig = z.infer<typeof databaseSchema>;
export type TelemetryConfig = GatewayConfig['telemetry'];
export type McpConfig = GatewayConfig['mcp'];
export type ToolRouteConfig = z.infer<typeof toolRouteSchema>;
export type PriceConfig = z.infer<typeof priceSchema>;
export type AgentRouteConfig = z.infer<typeof agentRouteSchema>;

/** Session-affinity settings when the config has no `routing.session_affinity` block: the schema's defaults. */
export const sessionAffinityDefaults: z.infer<typeof sessionAffinitySchema> = Object.freeze(sessionAffinitySchema.parse({}));

/** Response-ownership bounds when the config has no `routing.responses` block: the schema's defaults. */
export const responsesDefaults: z.infer<typeof responsesSchema> = Object.freeze(responsesSchema.parse({}));
