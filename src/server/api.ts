import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchyardError } from '../errors.js';
import { ClientGoneError } from './body.js';
import { handleChat } from './chat.js';
import { sendBody, sendError, sendJson } from './respond.js';
import type { ListenerSettings, Services } from './services.js';

/** Shared between the listener and the drain: requests in progress, and whether we are stopping. */
export interface TrafficState {
  inflight: number;
  draining: boolean;
}

/** The client-facing listener (`server.listen`). */
export function createApiHandler(svc: Services, settings: ListenerSettings, traffic: TrafficState) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    traffic.inflight += 1;
    res.once('close', () => {
      traffic.inflight -= 1;
    });
    // While draining, finish what arrives on open connections but close them after.
    if (traffic.draining) res.shouldKeepAlive = false;
    const path = pathOf(req);
    switch (path) {
      case '/v1/chat/completions':
        if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
        handleChat(req, res, svc, settings).catch((err: unknown) => failRequest(res, err, svc));
        return;
      case '/v1/models':
        if (req.method !== 'GET') return methodNotAllowed(res, 'GET');
        if (!svc.holder.ready) return sendError(res, 'upstream_unavailable', 'the gateway has no serving generation yet');
        return sendBody(res, 200, svc.holder.current().modelsBody, 'application/json');
      case '/healthz':
        return sendBody(res, 200, '{"status":"ok"}', 'application/json');
      case '/readyz':
        if (svc.holder.ready && !traffic.draining) return sendBody(res, 200, '{"status":"ready"}', 'application/json');
        return sendBody(res, 503, `{"status":"${traffic.draining ? 'draining' : 'starting'}"}`, 'application/json');
      case '/metrics':
        return serveMetrics(req, res, svc);
      default:
        if (path.startsWith('/v1/models/')) return retrieveModel(req, res, svc, path.slice('/v1/models/'.length));
        return sendError(res, 'not_found', `no such endpoint: ${req.method ?? 'GET'} ${path}`);
    }
  };
}

/** GET /v1/models/{model}: one routable model, in OpenAI's model object shape. */
function retrieveModel(req: IncomingMessage, res: ServerResponse, svc: Services, encoded: string): void {
  if (req.method !== 'GET') return methodNotAllowed(res, 'GET');
  if (!svc.holder.ready) return sendError(res, 'upstream_unavailable', 'the gateway has no serving generation yet');
  let model: string;
  try {
    model = decodeURIComponent(encoded);
  } catch {
    return sendError(res, 'invalid_request', 'the model id in the path is not valid percent-encoding', 'model');
  }
  const gen = svc.holder.current();
  const route = gen.routes[model];
  if (route === undefined || !route.admitsNew) {
    return sendError(res, gen.overlay === null ? 'model_not_found' : 'no_route', `model "${model}" is not routed by this gateway`, 'model');
  }
  sendJson(res, 200, { id: model, object: 'model', created: gen.modelsFirstSeen[model], owned_by: 'switchyard' });
}

/** The request's path, without the query string. */
export function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** GET /metrics, on both listeners. */
export function serveMetrics(req: IncomingMessage, res: ServerResponse, svc: Services): void {
  if (req.method !== 'GET') return methodNotAllowed(res, 'GET');
  svc.metrics.render().then(
    (text) => sendBody(res, 200, text, svc.metrics.contentType),
    (err: unknown) => failRequest(res, err, svc),
  );
}

export function methodNotAllowed(res: ServerResponse, allow: string): void {
  sendError(res, 'method_not_allowed', `method not allowed; this endpoint accepts ${allow}`, null, { allow });
}

export function failRequest(res: ServerResponse, err: unknown, svc: Services): void {
  if (err instanceof ClientGoneError) {
    // Nobody is left to answer: count it as nginx's 499 and move on, without an error line.
    svc.metrics.requests.inc({ model: 'none', provider: 'none', status: '499' });
    res.destroy();
    return;
  }
  if (err instanceof SwitchyardError) {
    // The client may still be sending a body we refused: close rather than read it all.
    const extra = err.code === 'body_too_large' ? { connection: 'close' } : undefined;
    svc.metrics.requests.inc({ model: 'none', provider: 'none', status: String(err.status) });
    sendError(res, err.code, err.message, err.param, extra);
    return;
  }
  svc.logger.error({ msg: 'unexpected error while handling a request', err: { message: (err as Error)?.message, stack: (err as Error)?.stack } });
  sendError(res, 'internal_error', 'internal error; see the gateway log');
}
