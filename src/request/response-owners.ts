import { SwitchyardError } from '../errors.js';
import type { Principal } from '../governance/index.js';
import type { Generation, GenerationCandidate, GenerationRoute } from '../live/index.js';
import { type BindingTable, candidateOf, candidatesOf } from '../routing/index.js';
import type { ModelRequest } from './exchange.js';

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
export function rememberResponse(owners: ResponseOwners, request: ModelRequest, id: string, c: GenerationCandidate): void {
  owners.bind(id, {
    model: request.model,
    stableId: c.stableId,
    identity: c.identity,
    provider: c.provider.name,
    team: request.principal.team,
  });
}

/**
 * Who holds response `id`, as this caller may know it: `unknown` when the gateway never saw
 * it or has forgotten it, `foreign` when another team created it.
 */
export function ownerOf(owners: ResponseOwners, caller: Principal, id: string): ResponseOwner | 'unknown' | 'foreign' {
  const owner = owners.get(id);
  if (owner === undefined) return 'unknown';
  return owner.team === caller.team ? owner : 'foreign';
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
