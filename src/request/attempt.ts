import { costMicroUsd, isPriced, type Usage } from '../governance/index.js';
import type { Generation, GenerationCandidate } from '../live/index.js';
import { providerHeaders, type RelayResult, type RelayTransform, relay, withUsageHeaders } from '../providers/index.js';
import type { BreakerRegistry } from '../resilience/index.js';
import { genAiOperation, genAiSystem, type Tracing } from '../telemetry/index.js';
import type { Exchange, ModelRequest } from './exchange.js';
import { operations } from './operations.js';

// One attempt at one candidate, as a small core (send it through the provider's pool and
// relay the answer) with behaviour wrapped around it, composed once at start-up: the
// credential check, the breaker's admission and bookkeeping, and tracing. Like undici's
// interceptors, an attempt takes a callback rather than returning a promise (the request
// path resolves no promise per attempt), and like undici's handlers the callback is never
// called before the attempt function has returned. The failover loop in serve-chain.ts
// only sees the result.

/** A request routed and admitted: what every attempt at its candidates shares. */
export interface AdmittedRequest {
  readonly x: Exchange;
  readonly request: ModelRequest;
  /** The gateway limits' headers for the response (`x-ratelimit-*`, the budget warning), as names and values in turn; null = none. */
  readonly limitHeaders: readonly string[] | null;
  /** performance.now() by which the route's deadline_ms has passed, across every attempt; null = none. */
  readonly deadlineAt: number | null;
  /** Called with each response id an answer carries and the candidate that made it (the Responses API). */
  readonly onResponseId: ((responseId: string, c: GenerationCandidate) => void) | null;
}

export interface AttemptRequest {
  readonly admitted: AdmittedRequest;
  readonly candidate: GenerationCandidate;
  /** 0: the breakers decide; 1: every breaker was open, so the chain is tried regardless. */
  readonly pass: 0 | 1;
  /** This attempt's `traceparent` (and `tracestate`) for the upstream request, from its span; null = none. */
  readonly trace: Readonly<Record<string, string>> | null;
}

export type AttemptResult = RelayResult | { readonly kind: 'skipped' };
/** Called exactly once per attempt, and never before the attempt function has returned. */
export type AttemptCallback = (r: AttemptResult) => void;
/**
 * Tries one candidate and reports how it ended through `done`. A request that cannot be
 * sent to this candidate (it cannot be translated to its protocol) throws before anything
 * is sent, and `done` is then not called.
 */
export type Attempt = (a: AttemptRequest, done: AttemptCallback) => void;
export type Wrap = (next: Attempt) => Attempt;

const SKIPPED: AttemptResult = Object.freeze({ kind: 'skipped' as const });

/** Reports a result known at once, after the attempt function has returned. */
function later(done: AttemptCallback, r: AttemptResult): void {
  queueMicrotask(() => done(r));
}

export const COST_HEADER = 'x-switchyard-cost-usd';

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
  const upstream = operations[request.operation].upstream(request, c, onResponseId === null ? null : (id) => onResponseId(id, c));
  const headers = providerHeaders(
    provider,
    c.credential ?? provider.credential,
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
  if (x.failures.length > 0) own.push('x-switchyard-fallback', x.failures.map((f) => f.provider).join(','));
  // A gateway limit's headers replace the upstream's of the same names.
  if (limits !== null) for (const v of limits) own.push(v);
  x.attemptStartedAt = performance.now();
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
        attribution: attributionOf(gen, c),
        own,
        expose: provider.exposeHeaders,
        limitsReplaced: limits !== null && hasRateLimitHeaders(limits),
      },
      transform: withCost(upstream.transform, gen, c, request.stream),
      doneBy: doneBy(a.admitted, provider.requestTimeoutMs),
      streamMaxMs: request.stream ? (provider.streamMaxMs ?? undefined) : undefined,
      stopSlot: x.running,
    },
    done,
  );
};

/**
 * The upstream's transform, with `x-switchyard-cost-usd` from the usage when the candidate
 * is priced: a header on a buffered response, a trailer on a stream (its cost is known only
 * after its body). Unpriced, the transform is left as it is (none: the pass-through).
 */
function withCost(inner: RelayTransform | undefined, gen: Generation, c: GenerationCandidate, stream: boolean): RelayTransform | undefined {
  const provider = c.provider.name;
  const model = c.upstreamModel;
  if (!isPriced(gen.pricing, provider, model)) return inner;
  const costHeaders = (usage: Usage | null): Record<string, string> | null => {
    if (usage === null) return null;
    const cost = costMicroUsd(gen.pricing, provider, model, usage);
    return cost === null ? null : { [COST_HEADER]: (cost / 1e6).toFixed(6) };
  };
  return withUsageHeaders(inner, costHeaders, stream ? COST_HEADER : undefined);
}

/** The earlier of the provider's request_timeout_ms (a non-streamed response) and the route's deadline. */
function doneBy(admitted: AdmittedRequest, requestTimeoutMs: number | null): number | undefined {
  const own = requestTimeoutMs === null || admitted.request.stream ? null : performance.now() + requestTimeoutMs;
  const route = admitted.deadlineAt;
  if (own === null) return route ?? undefined;
  return route === null ? own : Math.min(own, route);
}

