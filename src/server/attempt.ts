import { SwitchyardError } from '../errors.js';
import { isPriced } from '../governance/index.js';
import type { Generation, GenerationCandidate } from '../live/index.js';
import {
  anthropicMetering,
  anthropicRequestToCanonical,
  type CanonicalRequest,
  canonicalToAnthropicRequest,
  canonicalToOpenaiRequest,
  chatBodyFor,
  chatPathFor,
  embeddingsMetering,
  openaiRequestToCanonical,
  providerHeaders,
  type RelayResult,
  type RelayTransform,
  relay,
  translation,
  withStreamUsage,
} from '../providers/index.js';
import type { BreakerRegistry } from '../resilience/index.js';
import { COST_HEADER, costHeaders } from './admission.js';
import type { Exchange } from './exchange.js';

// One attempt at one candidate, as a small core (send it through the provider's pool and
// relay the answer) with behaviour wrapped around it, composed once at start-up: the
// credential check and the breaker's admission and bookkeeping. The failover loop in
// chat.ts only sees the result.

export interface AttemptRequest {
  readonly x: Exchange;
  /** The request body as received, and its parsed form (for a model rename). */
  readonly raw: Buffer;
  readonly parsed: Record<string, unknown>;
  readonly candidate: GenerationCandidate;
  /** 0: the breakers decide; 1: every breaker was open, so the chain is tried regardless. */
  readonly pass: 0 | 1;
}

export type AttemptResult = RelayResult | { readonly kind: 'skipped' };
export type Attempt = (a: AttemptRequest) => Promise<AttemptResult>;
export type Wrap = (next: Attempt) => Attempt;

const SKIPPED: Promise<AttemptResult> = Promise.resolve(Object.freeze({ kind: 'skipped' as const }));

/**
 * The core: the upstream call for this candidate, relayed to the client if it commits. A
 * request that cannot be translated to the candidate's protocol rejects with a 400 naming
 * the field, before anything is sent.
 */
export const sendToCandidate: Attempt = (a) => {
  try {
    return send(a);
  } catch (err) {
    return Promise.reject(err);
  }
};

function send(a: AttemptRequest): Promise<AttemptResult> {
  const { x, candidate: c } = a;
  const gen = x.gen as Generation;
  const provider = c.provider;
  const requestId = x.requestId;
  const upstream = upstreamRequestFor(a);
  const headers = providerHeaders(
    provider,
    c.credential ?? provider.credential,
    provider.headers,
    x.stream ? 'text/event-stream' : 'application/json',
    requestId,
    x.req.headers,
  );
  const attribution: Record<string, string> = { ...attributionOf(gen, c), 'x-switchyard-request-id': requestId };
  if (gen.overlay !== null) {
    // Grid provider-hop headers, so a provider behind a Grid hop can attribute the request.
    headers['x-ai-routing-candidate'] = c.stableId;
    headers['x-ai-routing-request-id'] = requestId;
    headers['x-ai-routing-revision'] = gen.overlay.revision;
  }
  if (x.failures.length > 0) attribution['x-switchyard-fallback'] = x.failures.map((f) => f.provider).join(',');
  // A gateway limit's headers replace the upstream's of the same names.
  if (x.limitHeaders !== null) Object.assign(attribution, x.limitHeaders);
  x.attemptStartedAt = performance.now();
  return relay({
    res: x.res,
    pool: provider.pool,
    providerName: provider.name,
    call: {
      method: 'POST',
      path: chatPathFor(provider, c.upstreamModel, x.operation),
      headers,
      body: upstream.body,
      timeoutMs: provider.timeoutMs,
    },
    responseHeaders: attribution,
    usageHeaders: costHeaders(x, c),
    // A stream's cost is known after its body: it goes out as a trailer.
    usageTrailers: x.stream && isPriced(gen.pricing, provider.name, c.upstreamModel) ? COST_HEADER : undefined,
    dropUsageEvent: upstream.dropUsageEvent,
    doneBy: doneBy(x, provider.requestTimeoutMs),
    streamMaxMs: x.stream ? (provider.streamMaxMs ?? undefined) : undefined,
    stopSlot: x,
    transform: upstream.transform,
  });
}

interface UpstreamRequest {
  readonly body: Buffer | string;
  readonly transform: RelayTransform | undefined;
  readonly dropUsageEvent: boolean;
}

/**
 * The body for this candidate and how its answer reaches the client. Same protocol: the
 * client's bytes with the model spliced in (an OpenAI stream also asks for usage; an
 * Anthropic answer is metered as it passes). Different protocols: through the canonical
 * form both ways (ADR-0011).
 */
