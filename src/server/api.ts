import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchyardError } from '../errors.js';
import { bearerToken } from '../governance/index.js';
import type { ChatProtocol, Operation } from '../providers/index.js';
import {
  a2aHandlers,
  accessLogSink,
  auditSink,
  cacheStatsSink,
  Exchange,
  failRequest,
  guardrailStatsSink,
  keysUsedSink,
  type ListenerSettings,
  ledgerSink,
  listModels,
  mcpHandlers,
  metricsSink,
  modelHandlers,
  pathOf,
  protectedResource,
  type RecordSink,
  recentSink,
  recordTo,
  retrieveModel,
  type Services,
  sendBody,
  spanSink,
  verifyCallerToken,
} from '../request/index.js';
import { refusal, serveMetrics } from './answers.js';
import { answered, type Endpoint, EndpointTable, type Handler } from './endpoints.js';
import type { OpenExchanges } from './open-exchanges.js';

/** Shared between the listener and the drain: requests in progress, and whether we are stopping. */
export interface TrafficState {
  inflight: number;
  draining: boolean;
  /** Requests in progress, so that the drain can end the ones its limit catches. */
  readonly open: OpenExchanges;
}

const HEALTHY = '{"status":"ok"}';

/** A path the listener does not serve: recorded under endpoint `none`. */
const UNMATCHED = { path: 'none' } as const;

/**
 * Where every finished request's record goes, in order; built once per listener. A sink
 * whose service is not configured (no database, no audit log, no tracing) is left out.
 */
export function recordSinks(svc: Services): RecordSink[] {
  const sinks = [keysUsedSink(svc.keysUsed), metricsSink(svc.metrics)];
  if (svc.ledger !== null) sinks.push(ledgerSink(svc.ledger));
  sinks.push(
    recentSink(svc.recent, svc.mcp.recent, svc.a2a.recent),
    guardrailStatsSink(svc.guardrailStats),
    cacheStatsSink(svc.cacheStats),
  );
  if (svc.audit !== null) sinks.push(auditSink(svc.audit));
  if (svc.tracing !== null) sinks.push(spanSink(svc.tracing));
  sinks.push(accessLogSink(svc.accessLog));
  return sinks;
}

/** An API endpoint: what the client asks for and the protocol it speaks, known before anything can fail. */
interface ApiEndpoint extends Endpoint<Exchange> {
  readonly operation?: Operation;
  readonly protocol?: ChatProtocol;
}

/** The client-facing listener (`server.listen`): its endpoints, and one error path for all of them. */
export function createApiHandler(svc: Services, settings: ListenerSettings, traffic: TrafficState) {
  const table = new EndpointTable<Exchange, ApiEndpoint>(apiEndpoints(svc, settings, traffic));
  const record = recordTo(recordSinks(svc), svc.metrics, svc.logger);
  const tracing = svc.tracing;
  return (req: IncomingMessage, res: ServerResponse): void => {
    traffic.inflight += 1;
    const x = new Exchange(req, res, record, traffic.open.add());
    res.on('close', () => {
      traffic.inflight -= 1;
      traffic.open.delete(x.running);
      x.running.clientClosed?.();
      x.done();
    });
    // While draining, finish what arrives on open connections but close them after.
    if (traffic.draining) res.shouldKeepAlive = false;
    let finished = false;
    const finish = (err: unknown): void => {
      if (finished) return;
      finished = true;
      if (err !== null) failRequest(x, err, svc);
      x.done();
    };
    const path = pathOf(req);
    const match = table.match(req.method, path);
    if (match.kind !== 'found') {
      x.matched(UNMATCHED, tracing === null ? null : tracing.startServer(req.method ?? 'GET', null, path, req.headers));
      finish(refusal(match, req.method, path));
      return;
    }
    const endpoint = match.endpoint;
    // Before anything can fail, so every answer, a refusal included, is in the client's shape.
    const traced = tracing !== null && endpoint.recorded !== false;
    x.matched(endpoint, traced ? tracing.startServer(endpoint.method, endpoint.path, path, req.headers) : null);
    // A signed-in caller's token is judged first: at once when it was verified before, or
    // after its signature is checked (the one wait authentication may take).
    const judged = endpoint.recorded === false ? undefined : verifyCallerToken(x, svc);
    if (judged === undefined) return handle(endpoint, x, match.rest, finish);
    judged.then(() => handle(endpoint, x, match.rest, finish), finish);
  };
}

function handle(endpoint: ApiEndpoint, x: Exchange, rest: string, finish: (err: unknown) => void): void {
  try {
    endpoint.handle(x, rest, finish);
  } catch (err) {
    finish(err);
  }
}

const READY_STORE_UP = '{"status":"ready","governance_store":"up"}';
const READY_STORE_DOWN = '{"status":"ready","governance_store":"down"}';

