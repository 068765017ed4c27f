import { responsesDefaults } from '../config/index.js';
import { SwitchyardError } from '../errors.js';
import type { Generation, GenerationCandidate, GenerationRoute } from '../live/index.js';
import { type Operation, operationProviders, servesOperation } from '../providers/index.js';
import type { FallbackClass } from '../resilience/index.js';
import { select } from '../routing/index.js';
import { type Admitted, preCheck } from './admission.js';
import type { Attempt } from './attempt.js';
import { readBodyThen } from './body.js';
import type { Caller, Exchange, ModelRequest } from './exchange.js';
import { type OperationSpec, operations } from './operations.js';
import { holderOf, type Ownership, ownerOf, rememberResponse } from './response-owners.js';
import { gatewayToolsOf, serveMcpTurn } from './responses/mcp-loop.js';
import { saveTurn } from './responses/save.js';
import { type ResponsesTurn, responseNotFound, turnOf } from './responses/turn.js';
import { type ChainRequest, type ServeCallback, serveChain } from './serve-chain.js';
import type { Services } from './services.js';
import { sessionKeyOf } from './session.js';
import { composeStages, type Serve } from './stage.js';
import { stages } from './stages.js';

/** What every model request shares, built once per listener: the services, the body limit, the two attempts. */
export interface RequestPath {
  readonly svc: Services;
  readonly maxBodyBytes: number;
  /** An attempt behind the provider's breaker; `free` is the same without it, for operations that do not feed it. */
  readonly guarded: Attempt;
  readonly free: Attempt;
}

/**
 * The model endpoints (chat completions, messages, embeddings, completions, responses,
 * count_tokens; the operation and the client protocol are set on the Exchange by the
 * endpoint before anything can fail, so every answer is in the client's shape), as the
 * steps of the request path after the caller is admitted: read and parse the body once,
 * route, the operation's stages (stages.ts), pre-check, try the chain, settle. Failover happens only before the first response
 * byte; after that the response is relayed as it comes. The record of the request is
 * written by the listener when the response ends (see Exchange).
 *
 * The steps run on callbacks (the body's end, the store's answer when it is remote, the
 * attempts'), not on promises: a request served by its first candidate resolves none
 * (ADR 0019). `done` is called once, with null or the error to answer.
 */
export function serveModel(path: RequestPath, x: Exchange, caller: Caller, done: ServeCallback): void {
  readBodyThen(
    x.req,
    path.maxBodyBytes,
    (raw) => {
      try {
        routeAndAdmit(path, x, caller, raw, done);
      } catch (err) {
        done(err);
      }
    },
    done,
  );
}

/** Parse and route; then the stages, the pre-check and the chain (at once, unless a remote store is still answering). */
function routeAndAdmit(path: RequestPath, x: Exchange, caller: Caller, raw: Buffer, done: ServeCallback): void {
  const { svc } = path;
  const { gen } = caller;
  const spec = operations[x.operation];
  const asked = spec.parse(raw, x.protocol);
  const request: ModelRequest = {
    gen,
    keyring: caller.keyring,
    principal: caller.principal,
    operation: x.operation,
    protocol: x.protocol,
    model: asked.model,
    stream: asked.stream,
    raw,
    parsed: asked.parsed,
    stored: null,
  };
  x.asked(request);
  const route = routeOf(gen, request.model);
  if (x.operation === 'responses') {
    // A Responses turn: the conversation it continues is read from the store first.
    const turn = turnOf(request, { store: svc.responseStore, maxItems: maxItemsOf(gen) });
    if (turn instanceof Promise) {
      turn.then((t) => continueTurn(path, x, { ...request, turn: t }, spec, route, done)).catch(done);
      return;
    }
    continueTurn(path, x, { ...request, turn }, spec, route, done);
    return;
  }
  chooseAndServe(path, x, request, spec, route, null, done);
}

/**
 * A turn whose previous response the gateway's store does not hold goes, as it is, to the
 * provider that made it, when the response-owner table knows it (a response created before
 * the gateway kept them); any other turn is routed like a new request.
 */
