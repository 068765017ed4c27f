import type { IncomingMessage, ServerResponse } from 'node:http';
import { adminRoleOf, audienceAccepted, audienceRefusal, looksLikeJwt, principalIdOf, type TokenVerdict } from '../auth/index.js';
import { SwitchyardError } from '../errors.js';
import { bearerToken, governanceNow, governanceStatus } from '../governance/index.js';
import type { Generation, Keyring } from '../live/index.js';
import type { AdminCaller } from '../managed/index.js';
import {
  type Answerable,
  type ExposedTool,
  failRequest,
  invalidToken,
  pathOf,
  policyOf,
  readBody,
  type Services,
  sendBody,
  sendJson,
} from '../request/index.js';
import { a2aStatus, pageA2a } from './a2a-view.js';
import { replicasStatus } from './admin-replicas.js';
import { serveV1 } from './admin-v1.js';
import { refusal, serveMetrics } from './answers.js';
import { cacheView } from './cache-view.js';
import type { DatabaseLink } from './database-link.js';
import { answered, type Endpoint, EndpointTable } from './endpoints.js';
import { guardrailsView } from './guardrail-view.js';
import type { ReplicaHeartbeat } from './heartbeat.js';
import { pageData, RECENT_MS } from './page-data.js';
import type { Reloader, ReloadResult } from './reload.js';
import { StatusPageFiles } from './status-page.js';

export interface AdminContext {
  readonly svc: Services;
  readonly reloader: Reloader;
  readonly requestReload: () => Promise<ReloadResult>;
  readonly startedAt: number;
  /** The database of managed teams and keys (its records are null without `database`). */
  readonly database: DatabaseLink;
  /** The reload a committed database write asks for (trigger `database`). */
  readonly reloadForDatabase: () => Promise<ReloadResult>;
  /** This replica's heartbeat, and the records of every replica's. */
  readonly replicas: ReplicaHeartbeat;
  /** The gateway's environment: what references (a draft provider's, a written one's) resolve in. */
  readonly env: NodeJS.ProcessEnv;
  readonly configPath: string;
}

/** One admin request: what its handler and the error path need. */
interface AdminRequest extends Answerable {
  readonly req: IncomingMessage;
  /** Who presented which token (set before any authenticated endpoint runs). */
  caller: AdminCaller;
}

const ANONYMOUS: AdminCaller = Object.freeze({ id: 'anonymous', role: 'admin' });

/** The admin listener keeps no record of its requests: a refusal's code is not noted. */
const unrecorded = (): void => undefined;

/**
 * The operator listener (`server.admin_listen`): the status page, status, reload, audit reopen, metrics.
 * When `server.admin_token` is set every admin endpoint needs it as a bearer token but
 * /healthz and the status page's own files, which hold no data: the page asks for the
 * token and sends it with every fetch. Nothing here ever shows a secret value: credentials
 * appear as their reference.
 */
/** The admin API takes no request body worth more than this. */
const ADMIN_MAX_BODY_BYTES = 64 * 1024;

