import { SwitchyardError } from '../errors.js';
import type { GenerationCandidate } from '../live/index.js';
import {
  anthropicMetering,
  anthropicRequestToCanonical,
  type CanonicalRequest,
  type ChatProtocol,
  canonicalToAnthropicRequest,
  canonicalToOpenaiRequest,
  chatBodyFor,
  embeddingsMetering,
  type Operation,
  openaiRequestToCanonical,
  type RelayTransform,
  responsesMetering,
  storedResponsePath,
  translation,
  upstreamPathFor,
  withStreamUsage,
} from '../providers/index.js';
import type { AttemptRequest } from './attempt.js';
import {
  type ChatRequest,
  parseChatRequest,
  parseCompletionsRequest,
  parseEmbeddingsRequest,
  parseMessagesRequest,
  parseResponsesRequest,
} from './chat-request.js';

// What differs between the model endpoints, in one table: how a request is parsed, what
// the pre-check reserves for, and what goes upstream for a candidate (method, path, body)
// with how its answer is relayed and metered. Everything else (routing, governance,
// failover, breakers, settle, the record) is the one request path of chat.ts.

/** The upstream call for one candidate, and how its answer reaches the client. */
export interface UpstreamRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly body: Buffer | string | null;
  readonly transform: RelayTransform | undefined;
  /** A stream whose client did not ask for usage: its usage-only event is read, not relayed. */
  readonly dropUsageEvent: boolean;
}

export interface OperationSpec {
  /** The client endpoint, as refusals name it. */
  readonly endpoint: string;
  parse(raw: Buffer, protocol: ChatProtocol): ChatRequest;
  /** The output cap the pre-check reserves for; null = the policy's default. */
  maxTokens(parsed: Record<string, unknown>): number | null;
  upstream(a: AttemptRequest): UpstreamRequest;
  /** Its answers carry response ids whose state only the provider that made them holds. */
  readonly remembersResponses: boolean;
}

export const operations: Readonly<Record<Operation, OperationSpec>> = {
  chat: {
    endpoint: 'POST /v1/chat/completions',
    parse: (raw, protocol) => (protocol === 'anthropic' ? parseMessagesRequest(raw) : parseChatRequest(raw)),
    maxTokens: (parsed) => cap(parsed.max_completion_tokens ?? parsed.max_tokens),
    upstream: chatUpstream,
    remembersResponses: false,
  },
  embeddings: {
    endpoint: 'POST /v1/embeddings',
    parse: parseEmbeddingsRequest,
    maxTokens: () => 0,
    upstream: (a) => post(a, chatBodyFor(a.raw, a.parsed, a.candidate.upstreamModel), embeddingsMetering()),
    remembersResponses: false,
  },
  completions: {
    endpoint: 'POST /v1/completions',
    parse: parseCompletionsRequest,
    maxTokens: (parsed) => cap(parsed.max_tokens),
    // Billed like a chat completion: the same usage fields, and a stream asked for its usage.
    upstream: (a) => post(a, upstreamBody(a), undefined, a.x.stream && !clientAskedUsage(a.parsed)),
    remembersResponses: false,
  },
  responses: {
    endpoint: 'POST /v1/responses',
    parse: parseResponsesRequest,
    maxTokens: (parsed) => cap(parsed.max_output_tokens),
    upstream: responsesUpstream,
    remembersResponses: true,
  },
};

function post(a: AttemptRequest, body: Buffer | string, transform: RelayTransform | undefined, dropUsageEvent = false): UpstreamRequest {
  const c = a.candidate;
  return { method: 'POST', path: upstreamPathFor(c.provider, c.upstreamModel, a.x.operation), body, transform, dropUsageEvent };
}

/** A new response (metered, its id remembered), or a stored one's GET / DELETE (neither). */
function responsesUpstream(a: AttemptRequest): UpstreamRequest {
  const { x, candidate: c } = a;
  const stored = x.storedResponse;
  if (stored !== null) {
    const path = storedResponsePath(c.provider, stored.id, stored.query);
    return { method: stored.method, path, body: null, transform: undefined, dropUsageEvent: false };
  }
  const remember = x.onResponseId;
  const metering = responsesMetering((id) => remember?.(id, c));
  return post(a, chatBodyFor(a.raw, a.parsed, c.upstreamModel), metering);
}

/** An output cap the request set, when it is a usable number. */
function cap(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : null;
}

/**
 * A chat request for this candidate. Same protocol: the client's bytes with the model
 * spliced in (an OpenAI stream also asks for usage; an Anthropic answer is metered as it
 * passes). Different protocols: through the canonical form both ways (ADR-0011).
 */
function chatUpstream(a: AttemptRequest): UpstreamRequest {
  const { x, candidate: c } = a;
  const to = c.provider.protocol;
  if (to === x.protocol) {
    if (to === 'anthropic') return post(a, chatBodyFor(a.raw, a.parsed, c.upstreamModel), anthropicMetering());
    return post(a, upstreamBody(a), undefined, x.stream && !clientAskedUsage(a.parsed));
  }
  x.canonical ??= canonicalOf(x.protocol, a.parsed);
  const request = { ...x.canonical, model: c.upstreamModel };
  const written = to === 'anthropic' ? canonicalToAnthropicRequest(request) : canonicalToOpenaiRequest(request);
  if (!written.ok) throw untranslatable(written, c);
  return post(a, JSON.stringify(written.value), translation(to, x.protocol, x.protocol === 'openai' && clientAskedUsage(a.parsed)));
}

function canonicalOf(protocol: ChatProtocol, parsed: Record<string, unknown>): CanonicalRequest {
  const read = protocol === 'anthropic' ? anthropicRequestToCanonical(parsed) : openaiRequestToCanonical(parsed);
  if (!read.ok) throw new SwitchyardError('invalid_request', `${read.reason} (field ${read.path})`, read.path);
  return read.value;
}

function untranslatable(refusal: { readonly path: string; readonly reason: string }, c: GenerationCandidate): SwitchyardError {
  const message = `${refusal.reason} (field ${refusal.path}; provider "${c.provider.name}" speaks the ${c.provider.protocol} protocol)`;
  return new SwitchyardError('invalid_request', message, refusal.path);
}

/** The body for this candidate: its model name, and for a stream the usage it is billed on. */
function upstreamBody(a: AttemptRequest): Buffer | string {
  const model = a.candidate.upstreamModel;
  const body = chatBodyFor(a.raw, a.parsed, model);
  return a.x.stream ? withStreamUsage(body, a.parsed, model) : body;
}

function clientAskedUsage(parsed: Record<string, unknown>): boolean {
  return (parsed.stream_options as { include_usage?: unknown } | null | undefined)?.include_usage === true;
}
