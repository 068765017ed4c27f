import { SwitchyardError } from '../errors.js';
import type { Generation, GenerationCandidate, GenerationRoute } from '../live/index.js';
import { type Operation, operationProviders, servesOperation } from '../providers/index.js';
import { select } from '../routing/index.js';
import { authenticate, preCheck } from './admission.js';
import type { Attempt } from './attempt.js';
import { readBodyThen } from './body.js';
import { ANSWERS_LATER } from '../server/endpoints.js';
import type { Exchange } from './exchange.js';
import { operations } from './operations.js';
import { failRequest } from './respond.js';
import { holderOf, ownerOf, rememberResponse } from './responses.js';
import { type ChainBody, type ServeOptions, serveChain } from './serve-chain.js';
import type { ListenerSettings, Services } from './services.js';
import { sessionKeyOf } from './session.js';

/**
 * The model endpoints (chat completions, messages, embeddings, completions, responses; the
 * operation and the client protocol are set on the Exchange by the endpoint table before
 * anything can fail, so every answer is in the client's shape), as the steps of DESIGN.md's
 * request path: capture the generation once, authenticate from the headers, read and parse
 * the body once, route, pre-check, try the chain, settle. Failover happens only before the
 * first response byte; after that the response is relayed as it comes. The record of the
 * request is written by the listener when the response ends (see Exchange).
 *
 * The steps run on callbacks (the body's end, the store's answer when it is remote, the
 * attempts'), not on promises: a request served by its first candidate resolves none
 * (ADR 0019). A refusal thrown before the body is read reaches the listener's error path;
 * every later one is answered by `ended`.
 */
export function handleChat(x: Exchange, svc: Services, settings: ListenerSettings, attempt: Attempt): typeof ANSWERS_LATER {
  const gen = svc.holder.current();
  x.gen = gen;
  authenticate(x, svc);
  readBodyThen(
    x.req,
    settings.maxBodyBytes,
    (raw) => {
      try {
        routeAndAdmit(x, svc, attempt, raw);
      } catch (err) {
        ended(x, svc, err);
      }
    },
    (err) => ended(x, svc, err),
  );
  return ANSWERS_LATER;
}

const NO_OPTIONS: ServeOptions = Object.freeze({});

/** Parse, route, pre-check; then the chain is tried (at once, unless a remote store is still answering). */
function routeAndAdmit(x: Exchange, svc: Services, attempt: Attempt, raw: Buffer): void {
  const gen = x.gen as Generation;
  const spec = operations[x.operation];
  x.bodyBytes = raw.length;
  const request = spec.parse(raw, x.protocol);
  const model = request.model;
  x.model = model;
  x.stream = request.stream;

  const route = routeOf(gen, model);
  let selected: readonly GenerationCandidate[];
  let options = NO_OPTIONS;
  const continued = request.previousResponseId === undefined ? null : continuation(x, svc, gen, model, request.previousResponseId);
  if (continued !== null) {
    // Only the provider that holds the previous response can continue it: no failover.
    selected = [continued];
  } else {
    const sessionKey = sessionKeyOf(x.req, gen.config.routing.session_affinity);
    const bindingKey = sessionKey === undefined ? undefined : `${model}\u0000${sessionKey}`;
    const boundStableId = bindingKey === undefined ? undefined : svc.affinity.get(bindingKey);
    selected = select(route, { counters: svc.counters, random: svc.random, boundStableId }).chain;
    if (selected.length === 0)
      throw new SwitchyardError('no_route', `model "${model}" has no candidate that can serve new requests right now`, 'model');
    selected = servingCandidates(x.operation, model, selected);
    if (bindingKey !== undefined) {
      options = {
        onCommit: (committed) => {
          if (committed.status < 300) svc.affinity.bind(bindingKey, (x.candidate as GenerationCandidate).stableId);
        },
      };
    }
  }
  if (spec.remembersResponses) x.onResponseId = (id, c) => rememberResponse(svc.responses, x, id, c);

  const body = { raw, parsed: request.parsed };
  const admitted = preCheck(x, svc, { model, bodyBytes: raw.length, maxTokens: spec.maxTokens(request.parsed) }, selected);
  if (admitted instanceof Promise) {
    admitted.then(
      (chain) => serve(x, svc, attempt, chain, body, options),
      (err: unknown) => ended(x, svc, err),
    );
  } else serve(x, svc, attempt, admitted, body, options);
}

function serve(
  x: Exchange,
  svc: Services,
  attempt: Attempt,
  chain: readonly GenerationCandidate[],
  body: ChainBody,
  options: ServeOptions,
): void {
  const deadlineMs = deadlineOf(x.gen as Generation, x.model as string);
  if (deadlineMs !== null) x.deadlineAt = x.startedAt + deadlineMs;
  serveChain(x, svc, chain, body, attempt, options, (err) => ended(x, svc, err));
}

/** The handler's part of the request is over: answer its error, if it ended with one. */
function ended(x: Exchange, svc: Services, err: unknown): void {
  if (err !== null) failRequest(x, err, svc);
  x.done();
}

/**
 * The candidate holding the response a request continues, or null when the gateway does
 * not know the id (never seen, or forgotten): the request is then routed like any other,
 * and the provider answers for the id. Another team's id is refused as not found.
 */
function continuation(x: Exchange, svc: Services, gen: Generation, model: string, id: string): GenerationCandidate | null {
  const owner = ownerOf(svc.responses, x, id);
  if (owner === 'unknown') return null;
  if (owner === 'foreign')
    throw new SwitchyardError(
      'response_not_found',
      `previous_response_id "${id}" names no response this caller may continue`,
      'previous_response_id',
    );
  return holderOf(gen, model, owner, id);
}

/**
 * The candidates whose provider type serves the operation (all of them, for chat); a
 * route with none left is refused, naming what would serve it.
 */
function servingCandidates(operation: Operation, model: string, chain: readonly GenerationCandidate[]): readonly GenerationCandidate[] {
  if (servedByAll(chain, operation)) return chain;
  const left = chain.filter((c) => servesOperation(c.provider.type, operation));
  if (left.length > 0) return left;
  const types = [...new Set(chain.map((c) => c.provider.type))].join(' and ');
  throw new SwitchyardError(
    'invalid_request',
    `model "${model}" is served only by ${types} providers, which have no ${operation} endpoint (${operations[operation].endpoint} is passed to ${operationProviders(operation).join(' and ')} providers)`,
    'model',
  );
}

function servedByAll(chain: readonly GenerationCandidate[], operation: Operation): boolean {
  for (const c of chain) if (!servesOperation(c.provider.type, operation)) return false;
  return true;
}

/** `deadline_ms` of the model's static route, or overlay mode's for every model; null = none. */
function deadlineOf(gen: Generation, model: string): number | null {
  const routing = gen.config.routing;
  const ms = routing.overlay !== undefined ? routing.overlay.deadline_ms : routing.routes?.[model]?.deadline_ms;
  return ms ?? null;
}

export function routeOf(gen: Generation, model: string): GenerationRoute {
  const route = gen.routes[model];
  if (route !== undefined) return route;
  // In overlay mode the control plane decides which models exist: a model it does not
  // list (or withdrew) is a no-route decision, not a typo.
  if (gen.overlay !== null)
    throw new SwitchyardError('no_route', `model "${model}" has no candidate in overlay revision ${gen.overlay.revision}`, 'model');
  throw new SwitchyardError(
    'model_not_found',
    `model "${model}" is not routed by this gateway; GET /v1/models lists the models it serves`,
    'model',
  );
}