export function createAdminHandler(ctx: AdminContext) {
  const { svc } = ctx;
  const page = new StatusPageFiles();
  if (page.problem !== null) svc.logger.warn({ msg: 'the status page cannot be served', reason: page.problem });
  const endpoints: Endpoint<AdminRequest>[] = [
    {
      method: 'GET',
      path: '/healthz',
      authenticated: false,
      handle: answered((a) => sendBody(a.res, 200, '{"status":"ok"}', 'application/json')),
    },
    { method: 'GET', path: '/', authenticated: false, handle: answered((a) => page.send(a.res, 'index.html')) },
    { method: 'GET', path: '/status-page/*', authenticated: false, handle: answered((a, name) => page.send(a.res, name)) },
    {
      method: 'GET',
      path: '/admin/status/page-data',
      handle: answered(async (a) => {
        const governance = await governanceView(ctx);
        const a2a = svc.holder.ready ? await pageA2a(svc, svc.holder.current()) : null;
        const replicas = svc.holder.ready ? await replicasStatus(ctx.replicas) : null;
        const { reloader } = ctx;
        const body = JSON.stringify(
          pageData(
            {
              svc,
              history: reloader.history,
              acceptedRevision: reloader.acceptedRevision,
              revisionServingSince: reloader.revisionServingSince,
              lastRejection: reloader.lastRejection,
              lastOverlayRejection: reloader.lastOverlayRejection,
              startedAt: ctx.startedAt,
              governance,
              a2a,
              replicas,
            },
            Date.now(),
          ),
        );
        a.res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'cache-control': 'no-store',
        });
        a.res.end(body);
      }),
    },
    {
      method: 'GET',
      path: '/admin/status',
      handle: answered(async (a) => {
        // Read before the rest: the ids tracked may come from Redis, and the rest is of one moment.
        const a2a = svc.holder.ready ? await a2aStatus(svc, svc.holder.current(), Date.now(), RECENT_MS) : null;
        const replicas = svc.holder.ready ? await replicasStatus(ctx.replicas) : null;
        sendJson(a.res, 200, { ...adminStatus(ctx), a2a, governance: await governanceView(ctx), replicas });
      }),
    },
    {
      method: 'POST',
      path: '/admin/reload',
      handle: answered(async (a) => {
        // The body, if any, is not used, but it is read (bounded, and within
        // server.body_timeout_ms) before acting: a client trickling one must not hold a
        // reload it has already triggered.
        await readBody(a.req, ADMIN_MAX_BODY_BYTES);
        const result = await ctx.requestReload();
        sendJson(a.res, result.result === 'rejected' ? 422 : 200, result);
      }),
    },
    {
      method: 'POST',
      path: '/admin/audit/reopen',
      handle: answered(async (a) => {
        // Read first, as for a reload: a trickled body must not hold the reopen it triggered.
        await readBody(a.req, ADMIN_MAX_BODY_BYTES);
        if (svc.audit === null) throw new SwitchyardError('not_found', 'no audit log is configured (audit.file)');
        const r = await svc.audit.reopen();
        sendJson(a.res, 200, { file: r.file, reopened: r.reopened, head_seq: r.head.seq, head_hash: r.head.hash });
      }),
    },
    { method: 'GET', path: '/metrics', handle: answered((a) => serveMetrics(a.res, svc)) },
    // Managed teams and keys; each of their endpoints judges the caller's role itself.
    ...(['GET', 'POST', 'PATCH', 'DELETE'] as const).map((method) => ({
      method,
      path: '/admin/v1/*',
      handle: answered<AdminRequest>((a, rest) => serveV1(ctx, a, method, rest)),
    })),
  ];
  const table = new EndpointTable<AdminRequest>(endpoints);
  return (req: IncomingMessage, res: ServerResponse): void => {
    const a: AdminRequest = { req, res, failed: unrecorded, caller: ANONYMOUS };
    // An operator who signs in: the token is judged first (a wait only when it is new).
    const presented = bearerToken(req.headers.authorization);
    const verdict = presented !== null && svc.auth.active && looksLikeJwt(presented) ? svc.auth.verify(presented, Date.now()) : null;
    if (verdict instanceof Promise) verdict.then((v) => serve(a, v));
    else serve(a, verdict);
  };

  function serve(a: AdminRequest, verdict: TokenVerdict | null): void {
    const { req } = a;
    const path = pathOf(req);
    const match = table.match(req.method, path);
    try {
      // An unknown path is refused to a caller without the token the same way as a known one.
      if (match.kind !== 'found' || match.endpoint.authenticated !== false)
        a.caller = verdict === null ? adminCaller(svc, req) : signedInOperator(verdict);
      if (match.kind !== 'found') throw refusal(match, req.method, path);
      if (match.endpoint.authenticated !== false && !path.startsWith('/admin/v1/')) mayOperate(a.caller, req.method);
      match.endpoint.handle(a, match.rest, (err) => {
        if (err !== null) failRequest(a, err, svc);
      });
    } catch (err) {
      failRequest(a, err, svc);
    }
  }
}

/**
 * An operator signed in with a JWT: the role its issuer's `roles` mapping gives (admin,
 * read_only or team:<id>), with exactly that admin token's powers, under its principal id
 * (which audit records of its writes name). A token that maps to no role is refused 403.
 */
function signedInOperator(verdict: TokenVerdict): AdminCaller {
  if (!verdict.ok) {
    if (verdict.code === 'credential_unavailable')
      throw new SwitchyardError('credential_unavailable', verdict.description, null, { 'retry-after': '5' });
    throw invalidToken(verdict.description, null);
  }
  const token = verdict.token;
  if (!audienceAccepted(token)) {
    const refused = audienceRefusal(token);
    throw invalidToken(refused.ok ? '' : refused.description, null);
  }
  const role = adminRoleOf(token);
  const id = principalIdOf(token) ?? `jwt:${token.issuer.id}`;
  if (role === null)
    throw new SwitchyardError(
      'forbidden',
      `${id} holds no admin role: its issuer's roles mapping (auth.jwt.issuers ${token.issuer.id}.roles) names none of its claim's values`,
    );
  return { id, role };
}