function apiEndpoints(svc: Services, settings: ListenerSettings, traffic: TrafficState): ApiEndpoint[] {
  const models = modelHandlers(svc, settings);
  const serve: Handler<Exchange> = models.serve;
  const mcp = mcpHandlers(svc, settings, settings.version ?? 'dev');
  const a2a = a2aHandlers(svc, settings);
  return [
    // The Agent2Agent protocol: agents routed like models and tools.
    { method: 'GET', path: '/a2a', handle: a2a.list },
    { method: 'GET', path: '/a2a/*', handle: a2a.card },
    { method: 'POST', path: '/a2a/*', handle: a2a.post },
    // The MCP Streamable HTTP endpoint: tools routed like models.
    { method: 'POST', path: '/mcp', handle: mcp.post },
    { method: 'GET', path: '/mcp', handle: mcp.get },
    { method: 'DELETE', path: '/mcp', handle: mcp.delete },
    { method: 'POST', path: '/v1/chat/completions', operation: 'chat', protocol: 'openai', handle: serve },
    { method: 'POST', path: '/v1/messages', operation: 'chat', protocol: 'anthropic', handle: serve },
    { method: 'POST', path: '/v1/embeddings', operation: 'embeddings', protocol: 'openai', handle: serve },
    { method: 'POST', path: '/v1/completions', operation: 'completions', protocol: 'openai', handle: serve },
    { method: 'POST', path: '/v1/responses', operation: 'responses', protocol: 'openai', handle: serve },
    { method: 'POST', path: '/v1/responses/input_tokens', protocol: 'openai', handle: models.inputTokens },
    { method: 'GET', path: '/v1/responses/*', operation: 'responses', protocol: 'openai', handle: models.getStoredResponse },
    { method: 'DELETE', path: '/v1/responses/*', operation: 'responses', protocol: 'openai', handle: models.deleteStoredResponse },
    // The Conversations API, served from the response store: '' is the collection.
    { method: 'POST', path: '/v1/conversations', protocol: 'openai', handle: (x, _rest, done) => models.conversations(x, '', done) },
    { method: 'GET', path: '/v1/conversations/*', protocol: 'openai', handle: models.conversations },
    { method: 'POST', path: '/v1/conversations/*', protocol: 'openai', handle: models.conversations },
    { method: 'DELETE', path: '/v1/conversations/*', protocol: 'openai', handle: models.conversations },
    { method: 'POST', path: '/v1/messages/count_tokens', operation: 'count_tokens', protocol: 'anthropic', handle: serve },
    { method: 'GET', path: '/v1/models', handle: answered((x) => listModels(x, svc)) },
    // OAuth 2.0 protected-resource metadata (RFC 9728) for /mcp: where MCP clients learn which issuers to ask for a token.
    { method: 'GET', path: '/.well-known/oauth-protected-resource', handle: answered((x) => protectedResource(x, svc)) },
    { method: 'GET', path: '/.well-known/oauth-protected-resource/*', handle: answered((x, rest) => protectedResource(x, svc, rest)) },
    { method: 'GET', path: '/v1/models/*', handle: answered((x, id) => retrieveModel(x, svc, id)) },
    { method: 'GET', path: '/healthz', recorded: false, handle: answered((x) => sendBody(x.res, 200, HEALTHY, 'application/json')) },
    {
      method: 'GET',
      path: '/readyz',
      recorded: false,
      handle: answered((x) => {
        // Ready whatever the store's state (taking every replica out would turn the store
        // rule's 503s into refused connections), but the body says it, for whoever looks.
        if (svc.holder.ready && !traffic.draining) {
          return sendBody(x.res, 200, svc.governance.health.up ? READY_STORE_UP : READY_STORE_DOWN, 'application/json');
        }
        return sendBody(x.res, 503, `{"status":"${traffic.draining ? 'draining' : 'starting'}"}`, 'application/json');
      }),
    },
    {
      method: 'GET',
      path: '/metrics',
      recorded: false,
      handle: answered((x) => {
        checkMetricsAccess(svc, x.req);
        serveMetrics(x.res, svc);
      }),
    },
  ];
}

/**
 * The metrics name every team and key id and show their spend: with keys configured, the
 * API listener (which every tenant reaches) serves them only to a caller with the admin
 * token, unless `server.public_metrics` opens them. An open gateway (no keys) has no tenants
 * to keep apart. The admin listener's /metrics is guarded by the admin API's own rule.
 */
function checkMetricsAccess(svc: Services, req: IncomingMessage): void {
  if (!svc.holder.ready) return;
  const gen = svc.holder.current();
  // Tenants are keys or signed-in principals: with neither, there are none to keep apart.
  if (gen.config.server.public_metrics || (svc.keyring.current().keys.length === 0 && !svc.auth.active)) return;
  const presented = bearerToken(req.headers.authorization);
  if (gen.adminToken !== null && presented !== null && gen.adminToken.matches(presented)) return;
  throw new SwitchyardError(
    'unauthorized',
    "this listener's /metrics shows every team's usage: send Authorization: Bearer <server.admin_token>, scrape the admin listener, or set server.public_metrics: true",
    null,
    { 'www-authenticate': 'Bearer' },
  );
}
