import { SwitchyardError } from '../errors.js';
import type { Principal, SharedRecords } from '../governance/index.js';
import type { Generation, GenerationCandidate, GenerationRoute } from '../live/index.js';
import { BindingTable, candidateOf, candidatesOf } from '../routing/index.js';
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

/**
 * Which team and candidate created each response id: a bounded table in this process, and,
 * when replicas share a governance store (redis), the same record there (under its key
 * prefix, with the table's time to live), so that any replica routes a follow-up to its
 * candidate and refuses another team's id. The local table answers first; a miss asks the
 * shared store, whose answer (or failure, by governance.on_store_error) decides.
 */
export class ResponseOwners {
  readonly #local: BindingTable<ResponseOwner>;
  readonly #shared: SharedRecords | null;
  #ttlMs: number;

  constructor(options: { ttlMs: number; maxEntries: number }, shared: SharedRecords | null = null) {
    this.#local = new BindingTable(options);
    this.#shared = shared;
    this.#ttlMs = options.ttlMs;
  }

  /** Whether the record is fleet-wide: then an id no replica knows is one that was never created here. */
  get shared(): boolean {
    return this.#shared !== null;
  }

  get size(): number {
    return this.#local.size;
  }

  configure(options: { ttlMs: number; maxEntries: number }): void {
    this.#local.configure(options);
    this.#ttlMs = options.ttlMs;
  }

  remember(id: string, owner: ResponseOwner): void {
    this.#local.bind(id, owner);
    // Not awaited: the response is on its way; a failed write is reported by the store's policy.
    void this.#shared?.set(recordKey(id), JSON.stringify(owner), this.#ttlMs);
  }

  /** The owner, undefined when neither this table nor the shared one knows the id; a promise only when the shared one is asked. */
  lookup(id: string): ResponseOwner | undefined | Promise<ResponseOwner | undefined> {
    const local = this.#local.get(id);
    if (local !== undefined || this.#shared === null) return local;
    return this.#shared.get(recordKey(id)).then(
      (text) => {
        const owner = text === null ? undefined : parseOwner(text);
        if (owner !== undefined) this.#local.bind(id, owner);
        return owner;
      },
      // Only under fail_closed (fail_open reads a failure as a missing record): refused as a reserve would be.
      () => {
        throw new SwitchyardError(
          'governance_unavailable',
          `the governance store is unavailable; the owner of response "${id}" cannot be checked`,
          null,
          { 'retry-after': '1' },
        );
      },
    );
  }

  forget(id: string): void {
    this.#local.delete(id);
    void this.#shared?.delete(recordKey(id));
  }
}

function recordKey(id: string): string {
  return `response:${id}`;
}

/** A record another replica wrote; anything else (another version, a foreign writer) counts as unknown. */
function parseOwner(text: string): ResponseOwner | undefined {
  try {
    const o = JSON.parse(text) as Record<string, unknown>;
    const str = (v: unknown): v is string => typeof v === 'string';
    if (!str(o.model) || !str(o.stableId) || !str(o.identity) || !str(o.provider) || !(o.team === null || str(o.team))) return undefined;
    return { model: o.model, stableId: o.stableId, identity: o.identity, provider: o.provider, team: o.team };
  } catch {
    return undefined;
  }
}

/** Records that `c` created response `id` for this request's caller. */
export function rememberResponse(owners: ResponseOwners, request: ModelRequest, id: string, c: GenerationCandidate): void {
  owners.remember(id, {
    model: request.model,
    stableId: c.stableId,
    identity: c.identity,
    provider: c.provider.name,
    team: request.principal.team,
  });
}

export type Ownership = ResponseOwner | 'unknown' | 'foreign';

/**
 * Who holds response `id`, as this caller may know it: `unknown` when no replica has seen
 * it (or all have forgotten it), `foreign` when another team created it. A promise only when
 * the shared store was asked.
 */
export function ownerOf(owners: ResponseOwners, caller: Principal, id: string): Ownership | Promise<Ownership> {
  const found = owners.lookup(id);
  return found instanceof Promise ? found.then((o) => asSeenBy(caller, o)) : asSeenBy(caller, found);
}

function asSeenBy(caller: Principal, owner: ResponseOwner | undefined): Ownership {
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
