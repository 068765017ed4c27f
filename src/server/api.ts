import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchyardError } from '../errors.js';
import type { Generation } from '../live/index.js';
import type { ChatProtocol, Operation } from '../providers/index.js';
import { type Attempt, composeAttempt, sendToCandidate, withBreaker, withCredentialCheck, withTracing } from '../request/attempt.js';
import { handleChat } from '../request/chat.js';
import { handleCountTokens } from '../request/count-tokens.js';
import { ANSWERS_LATER, type Endpoint, EndpointTable, pathOf } from './endpoints.js';
import { Exchange } from '../request/exchange.js';
import type { OpenExchanges } from './open-exchanges.js';
import { recordRequest } from '../request/record.js';
import { failRequest, refusal, sendBody, sendJson, serveMetrics } from '../request/respond.js';
import { handleStoredResponse } from '../request/responses.js';
import type { ListenerSettings, Services } from '../request/services.js';

/** Shared between the listener and the drain: requests in progress, and whether we are stopping. */
export interface TrafficState {
  inflight: number;
  draining: boolean;
  /** Requests in progress, so that the drain can end the ones its limit catches. */
  readonly open: OpenExchanges;
}

const HEALTHY = '{"status":"ok"}';

/** The client-facing listener (`server.listen`): its endpoints, and one error path for all of them. */
export function createApiHandler(svc: Services, settings: ListenerSettings, traffic: TrafficState) {
  const wraps = [withCredentialCheck, withBreaker(svc.breakers)];
  // Innermost, so that only a call that goes upstream gets a span.
  if (svc.tracing !== null) wraps.push(withTracing(svc.tracing));
  const attempt: Attempt = composeAttempt(sendToCandidate, ...wraps);
  const table = new EndpointTable<Exchange>(apiEndpoints(svc, settings, traffic, attempt));
  const record = (x: Exchange): void => recordRequest(svc, x);
  const tracing = svc.tracing;
  return (req: IncomingMessage, res: ServerResponse): void => {
    traffic.inflight += 1;
    const x = new Exchange(req, res, record);
    traffic.open.add(x);
    res.on('close', () => {
      traffic.inflight -= 1;
      traffic.open.delete(x);
      x.clientClosed?.();
      x.done();
    });
    // While draining, finish what arrives on open connections but close them after.
    if (traffic.draining) res.shouldKeepAlive = false;
    const path = pathOf(req);
    const match = table.match(req.method, path);
    if (match.kind !== 'found') {
      if (tracing !== null) x.span = tracing.startServer(req.method ?? 'GET', null, path, req.headers);
      failRequest(x, refusal(match, req.method, path), svc);
      x.done();
      return;
    }
    x.recorded = match.endpoint.recorded !== false;
    if (tracing !== null && x.recorded) x.span = tracing.startServer(match.endpoint.method, match.endpoint.path, path, req.headers);
    let handled: void | Promise<void> | typeof ANSWERS_LATER;
    try {
      handled = match.endpoint.handle(x, match.rest);
    } catch (err) {
      failRequest(x, err, svc);
      x.done();
      return;
    }
    if (handled === undefined) x.done();
    else if (handled !== ANSWERS_LATER)
      handled.then(x.done, (err: unknown) => {
        failRequest(x, err, svc);
        x.done();
      });
  };
}