const attributions = new WeakMap<GenerationCandidate, { readonly gen: Generation; readonly headers: readonly string[] }>();

/**
 * The attribution headers that are the same for every request a candidate serves in its
 * generation, as a flat list of names and values, built once per (generation, candidate).
 */
function attributionOf(gen: Generation, c: GenerationCandidate): readonly string[] {
  const known = attributions.get(c);
  if (known?.gen === gen) return known.headers;
  const headers = [
    'x-switchyard-provider',
    c.provider.name,
    'x-switchyard-model',
    c.upstreamModel,
    'x-switchyard-candidate',
    c.stableId,
    'x-switchyard-generation',
    String(gen.number),
  ];
  if (gen.overlay !== null) headers.push('x-switchyard-revision', gen.overlay.revision);
  const fixed = Object.freeze(headers);
  attributions.set(c, { gen, headers: fixed });
  return fixed;
}

/**
 * An overlay candidate whose credential could not be read fails over without calling
 * upstream. It is outside the breaker: a missing secret says nothing of the provider.
 */
export const withCredentialCheck: Wrap = (next) => (a, done) => {
  const problem = a.candidate.credentialProblem;
  if (problem === null) next(a, done);
  else later(done, { kind: 'failed', reason: 'credential_unavailable', detail: problem });
};

/**
 * The breaker of the candidate's provider identity: an open breaker skips the candidate
 * (on the first pass), a half-open one lets exactly one probe through. The outcome is
 * recorded when it is known: a failure before the first byte, success when the response
 * commits (so a long stream does not hold a probe), and a failure after all if the
 * stream is later cut. A probe whose client left is released for another.
 */
export const withBreaker =
  (breakers: BreakerRegistry): Wrap =>
  (next) =>
  (a, done) => {
    const identity = a.candidate.identity;
    let probe = false;
    if (a.pass === 0) {
      const admission = breakers.admit(identity);
      if (admission === 'deny') {
        later(done, SKIPPED);
        return;
      }
      probe = admission === 'probe';
    }
    try {
      next(a, (r) => {
        if (r.kind === 'failed') breakers.recordFailure(identity, probe, r.retryAfterMs, r.reason);
        else if (r.kind === 'aborted') {
          if (probe) breakers.release(identity);
        } else if (r.kind === 'committed') {
          breakers.recordSuccess(identity);
          r.onFinished((f) => {
            if (f.outcome === 'partial') breakers.recordFailure(identity, false, undefined, 'stream_cut');
          });
        }
        done(r);
      });
    } catch (err) {
      // Refused before anything was sent (a request that cannot be translated): the probe is someone else's.
      if (probe) breakers.release(identity);
      throw err;
    }
  };

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

const addresses = new WeakMap<object, { readonly 'server.address': string; readonly 'server.port': number }>();

/** `server.address` and `server.port` of a provider's base URL, parsed once per provider runtime. */
function serverAttributes(provider: GenerationCandidate['provider']): {
  readonly 'server.address': string;
  readonly 'server.port': number;
} {
  let known = addresses.get(provider);
  if (known === undefined) {
    const url = new URL(provider.baseUrl);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    known = { 'server.address': url.hostname, 'server.port': port };
    addresses.set(provider, known);
  }
  return known;
}

/**
 * One client span per upstream call, a child of the request's span, carrying its trace
 * context upstream. It ends when the attempt's outcome is known: a failure before the
 * first byte, or, for a committed response, when its body has been relayed (with the usage).
 */
export const withTracing =
  (tracing: Tracing): Wrap =>
  (next) =>
  (a, done) => {
    const { x, request } = a.admitted;
    const c = a.candidate;
    if (x.span === null) {
      next(a, done);
      return;
    }
    const span = tracing.startClient(x.span, {
      operation: genAiOperation(request.operation),
      model: c.upstreamModel,
      system: genAiSystem(c.provider.type),
      attributes: { 'switchyard.provider': c.provider.name, 'switchyard.candidate': c.stableId, ...serverAttributes(c.provider) },
    });
    const trace: Record<string, string> = {};
    tracing.inject(span, trace);
    try {
      next({ admitted: a.admitted, candidate: c, pass: a.pass, trace }, (r) => {
        if (r.kind === 'failed') tracing.fail(span, r.reason, r.detail);
        else if (r.kind === 'aborted') tracing.fail(span, 'client_closed', 'the client left before the response began');
        else if (r.kind === 'committed') {
          span.setAttribute('http.response.status_code', r.status);
          r.onFinished((f) => {
            if (f.usage !== null)
              span.setAttributes({ 'gen_ai.usage.input_tokens': f.usage.inputTokens, 'gen_ai.usage.output_tokens': f.usage.outputTokens });
            if (f.outcome === 'partial') tracing.fail(span, 'stream_interrupted', 'the response was cut after it began');
            else span.end();
          });
        } else span.end();
        done(r);
      });
    } catch (err) {
      tracing.fail(span, 'invalid_request', err instanceof Error ? err.message : String(err));
      throw err;
    }
  };

/** Wraps the core in the given order: the first wrap is the outermost. */
export function composeAttempt(core: Attempt, ...wraps: readonly Wrap[]): Attempt {
  return wraps.reduceRight<Attempt>((next, wrap) => wrap(next), core);
}