function continueTurn(
  path: RequestPath,
  x: Exchange,
  request: ModelRequest,
  spec: OperationSpec,
  route: GenerationRoute,
  done: ServeCallback,
): void {
  const turn = request.turn as ResponsesTurn;
  const tools = gatewayToolsOf(request.parsed, request.gen.config.mcp);
  if (tools !== null) return serveMcpTurn(path.svc, x, request, tools, done);
  if (turn.input.some((i) => i.type === 'mcp_approval_response')) {
    throw new SwitchyardError(
      'invalid_request',
      `an mcp_approval_response needs the {"type": "mcp", "server_label": "${request.gen.config.mcp.responses_label}"} tool in tools`,
      'tools',
    );
  }
  if (!turn.legacy || turn.previousResponseId === null) return chooseAndServe(path, x, request, spec, route, null, done);
  const continued = continuation(path.svc, request, turn.previousResponseId);
  if (continued instanceof Promise) {
    // The shared store is asked who holds the previous response (another replica created it).
    continued.then((c) => chooseAndServe(path, x, request, spec, route, c, done)).catch(done);
    return;
  }
  chooseAndServe(path, x, request, spec, route, continued, done);
}

function maxItemsOf(gen: Generation): number {
  return (gen.config.routing.responses ?? responsesDefaults).max_items;
}

/**
 * Routing's last step: the chain (the holder of a continued response, else the route's
 * selection less the candidates that cannot serve the operation), then the operation's
 * stages around the pre-check and the chain.
 */
function chooseAndServe(
  path: RequestPath,
  x: Exchange,
  request: ModelRequest,
  spec: OperationSpec,
  route: GenerationRoute,
  continued: GenerationCandidate | null,
  done: ServeCallback,
): void {
  const { svc } = path;
  const gen = request.gen;
  const model = request.model;
  let candidates: readonly GenerationCandidate[];
  let unserved: SwitchyardError | null = null;
  let onCommit: ChainRequest['onCommit'] = null;
  if (continued !== null) {
    // Only the provider that holds the previous response can continue it: no failover.
    candidates = [continued];
  } else {
    const sessionKey = sessionKeyOf(x.req, gen.config.routing.session_affinity);
    const bindingKey = sessionKey === undefined ? undefined : `${model}\u0000${sessionKey}`;
    const boundStableId = bindingKey === undefined ? undefined : svc.affinity.get(bindingKey);
    const selected = select(route, { counters: svc.counters, random: svc.random, boundStableId }).chain;
    if (selected.length === 0)
      throw new SwitchyardError('no_route', `model "${model}" has no candidate that can serve new requests right now`, 'model');
    candidates = servingCandidates(spec, x.operation, selected);
    if (candidates.length === 0) unserved = unservedError(x.operation, model, selected);
    if (bindingKey !== undefined) {
      onCommit = (committed, c) => {
        if (committed.status < 300) svc.affinity.bind(bindingKey, c.stableId);
      };
    }
  }
  const attempt = spec.guarded ? path.guarded : path.free;
  pipelines[x.operation]({ x, request, svc, candidates, unserved, attempt, onCommit }, done);
}

/**
 * The innermost step, after the stages: the pre-check (for a metered operation), then the
 * chain. A request none of whose candidates serves the operation is refused here.
 */
