import { SwitchyardError } from '../errors.js';
import * as governance from '../governance/index.js';
import type { Generation } from '../live/index.js';
import { admitCaller } from './admission.js';
import type { Exchange } from './exchange.js';
import { policyOf } from './policy.js';
import { sendBody, sendJson } from './respond.js';
import type { Services } from './services.js';

// The model list and one model, in the shape of the client's protocol: what the serving
// generation routes to new requests, and, with keys configured, only what the caller's
// team may use (a list that names models a key cannot call would only lead it to 403s).

/** GET /v1/models: every model the serving generation routes that the caller may use. */
export function listModels(x: Exchange, svc: Services): void {
  const anthropic = speaksAnthropic(x);
  const { gen, allows, listKey } = callerAllows(x, svc);
  const body = anthropic ? anthropicModelsBody(gen) : gen.modelsBody;
  sendBody(x.res, 200, allows === null || listKey === null ? body : allowedBody(gen, listKey, body, anthropic, allows), 'application/json');
}

/** GET /v1/models/{model}: one routable model the caller may use, in the shape of the client's protocol. */
export function retrieveModel(x: Exchange, svc: Services, encoded: string): void {
  speaksAnthropic(x);
  let model: string;
  try {
    model = decodeURIComponent(encoded);
  } catch {
    throw new SwitchyardError('invalid_request', 'the model id in the path is not valid percent-encoding', 'model');
  }
  const { gen, allows } = callerAllows(x, svc);
  const route = gen.routes[model];
  // A model the caller may not use is answered as one not routed: the key learns nothing of other teams' models.
  if (route === undefined || !route.admitsNew || (allows !== null && !allows(model))) {
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

/**
 * The caller, authenticated as on the model endpoints (401 without a valid key when keys
 * are configured), with the generation it captured, and which models its team may use;
 * null = every model (an open gateway, or a team without `allowed_models`).
 */
function callerAllows(
  x: Exchange,
  svc: Services,
): { gen: Generation; allows: ((model: string) => boolean) | null; listKey: ListKey | null } {
  const { gen, keyring, principal } = admitCaller(x, svc);
  if (principal.team === null) return { gen, allows: null, listKey: null };
  const policy = policyOf(keyring);
  // The key's or the signed-in principal's own list narrows the team's: the rendered list is kept per list, not per team.
  const own = governance.ownList(policy, principal, 'models');
  return {
    gen,
    allows: (model) => governance.checkModel(policy, principal, model) === null,
    listKey: { policy, key: `${principal.team}\u0000${own === null ? '' : listIdOf(own)}` },
  };
}

/** Whose list a rendered model list is: the keyring's policy, and the team with its caller's own list. */
interface ListKey {
  readonly policy: governance.GovernancePolicy;
  readonly key: string;
}

/** A number per compiled allow-list (scopes' lists are shared by every token with the same scopes). */
const listIds = new WeakMap<(model: string) => boolean, number>();
let nextListId = 1;

function listIdOf(allows: (model: string) => boolean): number {
  let id = listIds.get(allows);
  if (id === undefined) {
    id = nextListId++;
    listIds.set(allows, id);
  }
  return id;
}

/** Rendered lists per generation and keyring policy (a team's allowed_models may change with the keyring alone). */
const teamLists = new WeakMap<Generation, WeakMap<governance.GovernancePolicy, Map<string, string>>>();

/** A model list body with only the models `allows` lets through; rendered once per generation, keyring, list and protocol. */
function allowedBody(gen: Generation, listKey: ListKey, body: string, anthropic: boolean, allows: (model: string) => boolean): string {
  let byPolicy = teamLists.get(gen);
  if (byPolicy === undefined) teamLists.set(gen, (byPolicy = new WeakMap()));
  let lists = byPolicy.get(listKey.policy);
  if (lists === undefined) byPolicy.set(listKey.policy, (lists = new Map()));
  const key = `${anthropic ? 'a' : 'o'}:${listKey.key}`;
  let out = lists.get(key);
  if (out === undefined) {
    const parsed = JSON.parse(body) as { data: Array<{ id: string }> } & Record<string, unknown>;
    const data = parsed.data.filter((m) => allows(m.id));
    out = JSON.stringify(anthropic ? anthropicPage(data) : { ...parsed, data });
    lists.set(key, out);
  }
  return out;
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
    body = JSON.stringify(anthropicPage(data));
    anthropicLists.set(gen, body);
  }
  return body;
}

/** A list of models as Anthropic's one page of them. */
function anthropicPage<T extends { id: string }>(data: readonly T[]): Record<string, unknown> {
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
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
  x.speaks('anthropic');
  return true;
}
