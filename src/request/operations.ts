import { SwitchyardError } from '../errors.js';
import * as governance from '../governance/index.js';
import type { GenerationCandidate } from '../live/index.js';
import {
  anthropicMetering,
  anthropicRequestToCanonical,
  type CanonicalRequest,
  type ChatProtocol,
  chatBodyFor,
  embeddingsMetering,
  type FirstMember,
  firstMember,
  type Operation,
  openaiRequestToCanonical,
  type Refusal,
  type RelayTransform,
  responsesEcho,
  responsesMetering,
  responsesRequestToCanonical,
  responsesTranslation,
  restatedResponses,
  servesOperation,
  type Translation,
  translation,
  type WrittenRequest,
  withFirstMember,
  withoutUsageEvent,
  withStreamUsage,
  withTopLevelMember,
} from '../providers/index.js';
import { newId } from '../responses/index.js';
import {
  type ChatRequest,
  parseChatRequest,
  parseCompletionsRequest,
  parseCountTokensRequest,
  parseEmbeddingsRequest,
  parseMessagesRequest,
  parseResponsesRequest,
} from './chat-request.js';
import type { ModelRequest } from './exchange.js';
import { upstreamInput } from './responses/items.js';
import type { ResponsesTurn } from './responses/turn.js';

// What differs between the model endpoints, in one table: how a request is parsed, what
// the pre-check reserves for, what goes upstream for a candidate (method, path, body) with
// how its answer is relayed and metered, and which of the request path's steps apply (its
// request stages are in stages.ts).
// Everything else (routing, governance, failover, breakers, settle, the record) is the one
// request path of serve-model.ts and serve-chain.ts.

/** The upstream call for one candidate, and how its answer reaches the client. */
export interface UpstreamRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly body: Buffer | string | null;
  /** What the relay does beyond passing the answer's bytes on; undefined = nothing. */
  readonly transform: RelayTransform | undefined;
  /** Request fields a translation dropped or clamped, for `x-switchyard-dropped` and the access line; null = none. */
  readonly dropped?: readonly string[] | null;
}

/**
 * This candidate cannot take the request: a field asks for what its protocol cannot give
 * (or, under `translation: strict`, would be dropped). Thrown before anything is sent; the
 * chain moves on, and answers 400 naming the field only when no candidate could take it.
 */