/**
 * The caller, by its bearer token: `server.admin_token` (id "admin") or one of
 * `server.admin_tokens`. With no token configured the listener is open (loopback only, as
 * the config requires), and every caller is an admin.
 */
function adminCaller(svc: Services, req: IncomingMessage): AdminCaller {
  const tokens = svc.holder.ready ? svc.holder.current().adminTokens : [];
  // Operators who sign in (an issuer with a roles mapping) close the listener as a token does.
  if (tokens.length === 0 && !svc.auth.issuers.some((i) => i.config.roles !== undefined)) return ANONYMOUS;
  const presented = bearerToken(req.headers.authorization);
  // Every token is compared (in constant time each), so the time taken does not say which one matched.
  let found: AdminCaller | null = null;
  if (presented !== null) for (const t of tokens) if (t.credential.matches(presented) && found === null) found = { id: t.id, role: t.role };
  if (found === null) {
    const what = svc.auth.active ? 'an admin token, or a token from a trusted issuer' : 'an admin token';
    throw new SwitchyardError('unauthorized', `the admin API needs Authorization: Bearer <${what}>`, null, {
      'www-authenticate': 'Bearer',
    });
  }
  return found;
}

/** The operator endpoints (status, reload, audit, metrics): an admin token, or a read-only one to read. */
function mayOperate(caller: AdminCaller, method: string | undefined): void {
  if (caller.role === 'admin' || (caller.role === 'read_only' && method === 'GET')) return;
  throw new SwitchyardError(
    'forbidden',
    `admin token "${caller.id}" (role ${caller.role}) may not ${method === 'GET' ? 'read this' : 'do this'}`,
  );
}

/**
 * Per team and key: requests this minute, tokens today and spend this month, each against
 * its limit (spend in USD). Key ids only, never a key. An unreachable store is reported as
 * such rather than failing the whole status.
 */
async function governanceView(ctx: AdminContext): Promise<Record<string, unknown> | null> {
  const { svc } = ctx;
  if (!svc.holder.ready) return null;
  const keyring = svc.keyring.current();
  if (keyring.keys.length === 0 && Object.keys(keyring.teams).length === 0) return null;
  try {
    const status = await governanceStatus(svc.governance, policyOf(keyring), governanceNow());
    return { ...storeView(ctx), ...status };
  } catch (err) {
    return { ...storeView(ctx), error: (err as Error).message };
  }
}

/** The store's kind and health: up, its errors since start, and the last one (when, which call, what). */
function storeView(ctx: AdminContext): Record<string, unknown> {
  const { svc } = ctx;
  const { up, lastError } = svc.governance.health;
  return {
    store: svc.holder.current().config.governance.store,
    store_up: up,
    store_errors: svc.governance.storeErrors,
    last_store_error:
      lastError === null
        ? null
        : { at: new Date(lastError.atMs).toISOString(), operation: lastError.operation, message: lastError.message },
  };
}

function keyringView(keyring: Keyring | null): Record<string, unknown> | null {
  if (keyring === null) return null;
  return {
    number: keyring.number,
    built_at: keyring.builtAt,
    teams: Object.keys(keyring.teams).length,
    keys: keyring.keys.length,
    database_version: keyring.managed?.version ?? null,
  };
}

