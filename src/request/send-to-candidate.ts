import { checkUsage, costMicroUsd, isPriced } from '../governance/index.js';
import type { Generation, GenerationCandidate } from '../live/index.js';
import { type AnswerTransform, composeTransforms, providerHeaders, relay, type UsageHeadersOf } from '../providers/index.js';
import { usageBoundsOf } from './admission.js';
import type { AdmittedRequest, Attempt } from './attempt.js';
import type { Exchange, Failure, ModelRequest } from './exchange.js';
import { outputTransform } from './guardrails/guard.js';
import { operations } from './operations.js';

// The core of an attempt, which the wraps of attempt.ts decorate: the upstream call for one
// candidate, through its provider's pool, and the relay of its answer if it commits.

export const COST_HEADER = 'x-switchyard-cost-usd';
export const DROPPED_HEADER = 'x-switchyard-dropped';

/**
 * The core: the upstream call for this candidate (its operation decides method, path and
 * body), relayed to the client if it commits. A request that cannot be translated to the
 * candidate's protocol throws a 400 naming the field, before anything is sent.
 */
export const sendToCandidate: Attempt = (a, done) => {
  const { x, request, limitHeaders: limits, onResponseId } = a.admitted;
  const c = a.candidate;
  const gen = request.gen;
  const provider = c.provider;
  const requestId = x.requestId;
  const upstream = operations[request.operation].upstream(
    request,
    c,
    onResponseId === null ? null : (id) => onResponseId(id, c),
    a.admitted.outputCap,
  );
  const headers = providerHeaders(
    provider,
    c.credential ?? provider.bearer ?? provider.credential,
    provider.headers,
    request.stream ? 'text/event-stream' : 'application/json',
    requestId,
    x.req.headers,
  );
  const own: string[] = ['x-switchyard-request-id', requestId];
  if (gen.overlay !== null) {
    // Grid provider-hop headers, so a provider behind a Grid hop can attribute the request.
    headers['x-ai-routing-candidate'] = c.stableId;
    headers['x-ai-routing-request-id'] = requestId;
    headers['x-ai-routing-revision'] = gen.overlay.revision;
  }
  if (a.trace !== null) Object.assign(headers, a.trace);
  else forwardTraceContext(x, headers);
  if (x.failures.length > 0) {
    const fallback = fallbackHeader(x.failures);
    if (fallback !== '') own.push('x-switchyard-fallback', fallback);
  }
  // The fields this candidate's translation left out: the answer says so, as the access line does.
  const dropped = upstream.dropped ?? null;
  if (dropped !== null) own.push(DROPPED_HEADER, dropped.join(','));
  // A gateway limit's headers replace the upstream's of the same names.
  if (limits !== null) for (const v of limits) own.push(v);
  const cache = request.cache;
  if (cache !== undefined) for (const v of cache.headers) own.push(v);
  const fixed = fixedOf(gen, c);
  x.attemptStarted(dropped);
  const wire = provider.wire;
  if (wire.sign !== null) {
    // Signed over the bytes and the path about to be sent; the keys were checked by the attempt's wrap.
    try {
      Object.assign(headers, wire.sign(upstream.method, upstream.path, headers, upstream.body));
    } catch (err) {
      // Not before this returns: the attempt's callback never fires from inside it.
      queueMicrotask(() =>
        done({
          kind: 'failed',
          reason: 'credential_unavailable',
          detail: `provider ${provider.name}: cannot sign (${(err as Error)?.message})`,
        }),
      );
      return;
    }
  }
  const readers = wire.readers(c.protocol);
  relay(
    {
      res: x.res,
      pool: provider.pool,
      providerName: provider.name,
      call: {
        method: upstream.method,
        path: upstream.path,
        headers,
        body: upstream.body,
        timeoutMs: provider.timeoutMs,
      },
      clientHeaders: {
        attribution: fixed.attribution,
        own,
        expose: provider.exposeHeaders,
        limitsReplaced: limits !== null && hasRateLimitHeaders(limits),
      },
      transform: composeTransforms(upstream.transform, answerTransforms(fixed, request, x)),
      doneBy: doneBy(a.admitted, provider.requestTimeoutMs),
      streamMaxMs: request.stream ? (provider.streamMaxMs ?? undefined) : undefined,
      maxEventBytes: provider.maxEventBytes,
      stopSlot: x.running,
      fallbackOn: a.admitted.fallbackOn ?? undefined,
      readAnswer: readers.readAnswer,
      statusOfAnswer: readers.statusOfAnswer,
    },
    done,
  );
};

/** The earlier of the provider's request_timeout_ms (a non-streamed response) and the route's deadline. */
function doneBy(admitted: AdmittedRequest, requestTimeoutMs: number | null): number | undefined {
  const own = requestTimeoutMs === null || admitted.request.stream ? null : performance.now() + requestTimeoutMs;
  const route = admitted.deadlineAt;
  if (own === null) return route ?? undefined;
  return route === null ? own : Math.min(own, route);
}