export const preCheckAndChain: Serve = (r, done) => {
  if (r.candidates.length === 0) throw r.unserved;
  const { x, request, svc } = r;
  const gen = request.gen;
  const model = request.model;
  const spec = operations[request.operation];
  const deadlineMs = deadlineOf(gen, model);
  const serve = (admitted: Admitted): void =>
    serveChain(
      {
        x,
        request,
        limitHeaders: admitted.limitHeaders,
        deadlineAt: deadlineMs === null ? null : x.startedAt + deadlineMs,
        fallbackOn: fallbackFor(request),
        outputCap: admitted.outputCap,
        onResponseId: spec.remembersResponses ? (id, c) => rememberResponse(svc.responses, request, id, c) : null,
        onRelayed: request.turn === undefined ? null : (relayed) => saveTurn(svc, request, relayed),
        svc,
        candidates: admitted.candidates,
        attempt: r.attempt,
        reservation: admitted.reservation,
        onCommit: r.onCommit,
        usage: null,
      },
      done,
    );
  if (!spec.metered) return serve({ candidates: r.candidates, reservation: null, limitHeaders: null, outputCap: null });
  const admitted = preCheck(x, svc, request, { bodyBytes: request.raw.length, maxTokens: spec.maxTokens(request.parsed) }, r.candidates);
  if (admitted instanceof Promise) admitted.then(serve, done);
  else serve(admitted);
};

/** Each operation's stages around the pre-check and the chain, composed once. */
const pipelines: Readonly<Record<Operation, Serve>> = {
  chat: composeStages(preCheckAndChain, stages.chat),
  embeddings: composeStages(preCheckAndChain, stages.embeddings),
  completions: composeStages(preCheckAndChain, stages.completions),
  responses: composeStages(preCheckAndChain, stages.responses),
  count_tokens: composeStages(preCheckAndChain, stages.count_tokens),
};

/**
 * The candidate holding a response the store does not hold, by the response-owner table
 * (one created before the gateway kept responses). Unknown there too, or another team's,
 * it is refused as not found.
 */
function continuation(svc: Services, request: ModelRequest, id: string): GenerationCandidate | Promise<GenerationCandidate> {
  const owner = ownerOf(svc.responses, request.principal, id);
  return owner instanceof Promise ? owner.then((o) => holderFor(request, id, o)) : holderFor(request, id, owner);
}

function holderFor(request: ModelRequest, id: string, owner: Ownership): GenerationCandidate {
  // Neither the store nor the owner table knows the id (never created through this gateway,
  // expired, or another team's): refused, since routing it as new could continue another
  // team's conversation on a shared upstream account.
  if (owner === 'unknown' || owner === 'foreign') throw responseNotFound(id, 'previous_response_id');
  return holderOf(request.gen, request.model, owner, id);
}

/**
 * The candidates whose provider type serves the operation (all of them, for chat); none
 * left is for a stage to answer (the count_tokens estimate), else unservedError's 400.
 */
function servingCandidates(
  spec: OperationSpec,
  operation: Operation,
  chain: readonly GenerationCandidate[],
): readonly GenerationCandidate[] {
  if (servedByAll(chain, operation)) return chain;
  const translated = spec.translatedTo;
  return chain.filter(
    (c) => servesOperation(c.provider.type, operation) || (translated !== null && servesOperation(c.provider.type, translated)),
  );
}

/** A route none of whose candidates serves the operation: the refusal names what would. */
function unservedError(operation: Operation, model: string, chain: readonly GenerationCandidate[]): SwitchyardError {
  const types = [...new Set(chain.map((c) => c.provider.type))].join(' and ');
  return new SwitchyardError(
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

/**
 * The request's `fallback_on`: the route's, and a context-length answer for a turn that
 * continues a conversation the gateway rebuilt: another candidate may take it whole (or,
 * with `truncation: auto`, shortened), and when none does the client hears
 * `context_length_exceeded` with the provider's words.
 */
function fallbackFor(request: ModelRequest): readonly FallbackClass[] | null {
  const route = fallbackOf(request.gen, request.model);
  const turn = request.turn;
  if (turn === undefined || turn.history.length === 0 || route?.includes('context_length')) return route;
  return [...(route ?? []), 'context_length'];
}

/** `fallback_on` of the model's static route, or overlay mode's for every model; null = none (an empty list too). */
function fallbackOf(gen: Generation, model: string): readonly FallbackClass[] | null {
  const routing = gen.config.routing;
  const list = routing.overlay !== undefined ? routing.overlay.fallback_on : routing.routes?.[model]?.fallback_on;
  return list === undefined || list.length === 0 ? null : list;
}

function routeOf(gen: Generation, model: string): GenerationRoute {
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