export class CandidateUnable extends Error {
  /** The request field, in OpenAI's `param` notation. */
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

/** `routing.routes.<model>.translation`, else `routing.translation`: whether a field may be dropped to reach a candidate. */
export type TranslationMode = 'lenient' | 'strict';

/** Called with each response id an answer carries (the Responses API). */
export type OnResponseId = (responseId: string) => void;

export interface OperationSpec {
  /** The client endpoint, as refusals name it. */
  readonly endpoint: string;
  parse(raw: Buffer, protocol: ChatProtocol): ChatRequest;
  /** The output cap the pre-check reserves for; null = the policy's default. */
  maxTokens(parsed: Record<string, unknown>): number | null;
  /**
   * What goes upstream for this candidate. Throws, before anything is sent, a 400 naming
   * the field when the request is malformed, and CandidateUnable when this candidate's
   * protocol cannot express it.
   */
  upstream(request: ModelRequest, c: GenerationCandidate, onResponseId: OnResponseId | null, outputCap: number | null): UpstreamRequest;
  /** Its answers carry response ids whose state only the provider that made them holds. */
  readonly remembersResponses: boolean;
  /**
   * A candidate whose provider does not serve this operation itself is sent it translated
   * when it serves this one (the Responses API, to a chat endpoint); null = never.
   */
  readonly translatedTo: Operation | null;
  /** Admitted against the caller's limits and billed (the pre-check and settle); false = free. */
  readonly metered: boolean;
  /** Its outcomes feed and obey the provider's breaker; false = a call that says little of serving health. */
  readonly guarded: boolean;
}

export const operations: Readonly<Record<Operation, OperationSpec>> = {
  chat: {
    endpoint: 'POST /v1/chat/completions',
    parse: (raw, protocol) => (protocol === 'anthropic' ? parseMessagesRequest(raw) : parseChatRequest(raw)),
    maxTokens: (parsed) => cap(parsed.max_completion_tokens ?? parsed.max_tokens),
    upstream: chatUpstream,
    remembersResponses: false,
    translatedTo: null,
    metered: true,
    guarded: true,
  },
  embeddings: {
    endpoint: 'POST /v1/embeddings',
    parse: parseEmbeddingsRequest,
    maxTokens: () => 0,
    upstream: (r, c) => post(r, c, chatBodyFor(r.raw, r.parsed, c.upstreamModel), embeddingsMetering()),
    remembersResponses: false,
    translatedTo: null,
    metered: true,
    guarded: true,
  },
  completions: {
    endpoint: 'POST /v1/completions',
    parse: parseCompletionsRequest,
    maxTokens: (parsed) => cap(parsed.max_tokens),
    // Billed like a chat completion: the same usage fields, and a stream asked for its usage.
    upstream: (r, c, _id, outputCap) =>
      post(
        r,
        c,
        capped(upstreamBody(r, c), r, 'max_tokens', capFor(r, c, outputCap)),
        r.stream && !clientAskedUsage(r.parsed) ? withoutUsageEvent() : undefined,
      ),
    remembersResponses: false,
    translatedTo: null,
    metered: true,
    guarded: true,
  },
  responses: {
    endpoint: 'POST /v1/responses',
    parse: parseResponsesRequest,
    maxTokens: (parsed) => cap(parsed.max_output_tokens),
    upstream: responsesUpstream,
    remembersResponses: true,
    translatedTo: 'chat',
    metered: true,
    guarded: true,
  },
  count_tokens: {
    endpoint: 'POST /v1/messages/count_tokens',
    parse: parseCountTokensRequest,
    maxTokens: () => 0,
    upstream: (r, c) => post(r, c, chatBodyFor(r.raw, r.parsed, c.upstreamModel), undefined),
    remembersResponses: false,
    translatedTo: null,
    // Counting is free, and a count says little about serving health.
    metered: false,
    guarded: false,
  },
};

function post(r: ModelRequest, c: GenerationCandidate, body: Buffer | string, transform: RelayTransform | undefined): UpstreamRequest {
  return { method: 'POST', path: c.provider.wire.path(c.upstreamModel, r.operation, r.stream, c.protocol), body, transform };
}

/**
 * A new response, or a stored one's GET / DELETE kept by the provider that made it (the
 * legacy pinning: neither metered). A provider that speaks the Responses API is sent the
 * client's bytes when the turn needs nothing from the gateway's store, else a body the
 * gateway writes with the whole conversation in `input`; any other is sent the turn
 * translated through the canonical form, and its answer written back as a Response.
 */
function responsesUpstream(
  r: ModelRequest,
  c: GenerationCandidate,
  onResponseId: OnResponseId | null,
  outputCap: number | null,
): UpstreamRequest {
  const stored = r.stored;
  if (stored !== null) {
    const path = c.provider.wire.storedResponsePath(stored.id, stored.query);
    return { method: stored.method, path, body: null, transform: undefined };
  }
  const turn = r.turn;
  const cap = capFor(r, c, outputCap);
  if (speaksResponses(c)) {
    const metering = responsesMetering(onResponseId ?? ignoreId);
    if (turn === undefined || !turn.rewritten) {
      turn?.answer.set({ candidate: c, origin: c.identity, response: () => metering.response });
      return post(r, c, capped(chatBodyFor(r.raw, r.parsed, c.upstreamModel), r, 'max_output_tokens', cap), metering);
    }
    // The answer says what the client asked, not what the provider was sent.
    const echo = responsesEcho(r.parsed);
    const restated = restatedResponses(metering, { previous_response_id: echo.previous_response_id, conversation: echo.conversation });
    turn.answer.set({ candidate: c, origin: c.identity, response: () => restated.response });
    const { body, reasoningLeftOut } = rewrittenResponsesBody(r, c, turn, cap);
    const upstream = post(r, c, JSON.stringify(body), restated);
    return reasoningLeftOut ? { ...upstream, dropped: REASONING_LEFT_OUT } : upstream;
  }
  if (turn === undefined) throw new CandidateUnable('model', `provider "${c.provider.name}" cannot serve a stored response`);
  const transform = responsesTranslation(
    c.protocol,
    {
      id: turn.responseId,
      createdAt: turn.createdAt,
      model: c.upstreamModel,
      echo: responsesEcho(r.parsed),
      newItemId: (prefix) => newId(prefix),
    },
    { model: c.upstreamModel, maxEventBytes: c.provider.maxEventBytes },
  );
  turn.answer.set({ candidate: c, response: () => transform.response });
  return translatedUpstream(r, c, responsesCanonicalOf(r, turn, c), outputCap, 'chat', transform);
}

/** The candidate's provider serves the Responses API itself (its protocol is OpenAI's). */
function speaksResponses(c: GenerationCandidate): boolean {
  return c.protocol === 'openai' && servesOperation(c.provider.type, 'responses');
}

/**
 * The client's body with the conversation the gateway holds in `input` (the turns before,
 * then this one's), and none of the state only the gateway knows: no previous response or
 * conversation id the provider has never seen, and no item ids it did not make.
 */
function rewrittenResponsesBody(
  r: ModelRequest,
  c: GenerationCandidate,
  turn: ResponsesTurn,
  cap: number | null,
): { readonly body: Record<string, unknown>; readonly reasoningLeftOut: boolean } {
  // Reasoning this provider wrote and keeps goes back to it by reference.
  const input = upstreamInput([...turn.history, ...turn.input], undefined, (item) => turn.heldBy.get(item.id) === c.identity);
  const body: Record<string, unknown> = { ...r.parsed, model: c.upstreamModel, input: input.items };
  delete body.previous_response_id;
  delete body.conversation;
  if (cap !== null && body.max_output_tokens === undefined) body.max_output_tokens = cap;
  return { body, reasoningLeftOut: input.reasoningLeftOut };
}

/** Reasoning without the provider's encrypted content cannot be sent back to it: the answer says so. */
const REASONING_LEFT_OUT: readonly string[] = Object.freeze(['input.reasoning']);

/** Each request's canonical form from its turn, read once. */
const responsesForms = new WeakMap<ModelRequest, Translation<CanonicalRequest>>();

function responsesCanonicalOf(r: ModelRequest, turn: ResponsesTurn, c: GenerationCandidate): CanonicalRequest {
  let read = responsesForms.get(r);
  if (read === undefined) {
    read = responsesRequestToCanonical(r.parsed, [...turn.history, ...turn.input]);
    responsesForms.set(r, read);
  }
  if (!read.ok) throw refusalError(read, c);
  return read.value;
}

const ignoreId: OnResponseId = () => undefined;

/** An output cap the request set, when it is a usable number. */
function cap(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : null;
}

/**
 * A chat request for this candidate. Same protocol: the client's bytes with the model
 * spliced in (an OpenAI stream also asks for usage; an Anthropic answer is metered as it
 * passes). Different protocols: through the canonical form both ways (ADR-0011).
 */
function chatUpstream(r: ModelRequest, c: GenerationCandidate, _id: OnResponseId | null, outputCap: number | null): UpstreamRequest {
  const to = c.protocol;
  if (to === r.protocol) {
    // An Anthropic request always carries its own max_tokens (the Messages API requires it).
    if (to === 'anthropic') return post(r, c, anthropicBodyFor(r, c), anthropicMetering());
    const body = capped(upstreamBody(r, c), r, 'max_completion_tokens', capFor(r, c, outputCap));
    // The gateway asked an OpenAI stream for its usage: a client that did not gets no usage event.
    return post(r, c, body, r.stream && !clientAskedUsage(r.parsed) ? withoutUsageEvent() : undefined);
  }
  const transform = translation(to, r.protocol, r.protocol === 'openai' && clientAskedUsage(r.parsed), {
    model: c.upstreamModel,
    maxEventBytes: c.provider.maxEventBytes,
  });
  return translatedUpstream(r, c, canonicalOf(r, c), outputCap, 'chat', transform);
}

/**
 * A request in the canonical form, written for the candidate's protocol, its answer
 * translated back by `transform`: the fields the translation dropped are listed, or, under
 * `translation: strict`, rule the candidate out.
 */
function translatedUpstream(
  r: ModelRequest,
  c: GenerationCandidate,
  canonical: CanonicalRequest,
  outputCap: number | null,
  operation: Operation,
  transform: RelayTransform,
): UpstreamRequest {
  const to = c.protocol;
  const request = {
    ...canonical,
    model: c.upstreamModel,
    maxOutputTokens: canonical.maxOutputTokens ?? capFor(r, c, outputCap) ?? undefined,
  };
  // Anthropic needs a max_tokens: without the client's or a cap, the most the pre-check
  // reserved for this model (its max_output_tokens, else default_max_tokens).
  const written = c.provider.wire.write(request, to, {
    client: r.protocol,
    defaultMaxTokens: () =>
      governance.modelOutputLimit(r.gen.pricing, c.provider.name, c.upstreamModel) ?? r.gen.config.governance.default_max_tokens,
  });
  if (!written.ok) throw refusalError(written, c);
  const dropped = droppedFor(canonical.dropped, written.value);
  if (dropped.length > 0 && translationMode(r) === 'strict') {
    const field = dropped[0] as string;
    throw new CandidateUnable(
      field,
      `${field} would be dropped translating to provider "${c.provider.name}" (${c.protocol} protocol), and the route's translation is strict`,
    );
  }
  // Some name the model, and whether the answer streams, in the path, not the body.
  const path = c.provider.wire.path(c.upstreamModel, operation, r.stream, c.protocol);
  const body = JSON.stringify(written.value.body);
  return { method: 'POST', path, body, transform, dropped: dropped.length === 0 ? null : dropped };
}

/**
 * An Anthropic client's body for an Anthropic-protocol candidate: its own bytes with the
 * model spliced in, or the body the provider's wire makes of it when it takes another.
 */
function anthropicBodyFor(r: ModelRequest, c: GenerationCandidate): Buffer | string {
  const own = c.provider.wire.ownBody(r.parsed, c.protocol);
  return own === null ? chatBodyFor(r.raw, r.parsed, c.upstreamModel) : JSON.stringify(own);
}

/** What the reader dropped, less what the writer carried after all, with what the writer dropped. */
function droppedFor(read: readonly string[], written: WrittenRequest): readonly string[] {
  const carried = written.carried;
  const kept = carried === undefined ? read : read.filter((f) => !carried.includes(f));
  return kept.length === 0 ? written.dropped : [...new Set([...kept, ...written.dropped])];
}

/** The route's translation mode: its own `translation`, else the gateway's `routing.translation` (overlay routes follow it). */
function translationMode(r: ModelRequest): TranslationMode {
  const routing = r.gen.config.routing;
  return routing.routes?.[r.model]?.translation ?? routing.translation;
}

/** Each request's canonical form, read once, when the first candidate of another protocol needs it. */
const canonicalForms = new WeakMap<ModelRequest, Translation<CanonicalRequest>>();

function canonicalOf(r: ModelRequest, c: GenerationCandidate): CanonicalRequest {
  let read = canonicalForms.get(r);
  if (read === undefined) {
    read = r.protocol === 'anthropic' ? anthropicRequestToCanonical(r.parsed) : openaiRequestToCanonical(r.parsed);
    canonicalForms.set(r, read);
  }
  if (!read.ok) throw refusalError(read, c);
  return read.value;
}

/** A malformed field is the client's 400 whoever serves it; one the candidate's protocol cannot express only rules the candidate out. */
function refusalError(refusal: Refusal, c: GenerationCandidate): Error {
  if (refusal.kind === 'invalid') return new SwitchyardError('invalid_request', `${refusal.reason} (field ${refusal.path})`, refusal.path);
  const message = `${refusal.reason} (field ${refusal.path}; provider "${c.provider.name}" speaks the ${c.protocol} protocol)`;
  return new CandidateUnable(refusal.path, message);
}

/**
 * The cap to send this candidate: the one reserved for, lowered to the model's own
 * `max_output_tokens` when the pricing table gives a smaller one (the reservation covers the
 * route's most generous target; a model is never asked for more than it can write, which
 * some providers refuse with a 400).
 */
function capFor(r: ModelRequest, c: GenerationCandidate, outputCap: number | null): number | null {
  if (outputCap === null) return null;
  const own = governance.modelOutputLimit(r.gen.pricing, c.provider.name, c.upstreamModel);
  return own !== undefined && own < outputCap ? own : outputCap;
}

/**
 * The body with the output cap the pre-check reserved for, when one is to be sent
 * (`governance.cap_output`: the client gave none and a limit applies), spliced in as the
 * operation's field; otherwise the body as it is.
 */
function capped(body: Buffer, r: ModelRequest, field: string, outputCap: number | null): Buffer {
  if (outputCap === null) return body;
  // The usual case: the client sent no such field (the parsed body says so, and a duplicate
  // top-level key was refused at the edge), so it goes first without a scan of the body.
  if (!Object.hasOwn(r.parsed, field)) return withFirstMember(body, capMember(field, outputCap)) ?? body;
  return withTopLevelMember(body, field, String(outputCap)) ?? body;
}

/** The cap's bytes, built once per field and value (a generation sends few distinct caps). */
function capMember(field: string, cap: number): FirstMember {
  let byCap = capMembers.get(field);
  if (byCap === undefined) {
    byCap = new Map();
    capMembers.set(field, byCap);
  }
  let member = byCap.get(cap);
  if (member === undefined) {
    if (byCap.size >= 256) byCap.clear();
    member = firstMember(field, String(cap));
    byCap.set(cap, member);
  }
  return member;
}

/** By field (three of them), then by cap. */
const capMembers = new Map<string, Map<number, FirstMember>>();

/** The body for this candidate: its model name, and for a stream the usage it is billed on. */
function upstreamBody(r: ModelRequest, c: GenerationCandidate): Buffer {
  const model = c.upstreamModel;
  return r.stream ? withStreamUsage(r.raw, r.parsed, model) : chatBodyFor(r.raw, r.parsed, model);
}

function clientAskedUsage(parsed: Record<string, unknown>): boolean {
  return (parsed.stream_options as { include_usage?: unknown } | null | undefined)?.include_usage === true;
}
