import { SwitchyardError } from '../errors.js';
import type { Generation } from '../live/index.js';
import type { Exchange } from './exchange.js';
import { sendBody, sendJson } from './respond.js';
import type { Services } from './services.js';

// The model list and one model, in the shape of the client's protocol: what the serving
// generation routes to new requests.

/** GET /v1/models: every model the serving generation routes. */
export function listModels(x: Exchange, svc: Services): void {
  const gen = svc.holder.current();
  sendBody(x.res, 200, speaksAnthropic(x) ? anthropicModelsBody(gen) : gen.modelsBody, 'application/json');
}

/** GET /v1/models/{model}: one routable model, in the shape of the client's protocol. */
export function retrieveModel(x: Exchange, svc: Services, encoded: string): void {
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