function apiEndpoints(svc: Services, settings: ListenerSettings, traffic: TrafficState, attempt: Attempt): Endpoint<Exchange>[] {
  // What the client asks for and the protocol it speaks are set before anything can fail,
  // so every answer, a refusal included, is in its shape.
  const model =
    (operation: Operation, protocol: ChatProtocol) =>
    (x: Exchange): typeof ANSWERS_LATER => {
      x.operation = operation;
      x.protocol = protocol;
      return handleChat(x, svc, settings, attempt);
    };
  return [
    { method: 'POST', path: '/v1/chat/completions', handle: model('chat', 'openai') },
    { method: 'POST', path: '/v1/messages', handle: model('chat', 'anthropic') },
    { method: 'POST', path: '/v1/embeddings', handle: model('embeddings', 'openai') },
    { method: 'POST', path: '/v1/completions', handle: model('completions', 'openai') },
    { method: 'POST', path: '/v1/responses', handle: model('responses', 'openai') },
    { method: 'GET', path: '/v1/responses/*', handle: (x, id) => handleStoredResponse(x, svc, attempt, 'GET', id) },
    { method: 'DELETE', path: '/v1/responses/*', handle: (x, id) => handleStoredResponse(x, svc, attempt, 'DELETE', id) },
    { method: 'POST', path: '/v1/messages/count_tokens', handle: (x) => handleCountTokens(x, svc, settings) },
    {
      method: 'GET',
      path: '/v1/models',
      handle: (x) => {
        const gen = svc.holder.current();
        sendBody(x.res, 200, speaksAnthropic(x) ? anthropicModelsBody(gen) : gen.modelsBody, 'application/json');
      },
    },
    { method: 'GET', path: '/v1/models/*', handle: (x, id) => retrieveModel(x, svc, id) },
    { method: 'GET', path: '/healthz', recorded: false, handle: (x) => sendBody(x.res, 200, HEALTHY, 'application/json') },
    {
      method: 'GET',
      path: '/readyz',
      recorded: false,
      handle: (x) => {
        if (svc.holder.ready && !traffic.draining) return sendBody(x.res, 200, '{"status":"ready"}', 'application/json');
        return sendBody(x.res, 503, `{"status":"${traffic.draining ? 'draining' : 'starting'}"}`, 'application/json');
      },
    },
    { method: 'GET', path: '/metrics', recorded: false, handle: (x) => serveMetrics(x.res, svc) },
  ];
}

/** GET /v1/models/{model}: one routable model, in the shape of the client's protocol. */
function retrieveModel(x: Exchange, svc: Services, encoded: string): void {
  speaksAnthropic(x);
  let model: string;
  try {
    model = decodeURIComponent(encoded);
  } catch {
    throw new SwitchyardError('invalid_request', 'the model id in the path is not valid percent-encoding', 'model');
  }
  const gen = svc.holder.current();
  x.gen = gen;
  const route = gen.routes[model];
  if (route === undefined || !route.admitsNew) {
    throw new SwitchyardError(
      gen.overlay === null ? 'model_not_found' : 'no_route',
      `model "${model}" is not routed by this gateway`,
      'model',
    );
  }
  const created = gen.modelsFirstSeen[model] ?? 0;
  if (speaksAnthropic(x)) sendJson(x.res, 200, anthropicModel(model, created));
  else sendJson(x.res, 200, { id: model, object: 'model', created, owned_by: 'switchyard' });
}

const anthropicLists = new WeakMap<Generation, string>();

/**
 * The model list in Anthropic's shape (one page, always). Rendered on the first request that
 * asks for it, once per generation, rather than while building every generation: a config
 * may route ~10^5 models, and most deployments never ask.
 */
function anthropicModelsBody(gen: Generation): string {
  let body = anthropicLists.get(gen);
  if (body === undefined) {
    const iso = new Map<number, string>();
    const data = Object.values(gen.routes)
      .filter((r) => r.admitsNew)
      .map((r) => {
        const at = gen.modelsFirstSeen[r.model] ?? 0;
        let createdAt = iso.get(at);
        if (createdAt === undefined) iso.set(at, (createdAt = new Date(at * 1000).toISOString()));
        return { type: 'model', id: r.model, display_name: r.model, created_at: createdAt };
      });
    body = JSON.stringify({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
    anthropicLists.set(gen, body);
  }
  return body;
}

/** One model in Anthropic's shape. */
function anthropicModel(id: string, createdEpochS: number): { type: 'model'; id: string; display_name: string; created_at: string } {
  return { type: 'model', id, display_name: id, created_at: new Date(createdEpochS * 1000).toISOString() };
}

/**
 * The models endpoints serve both SDKs on one path; Anthropic's sends `anthropic-version`
 * on every request, OpenAI's never does. Its errors are then Anthropic-shaped too.
 */
function speaksAnthropic(x: Exchange): boolean {
  if (x.req.headers['anthropic-version'] === undefined) return false;
  x.protocol = 'anthropic';
  return true;
}
