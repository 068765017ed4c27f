import { type ErrorCode, SwitchyardError } from '../errors.js';
import type { Generation, GenerationCandidate, GenerationRoute } from '../live/index.js';
import type { Committed } from '../providers/index.js';
import { select } from '../routing/index.js';
import { authenticate, preCheck, settle } from './admission.js';
import type { Attempt } from './attempt.js';
import { readBody } from './body.js';
import { type ChatRequest, parseChatRequest, parseEmbeddingsRequest, parseMessagesRequest } from './chat-request.js';
import type { Exchange, Failure } from './exchange.js';
import type { ListenerSettings, Services } from './services.js';
import { sessionKeyOf } from './session.js';

/**
 * POST /v1/chat/completions (OpenAI clients) and POST /v1/messages (Anthropic clients, set
 * on `x.protocol` before anything can fail so every answer is in their shape), as the steps of DESIGN.md's request path: capture the
 * generation once, authenticate from the headers, read and parse the body once, route,
 * pre-check, try the chain, settle. Failover happens only before the first response byte;
 * after that the response is relayed as it comes. The record of the request is written
 * by the listener when the response ends (see Exchange).
 */
export async function handleChat(x: Exchange, svc: Services, settings: ListenerSettings, attempt: Attempt): Promise<void> {
  const gen = svc.holder.current();
  x.gen = gen;
  authenticate(x, svc);
  const raw = await readBody(x.req, settings.maxBodyBytes);
  x.bodyBytes = raw.length;
  const chat = parseRequest(x, raw);
  x.model = chat.model;
  x.stream = chat.stream;

  const route = routeOf(gen, chat.model);
  const sessionKey = sessionKeyOf(x.req, gen.config.routing.session_affinity);
  const bindingKey = sessionKey === undefined ? undefined : `${chat.model}\u0000${sessionKey}`;
  const boundStableId = bindingKey === undefined ? undefined : svc.affinity.get(bindingKey);
  let selected = select(route, { counters: svc.counters, random: svc.random, boundStableId }).chain;
  if (selected.length === 0)
    throw new SwitchyardError('no_route', `model "${chat.model}" has no candidate that can serve new requests right now`, 'model');
  if (x.operation === 'embeddings') selected = embeddingCandidates(chat.model, selected);

  const maxTokens = x.operation === 'embeddings' ? 0 : maxTokensOf(chat.parsed);
  const chain = await preCheck(x, svc, { model: chat.model, bodyBytes: raw.length, maxTokens }, selected);
  const deadlineMs = deadlineOf(gen, chat.model);
  if (deadlineMs !== null) x.deadlineAt = x.startedAt + deadlineMs;
  try {
    const committed = await failover(x, chain, { raw, parsed: chat.parsed }, attempt, svc);
    if (committed === null) return;
    if (bindingKey !== undefined && committed.status < 300) svc.affinity.bind(bindingKey, (x.candidate as GenerationCandidate).stableId);
    const relayed = await committed.finished;
    x.outcome = relayed.outcome;
    x.firstByteAt = relayed.firstByteAt;
    x.usage = relayed.usage;
    x.events = relayed.events;
  } finally {
    // Bills what was served, or gives the reservation back when nothing was.
    await settle(x, svc);
  }
}

function parseRequest(x: Exchange, raw: Buffer): ChatRequest {
  if (x.operation === 'embeddings') return parseEmbeddingsRequest(raw);
  return x.protocol === 'anthropic' ? parseMessagesRequest(raw) : parseChatRequest(raw);
}

/** Anthropic has no embeddings endpoint: its candidates are left out, and a route with nothing else is refused. */
function embeddingCandidates(model: string, chain: readonly GenerationCandidate[]): readonly GenerationCandidate[] {
  const left = chain.filter((c) => c.provider.protocol === 'openai');
  if (left.length === 0)
    throw new SwitchyardError(
      'invalid_request',
      `model "${model}" is served only by anthropic providers, which have no embeddings endpoint`,
      'model',
    );
  return left;
}

/** `max_tokens`, or `max_completion_tokens` (the newer name), when the request caps its output. */
function maxTokensOf(body: Record<string, unknown>): number | null {
  const v = body.max_completion_tokens ?? body.max_tokens;
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : null;
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

/**
 * Tries the chain in order until an attempt commits. The first pass skips candidates whose
 * breaker is open; when every breaker was open the chain is tried anyway, in order:
 * failing fast would turn a provider blip into an outage. Resolves with the committed
 * attempt, or null when the client left; throws when every candidate failed.
 */
async function failover(
  x: Exchange,
  chain: readonly GenerationCandidate[],
  body: { readonly raw: Buffer; readonly parsed: Record<string, unknown> },
  attempt: Attempt,
  svc: Services,
): Promise<Committed | null> {
  for (let pass: 0 | 1 = 0; ; pass = 1) {
    let attempted = 0;
    for (const c of chain) {
      if (pastDeadline(x)) return outOfTime(x, chain.length);
      if (x.stopped !== null) throw new SwitchyardError('shutting_down', `the gateway is shutting down: ${x.stopped}`);
      const r = await attempt({ x, raw: body.raw, parsed: body.parsed, candidate: c, pass });
      if (r.kind === 'skipped') continue;
      attempted += 1;
      if (r.kind === 'failed') {
        x.failures.push({ provider: c.provider.name, reason: r.reason, detail: r.detail });
        svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: r.reason });
        continue;
      }
      x.candidate = c;
      if (r.kind === 'aborted') {
        x.outcome = 'aborted';
        return null;
      }
      x.headersAt = r.headersAt;
      return r;
    }
    if (attempted > 0 || pass === 1) break;
  }
  if (pastDeadline(x)) return outOfTime(x, chain.length);
  if (x.stopped !== null) throw new SwitchyardError('shutting_down', `the gateway is shutting down: ${x.stopped}`);
  const summary = x.failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
  throw new SwitchyardError(failureCode(x.failures), `all ${chain.length} candidate(s) for model "${x.model}" failed (${summary})`);
}

/**
 * Whether the route's deadline has passed, give or take a millisecond: a timer may fire a
 * fraction early, and an attempt with less than that left could not be answered anyway.
 */
function pastDeadline(x: Exchange): boolean {
  return x.deadlineAt !== null && performance.now() >= x.deadlineAt - 1;
}

/** The route's deadline passed before a candidate answered: 504, naming what was tried. */
function outOfTime(x: Exchange, candidates: number): never {
  const tried = x.failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
  throw new SwitchyardError(
    'upstream_timeout',
    `deadline_ms for model "${x.model}" passed after ${x.failures.length} of ${candidates} candidate(s)${tried === '' ? '' : ` (${tried})`}`,
  );
}

/**
 * One status for "every candidate failed": when all failures agree (all timeouts, all
 * 429s, all missing credentials) the client gets that specific answer; a mix is a 502.
 */
function failureCode(failures: readonly Failure[]): ErrorCode {
  const first = failures[0];
  if (first === undefined) return 'upstream_unavailable';
  if (failures.some((f) => f.reason !== first.reason)) return 'upstream_error';
  switch (first.reason) {
    case 'timeout':
      return 'upstream_timeout';
    case 'status_429':
      return 'upstream_rate_limited';
    case 'credential_unavailable':
      return 'credential_unavailable';
    default:
      return 'upstream_error';
  }
}
