import { SwitchyardError } from '../errors.js';
import type { Generation, GenerationCandidate, GenerationRoute } from '../live/index.js';
import { type BindingTable, candidateOf, candidatesOf } from '../routing/index.js';
import { authenticate, preCheck } from './admission.js';
import type { Attempt } from './attempt.js';
import type { Exchange } from './exchange.js';
import { serveChainAsync } from './serve-chain.js';
import type { Services } from './services.js';

// The Responses API keeps state upstream: a response id exists only on the provider that
// created it, and a follow-up (`previous_response_id`, `GET` / `DELETE /v1/responses/{id}`)
// sent anywhere else fails or, worse, finds nothing and starts over. The gateway remembers
// which candidate created each id, in a bounded table kept across reloads (a stateful
// service, ADR-0001), and sends follow-ups there with no failover to another provider. A
// reload may withdraw that candidate: the follow-up is then refused, never rerouted.

export interface ResponseOwner {
  /** The model (route) the response was created under. */
  readonly model: string;
  readonly stableId: string;
  /** The provider identity that created it: re-pointed elsewhere, the provider no longer has it. */
  readonly identity: string;
  readonly provider: string;
  /** The creator's team: another team is told the id does not exist, though the upstream account is shared. */
  readonly team: string | null;
}

export type ResponseOwners = BindingTable<ResponseOwner>;

/** Records that `c` created response `id` for this request's caller. */
export function rememberResponse(owners: ResponseOwners, x: Exchange, id: string, c: GenerationCandidate): void {
  const model = x.model;
  if (model === undefined) return;
  owners.bind(id, { model, stableId: c.stableId, identity: c.identity, provider: c.provider.name, team: x.principal?.team ?? null });
}

/**
 * Who holds response `id`, as this caller may know it: `unknown` when the gateway never saw
 * it or has forgotten it, `foreign` when another team created it.
 */
export function ownerOf(owners: ResponseOwners, x: Exchange, id: string): ResponseOwner | 'unknown' | 'foreign' {
  const owner = owners.get(id);
  if (owner === undefined) return 'unknown';
  return owner.team === (x.principal?.team ?? null) ? owner : 'foreign';
}

/**
 * The candidate that holds a response, among `model`'s candidates in this generation: the
 * one that created it, or another on the same provider identity (a renamed stable_id, or a
 * follow-up under another model name). Throws when there is none: a 400 when the model is
 * merely the wrong one, `response_provider_withdrawn` when a reload took the provider away.
 */
export function holderOf(gen: Generation, model: string, owner: ResponseOwner, id: string): GenerationCandidate {
  const found = onOwnerIdentity(gen.routes[model], owner);
  if (found !== undefined) return found;
  if (model !== owner.model && onOwnerIdentity(gen.routes[owner.model], owner) !== undefined) {
    throw new SwitchyardError(
      'invalid_request',
      `response "${id}" is held by provider "${owner.provider}", and model "${model}" has no candidate there; continue it with model "${owner.model}"`,
      'previous_response_id',
    );
  }
  throw new SwitchyardError(
    'response_provider_withdrawn',
    `response "${id}" is held by provider "${owner.provider}" (candidate ${owner.stableId}), which generation ${gen.number} no longer routes model "${owner.model}" to; its state exists only there, so the request was not sent elsewhere: start a new conversation`,
    'previous_response_id',
  );
}

function onOwnerIdentity(route: GenerationRoute | undefined, owner: ResponseOwner): GenerationCandidate | undefined {
  if (route === undefined) return undefined;
  const same = candidateOf(route, owner.stableId);
  if (same !== undefined && same.identity === owner.identity) return same;
  for (const c of candidatesOf(route)) if (c.identity === owner.identity) return c;
  return undefined;
}

const EMPTY = Buffer.alloc(0);
const NO_TOKENS = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/**
 * `GET` and `DELETE /v1/responses/{id}`: authenticated, admitted against the creating
 * model's team limits like any request (it counts toward rpm and costs nothing), and sent
 * to the provider that holds the response, with the client's query string. An id the
 * gateway does not know is a 404 in OpenAI's shape; a deleted one is forgotten.
 */
export async function handleStoredResponse(
  x: Exchange,
  svc: Services,
  attempt: Attempt,
  method: 'GET' | 'DELETE',
  rest: string,
): Promise<void> {
  x.operation = 'responses';
  const gen = svc.holder.current();
  x.gen = gen;
  authenticate(x, svc);
  const id = responseIdOf(x, rest);
  const owner = ownerOf(svc.responses, x, id);
  if (typeof owner === 'string') {
    throw new SwitchyardError(
      'response_not_found',
      `no response with id "${id}" is known to this gateway (it keeps the responses its providers created, within routing.responses bounds)`,
      'response_id',
    );
  }
  x.model = owner.model;
  const query = queryOf(x.req.url);
  x.stream = method === 'GET' && /(?:^|&)stream=true(?:&|$)/.test(query);
  x.storedResponse = { method, id, query };
  const holder = holderOf(gen, owner.model, owner, id);
  // No candidate list: a read or a delete reserves no tokens, whatever the model's price.
  await preCheck(x, svc, { model: owner.model, bodyBytes: 0, maxTokens: 0 }, []);
  await serveChainAsync(x, svc, [holder], { raw: EMPTY, parsed: {} }, attempt, {
    onCommit: (committed) => {
      if (method === 'DELETE' && committed.status < 300) svc.responses.delete(id);
    },
    // A read or a delete uses no tokens, whatever its body says.
    usage: NO_TOKENS,
  });
}

function responseIdOf(x: Exchange, rest: string): string {
  let id: string;
  try {
    id = decodeURIComponent(rest);
  } catch {
    throw new SwitchyardError('invalid_request', 'the response id in the path is not valid percent-encoding', 'response_id');
  }
  // Sub-resources (`{id}/input_items`, `{id}/cancel`) are not served.
  if (rest.includes('/') || id.length > 256) throw new SwitchyardError('not_found', `no such endpoint: ${x.req.method} ${x.req.url}`);
  return id;
}

function queryOf(url: string | undefined): string {
  const at = url?.indexOf('?') ?? -1;
  return at === -1 ? '' : (url as string).slice(at + 1);
}