function adminStatus(ctx: AdminContext): Record<string, unknown> {
  const { svc } = ctx;
  const gen: Generation | null = svc.holder.ready ? svc.holder.current() : null;
  return {
    uptime_s: Math.round((Date.now() - ctx.startedAt) / 1000),
    generation: gen === null ? null : { number: gen.number, built_at: gen.builtAt, config_hash: gen.sourceHash },
    // Beside the generation: a key or team write swaps only this (see docs/operations.md).
    keyring: keyringView(svc.keyring.ready ? svc.keyring.current() : null),
    reloads: [...ctx.reloader.history].reverse(),
    providers:
      gen === null
        ? []
        : Object.values(gen.providers)
            .map(
              (p): Record<string, unknown> => ({
                name: p.name,
                type: p.type,
                base_url: p.baseUrl,
                identity: p.identity,
                credential: p.credential?.source ?? p.bearer?.source ?? p.signer?.keys.source ?? null,
                timeout_ms: p.timeoutMs,
                breaker: svc.breakers.view(p.identity) ?? null,
                inflight: p.pool.inflight,
              }),
            )
            .concat(
              Object.values(gen.tools.servers).map((s) => ({
                name: s.name,
                type: 'mcp',
                base_url: s.url,
                identity: s.identity,
                credential: s.credential?.source ?? null,
                timeout_ms: s.timeoutMs,
                breaker: svc.breakers.view(s.identity) ?? null,
                inflight: s.pool.inflight,
              })),
            ),
    routes:
      gen === null
        ? []
        : Object.values(gen.routes).map((r) => ({
            model: r.model,
            policy: r.policy,
            admits_new: r.admitsNew,
            candidates: r.groups.flatMap((g) =>
              g.candidates.map((c) => ({
                stable_id: c.stableId,
                provider: c.providerName,
                upstream_model: c.upstreamModel,
                region: c.region,
                zones: c.zones === null ? null : [...c.zones],
                weight: c.weight,
                admission: c.admission,
                selection_group: c.group,
                credential: c.credential?.source ?? null,
                credential_problem: c.credentialProblem,
              })),
            ),
          })),
    // Where the providers, routes and prices came from: the file, the database, or both.
    topology:
      gen === null
        ? null
        : {
            source: gen.topology.mode ?? 'file',
            version: gen.topology.version,
            seeded_at: gen.topology.seededAt,
            from_database: {
              providers: gen.topology.fromDatabase.provider.length,
              routes: gen.topology.fromDatabase.route.length,
              tool_routes: gen.topology.fromDatabase.tool_route.length,
              prices: gen.topology.fromDatabase.price.length,
            },
          },
    mcp: gen === null ? null : mcpStatus(svc, gen),
    guardrails: gen === null ? [] : guardrailsView(gen.config, svc.keyring.ready ? svc.keyring.current() : null, svc.guardrailStats),
    cache: gen === null ? null : cacheView(gen.config, svc.cacheStats),
    // The chain head: with it, `audit verify --head SEQ:HASH` later shows whether records after it were cut.
    audit:
      svc.audit === null
        ? null
        : { file: svc.audit.path, head_seq: svc.audit.head.seq, head_hash: svc.audit.head.hash, records_lost: svc.audit.dropped },
    sessions: svc.affinity.size,
    // Response ids whose creating candidate is remembered (routing.responses).
    responses: svc.responses.size,
    overlay:
      gen?.overlay == null
        ? null
        : {
            accepted_revision: ctx.reloader.acceptedRevision,
            serving_revision: gen.overlay.revision,
            format: gen.overlay.format,
            source_uid: gen.overlay.sourceUid,
            source_generation: gen.overlay.sourceGeneration,
            rendered_at: gen.overlay.renderedAt,
            network: gen.overlay.network,
            local_site: gen.overlay.localSite,
            selection_mode: gen.overlay.selectionMode,
            candidate_count: gen.overlay.candidateCount,
            candidates_per_model: gen.overlay.candidatesPerModel,
            candidates_per_tool: gen.overlay.candidatesPerTool,
            unroutable_candidates: gen.overlay.unroutable,
            last_rejection: ctx.reloader.lastOverlayRejection,
          },
  };
}

/**
 * The /mcp endpoint: its client sessions, each MCP server's catalog (when it was last
 * listed, what it lists, its upstream session and stream, its last problem), and the tools
 * routed now with their candidates.
 */
function mcpStatus(svc: Services, gen: Generation): Record<string, unknown> {
  const view = svc.mcp.view(gen);
  return {
    sessions: svc.mcp.sessions.size,
    servers: svc.mcp.status(),
    tools: view.names.map((name) => {
      const tool = view.tools.get(name) as ExposedTool;
      return {
        tool: name,
        policy: tool.route.policy,
        admits_new: tool.route.admitsNew,
        retry_safe: tool.route.retrySafe,
        candidates: tool.route.groups.flatMap((g) =>
          g.candidates.map((c) => ({
            stable_id: c.stableId,
            provider: c.providerName,
            upstream_tool: c.upstreamTool,
            region: c.region,
            zones: c.zones === null ? null : [...c.zones],
            weight: c.weight,
            admission: c.admission,
            selection_group: c.group,
            credential_problem: c.credentialProblem,
          })),
        ),
      };
    }),
    // Routes whose every candidate's server does not list the tool now: not offered, not called.
    unlisted: Object.keys(gen.tools.routes).filter((name) => !view.tools.has(name)),
    skipped: view.skipped,
  };
}