function upstreamRequestFor(a: AttemptRequest): UpstreamRequest {
  const { x, candidate: c } = a;
  const to = c.provider.protocol;
  // The handler left only OpenAI-protocol candidates in an embeddings chain.
  if (x.operation === 'embeddings')
    return { body: chatBodyFor(a.raw, a.parsed, c.upstreamModel), transform: embeddingsMetering(), dropUsageEvent: false };
  if (to === x.protocol) {
    if (to === 'anthropic')
      return { body: chatBodyFor(a.raw, a.parsed, c.upstreamModel), transform: anthropicMetering(), dropUsageEvent: false };
    return { body: upstreamBody(a, c.upstreamModel), transform: undefined, dropUsageEvent: x.stream && !clientAskedUsage(a.parsed) };
  }
  x.canonical ??= canonicalOf(x.protocol, a.parsed);
  const request = { ...x.canonical, model: c.upstreamModel };
  const written = to === 'anthropic' ? canonicalToAnthropicRequest(request) : canonicalToOpenaiRequest(request);
  if (!written.ok) throw untranslatable(written, c);
  return {
    body: JSON.stringify(written.value),
    transform: translation(to, x.protocol, x.protocol === 'openai' && clientAskedUsage(a.parsed)),
    dropUsageEvent: false,
  };
}

function canonicalOf(protocol: 'openai' | 'anthropic', parsed: Record<string, unknown>): CanonicalRequest {
  const read = protocol === 'anthropic' ? anthropicRequestToCanonical(parsed) : openaiRequestToCanonical(parsed);
  if (!read.ok) throw new SwitchyardError('invalid_request', `${read.reason} (field ${read.path})`, read.path);
  return read.value;
}

function untranslatable(refusal: { readonly path: string; readonly reason: string }, c: GenerationCandidate): SwitchyardError {
  const message = `${refusal.reason} (field ${refusal.path}; provider "${c.provider.name}" speaks the ${c.provider.protocol} protocol)`;
  return new SwitchyardError('invalid_request', message, refusal.path);
}

/** The earlier of the provider's request_timeout_ms (a non-streamed response) and the route's deadline. */
function doneBy(x: Exchange, requestTimeoutMs: number | null): number | undefined {
  const own = requestTimeoutMs === null || x.stream ? null : performance.now() + requestTimeoutMs;
  const route = x.deadlineAt;
  if (own === null) return route ?? undefined;
  return route === null ? own : Math.min(own, route);
}

const attributions = new WeakMap<GenerationCandidate, { readonly gen: Generation; readonly headers: Readonly<Record<string, string>> }>();

/**
 * The attribution headers that are the same for every request a candidate serves in its
 * generation, built once per (generation, candidate).
 */
function attributionOf(gen: Generation, c: GenerationCandidate): Readonly<Record<string, string>> {
  const known = attributions.get(c);
  if (known?.gen === gen) return known.headers;
  const headers: Record<string, string> = {
    'x-switchyard-provider': c.provider.name,
    'x-switchyard-model': c.upstreamModel,
    'x-switchyard-candidate': c.stableId,
    'x-switchyard-generation': String(gen.number),
  };
  if (gen.overlay !== null) headers['x-switchyard-revision'] = gen.overlay.revision;
  const fixed = Object.freeze(headers);
  attributions.set(c, { gen, headers: fixed });
  return fixed;
}

/** The body for this candidate: its model name, and for a stream the usage it is billed on. */
function upstreamBody(a: AttemptRequest, upstreamModel: string): Buffer | string {
  const body = chatBodyFor(a.raw, a.parsed, upstreamModel);
  return a.x.stream ? withStreamUsage(body, a.parsed, upstreamModel) : body;
}

function clientAskedUsage(parsed: Record<string, unknown>): boolean {
  return (parsed.stream_options as { include_usage?: unknown } | null | undefined)?.include_usage === true;
}

/**
 * An overlay candidate whose credential could not be read fails over without calling
 * upstream. It is outside the breaker: a missing secret says nothing of the provider.
 */
export const withCredentialCheck: Wrap = (next) => (a) => {
  const problem = a.candidate.credentialProblem;
  if (problem === null) return next(a);
  return Promise.resolve({ kind: 'failed', reason: 'credential_unavailable', detail: problem });
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
  (a) => {
    const identity = a.candidate.identity;
    let probe = false;
    if (a.pass === 0) {
      const admission = breakers.admit(identity);
      if (admission === 'deny') return SKIPPED;
      probe = admission === 'probe';
    }
    return next(a).then(
      (r) => {
        if (r.kind === 'failed') breakers.recordFailure(identity, probe, r.retryAfterMs, r.reason);
        else if (r.kind === 'aborted') {
          if (probe) breakers.release(identity);
        } else if (r.kind === 'committed') {
          breakers.recordSuccess(identity);
          void r.finished.then((f) => {
            if (f.outcome === 'partial') breakers.recordFailure(identity, false, undefined, 'stream_cut');
          });
        }
        return r;
      },
      (err: unknown) => {
        // Refused before anything was sent (a request that cannot be translated): the probe is someone else's.
        if (probe) breakers.release(identity);
        throw err;
      },
    );
  };

/** Wraps the core in the given order: the first wrap is the outermost. */
export function composeAttempt(core: Attempt, ...wraps: readonly Wrap[]): Attempt {
  return wraps.reduceRight<Attempt>((next, wrap) => wrap(next), core);
}