/** What is the same for every request a candidate serves in its generation. */
interface CandidateFixed {
  readonly gen: Generation;
  /** The attribution headers, as a flat list of names and values. */
  readonly attribution: readonly string[];
  /** `x-switchyard-cost-usd` from the usage, for a priced candidate; null when unpriced. */
  readonly cost: UsageHeadersOf | null;
}

const fixedParts = new WeakMap<GenerationCandidate, CandidateFixed>();

/** Built once per (generation, candidate), on the first request it serves. */
function fixedOf(gen: Generation, c: GenerationCandidate): CandidateFixed {
  const known = fixedParts.get(c);
  if (known?.gen === gen) return known;
  const attribution = [
    'x-switchyard-provider',
    c.provider.name,
    'x-switchyard-model',
    c.upstreamModel,
    'x-switchyard-candidate',
    c.stableId,
    'x-switchyard-generation',
    String(gen.number),
    // What the generation serves, comparable across replicas (its number is this process's own).
    'x-switchyard-topology',
    gen.digest,
  ];
  if (gen.overlay !== null) attribution.push('x-switchyard-revision', gen.overlay.revision);
  const cost = costOf(gen, c);
  const fixed: CandidateFixed = {
    gen,
    attribution: Object.freeze(attribution),
    cost,
  };
  fixedParts.set(c, fixed);
  return fixed;
}

/** `x-switchyard-cost-usd` from a response's usage at the generation's prices; null for an unpriced candidate. */
function costOf(gen: Generation, c: GenerationCandidate): UsageHeadersOf | null {
  const provider = c.provider.name;
  const model = c.upstreamModel;
  if (!isPriced(gen.pricing, provider, model)) return null;
  return (usage) => {
    if (usage === null) return null;
    const cost = costMicroUsd(gen.pricing, provider, model, usage);
    // A literal key (COST_HEADER's value): a computed one builds the object the slow way, per response.
    return cost === null ? null : { 'x-switchyard-cost-usd': (cost / 1e6).toFixed(6) };
  };
}

const NO_TRANSFORMS: readonly AnswerTransform[] = Object.freeze([]);

/**
 * The transforms in the client's protocol, after the upstream's own (its translation):
 * the cost, for a priced candidate, as a header on a buffered response and a trailer on a
 * stream (its cost is known only after its body). Unpriced, none: with no translation
 * either, the relay's pass-through path.
 */
function answerTransforms(fixed: CandidateFixed, request: ModelRequest, x: Exchange): readonly AnswerTransform[] {
  const stack = ownTransforms(fixed, request, x);
  // The response cache's capture comes last: it keeps what the client gets, once every transform has had its say.
  const capture = request.cache?.attempt() ?? null;
  return capture === null ? stack : [...stack, capture];
}

function ownTransforms(fixed: CandidateFixed, request: ModelRequest, x: Exchange): readonly AnswerTransform[] {
  const cost = fixed.cost === null ? null : costTransform(fixed.cost, request);
  // The guardrails' output phase, for a request whose input stage set one: before the cost, which only reads the usage.
  const guarded = request.guard === undefined ? null : outputTransform(request.guard, x);
  if (guarded === null) return cost === null ? NO_TRANSFORMS : [cost];
  const answer = request.turn?.answer.get() ?? null;
  // The store keeps the response the client was given (masked, restored, or filtered), not the upstream's.
  if (answer !== null) request.turn?.answer.set({ ...answer, response: () => guarded.given() });
  return cost === null ? [guarded] : [guarded, cost];
}

/**
 * The cost header: the header shows what settle bills by, so a usage settle would refuse
 * as insane (and bill as missing) gets no cost header, as a missing usage gets none.
 */
function costTransform(cost: UsageHeadersOf, request: ModelRequest): AnswerTransform {
  const bounds = usageBoundsOf(request);
  const saneCost: UsageHeadersOf = (usage) => (usage === null || !checkUsage(usage, bounds).ok ? null : cost(usage));
  return { usageHeaders: saneCost, trailers: request.stream ? COST_HEADER : undefined };
}

/** Whether a gateway limit put its own `x-ratelimit-*` headers on the response (names are at even places). */
function hasRateLimitHeaders(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) if ((headers[i] as string).startsWith('x-ratelimit-')) return true;
  return false;
}

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** With tracing off, a client's W3C trace context still reaches the provider, when it is well formed. */
function forwardTraceContext(x: Exchange, headers: Record<string, string>): void {
  const parent = x.req.headers.traceparent;
  if (typeof parent !== 'string' || !TRACEPARENT.test(parent)) return;
  headers.traceparent = parent;
  const state = x.req.headers.tracestate;
  if (typeof state === 'string' && state.length <= 512) headers.tracestate = state;
}

/**
 * The providers the request fell back from, for `x-switchyard-fallback`: never one outside
 * the caller's residency zones, which the client is not told exists (the access line lists it).
 */
function fallbackHeader(failures: readonly Failure[]): string {
  let header = '';
  for (const f of failures) {
    if (f.reason === 'residency') continue;
    header = header === '' ? f.provider : `${header},${f.provider}`;
  }
  return header;
}
