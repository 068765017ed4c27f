import { anthropicErrorBody, errorCatalog } from '../errors.js';
import { AnthropicUsageReader } from './canonical/anthropic-usage-reader.js';
import { bedrockResponseToCanonical } from './canonical/bedrock-response.js';
import { geminiResponseToCanonical } from './canonical/gemini-response.js';
import { usageFromGemini } from './canonical/gemini-wire.js';
import {
  anthropicResponseToCanonical,
  canonicalToAnthropicResponse,
  canonicalToOpenaiResponse,
  openaiResponseToCanonical,
} from './canonical/responses.js';
import { canonicalToResponsesObject, type ResponsesShape } from './canonical/responses-object.js';
import { ResponsesEventEncoder } from './canonical/responses-stream.js';
import { StreamTranslator } from './canonical/stream-translator.js';
import type { CanonicalResponse, ChatProtocol, ProviderProtocol, Translation } from './canonical/types.js';
import { isRecord, jsonRecord } from './canonical/types.js';
import { anthropicErrorBodyFor, openaiErrorBodyFor, translateErrorResponse } from './canonical/upstream-error.js';
import { usageFromAnthropic, usageFromBedrock, usageFromOpenai, usageFromResponses } from './canonical/usage.js';
import { topLevelValue } from './json-splice.js';
import type { TokenUsage } from './metering.js';
import { ResponsesStreamReader } from './responses-stream-reader.js';

// What the relay does to a response beyond relaying its bytes as they come: a translation
// between protocols (ADR-0011), a response relayed as it is but metered by reading another
// usage shape, a stream with an event taken out, headers computed from the usage. The
// first three are the first layer of an answer's transform stack (transform-stack.ts),
// whose later layers work in the client's protocol. An OpenAI response to an OpenAI client
// with none of these has no transform at all and keeps the relay's pass-through path.

/** Why a stream that started ends in an error event: it broke or was ended, or one of its events was over the bound. */
export type StreamFailureCode = 'stream_interrupted' | 'stream_event_too_large';

export interface PlainAnswer {
  readonly status: number;
  readonly body: Buffer | string;
  readonly usage: TokenUsage | null;
}

/**
 * Every part is optional: a part a transform leaves out is the relay's pass-through for it
 * (the bytes as they are, the usage read as OpenAI reports it, OpenAI's error event).
 */
export interface RelayTransform {
  /** A whole buffered body, any status: what the client gets, and the usage to bill. */
  plain?(status: number, body: Buffer): PlainAnswer;
  /** One upstream stream chunk: the client's bytes for it (possibly none yet). With it, the stream's usage is `usage`. */
  chunk?(chunk: Buffer): Buffer | string;
  /** The upstream stream ended: the client's last bytes. */
  end?(): string;
  /** The stream broke after it started: the client protocol's error event that ends it, with `code` (default stream_interrupted). */
  fail?(message: string, code?: StreamFailureCode): string;
  /** The usage the stream reported so far (read when the transform has `chunk`). */
  readonly usage?: TokenUsage | null;
  /**
   * Headers that depend on the usage the response reports (its cost). A buffered response
   * carries them as headers; a stream, whose headers go out before its usage is known,
   * carries them as HTTP trailers when `trailers` names them.
   */
  usageHeaders?(usage: TokenUsage | null): Readonly<Record<string, string>> | null;
  /** For a stream: the names `usageHeaders` returns, announced in `Trailer` and sent after the body. */
  readonly trailers?: string;
}

/** A transform of the whole body, both kinds: a translation, or metering of another usage shape. */
export type BodyTransform = Required<Pick<RelayTransform, 'plain' | 'chunk' | 'end' | 'fail' | 'usage'>>;

/**
 * OpenAI embeddings: bytes untouched; the usage has `prompt_tokens` and no completion, so
 * the chat reader (which needs both) would leave it unbilled.
 */
export function embeddingsMetering(): BodyTransform {
  return {
    plain(status, body) {
      if (status >= 300) return { status, body, usage: null };
      const usage = usageFromOpenai(readJson(body)?.usage);
      return { status, body, usage: usage === null ? null : { inputTokens: usage.inputTokens, outputTokens: 0 } };
    },
    chunk: (chunk) => chunk,
    end: () => '',
    fail: () => '',
    usage: null,
  };
}

function readJson(body: Buffer): { usage?: unknown } | null {
  try {
    return JSON.parse(body.toString('utf8')) as { usage?: unknown };
  } catch {
    return null;
  }
}

/** A transform that ends with a Responses API `Response` object: the gateway stores it, for follow-ups and for GET. */
export type ResponsesTransform = BodyTransform & {
  /** The Response the client got (a plain 2xx body, or a stream's completed or incomplete event); null when there is none (yet). */
  readonly response: Record<string, unknown> | null;
};

/**
 * OpenAI Responses API: bytes untouched; the response id is reported as soon as it is seen
 * (the top-level `id` of a body, `response.created` of a stream) so the gateway can send
 * the response's follow-ups to the provider that holds it, and the usage is read from the
 * body's top-level `usage` or the stream's terminal event. A plain body is not parsed
 * whole: only those two top-level values are, and the whole only when `response` is read.
 */
export function responsesMetering(onResponseId: (id: string) => void): ResponsesTransform {
  const reader = new ResponsesStreamReader(onResponseId);
  let plainBody: Buffer | null = null;
  let parsed: Record<string, unknown> | null | undefined;
  return {
    plain(status, body) {
      if (status >= 300) return { status, body, usage: null };
      plainBody = body;
      const id = topLevelJson(body, 'id');
      if (typeof id === 'string' && id !== '') onResponseId(id);
      return { status, body, usage: usageFromResponses(topLevelJson(body, 'usage')) };
    },
    chunk(chunk) {
      reader.push(chunk);
      return chunk;
    },
    end() {
      reader.end();
      return '';
    },
    fail(message, code = 'stream_interrupted') {
      // The Responses API's own error event (type, code, message, and the sequence_number
      // after the last relayed event's), with OpenAI's `error` object beside it: the OpenAI
      // SDKs raise an APIError for any event data holding one.
      const error = { message, type: errorCatalog[code].openai, param: null, code };
      const sequence_number = reader.nextSequenceNumber;
      return `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number, code, message, param: null, error })}\n\n`;
    },
    get usage() {
      return reader.usage;
    },
    get response() {
      if (parsed !== undefined) return parsed;
      if (plainBody !== null) parsed = jsonRecord(plainBody.toString('utf8'));
      else {
        const event = reader.terminalEvent;
        if (event === null) return null;
        const response = jsonRecord(event)?.response;
        parsed = isRecord(response) ? response : null;
      }
      return parsed;
    },
  };
}

function topLevelJson(body: Buffer, key: string): unknown {
  const at = topLevelValue(body, key);
  if (at === null) return undefined;
  try {
    return JSON.parse(body.toString('utf8', at[0], at[1]));
  } catch {
    return undefined;
  }
}

/** Anthropic -> Anthropic: bytes untouched; usage read from every chunk (it starts in message_start). */
export function anthropicMetering(): BodyTransform {
  const reader = new AnthropicUsageReader();
  return {
    plain(status, body) {
      return { status, body, usage: status < 300 ? anthropicUsageOf(body) : null };
    },
    chunk(chunk) {
      reader.observe(chunk);
      return chunk;
    },
    end() {
      reader.end();
      return '';
    },
    fail(message, code = 'stream_interrupted') {
      return `event: error\ndata: ${anthropicErrorBody(code, message)}\n\n`;
    },
    get usage() {
      return reader.seen;
    },
  };
}

function anthropicUsageOf(body: Buffer): TokenUsage | null {
  try {
    return usageFromAnthropic((JSON.parse(body.toString('utf8')) as { usage?: unknown }).usage);
  } catch {
    return null;
  }
}

/** What a translation needs to know beyond the two protocols, for a provider protocol that leaves it out (Bedrock's). */
export interface TranslationOptions {
  /** The upstream model, named in the client's answer when the provider's answer does not name it (Converse does not). */
  readonly model?: string;
  /** A Bedrock stream's largest binary frame (the provider's max_event_bytes; the relay bounds frames by it too); default 1 MiB. */
  readonly maxEventBytes?: number;
}

/**
 * Upstream protocol -> client protocol, for both kinds of body. A stream is translated
 * event by event as it arrives; a plain body once it is whole. An upstream error keeps its
 * status and message in the client's error shape; a success the gateway cannot read
 * becomes a 502 in the client's shape rather than bytes its SDK cannot parse.
 */
export function translation(
  from: ProviderProtocol,
  to: ChatProtocol,
  includeUsage: boolean,
  options: TranslationOptions = {},
): BodyTransform {
  let stream: StreamTranslator | null = null;
  const translator = (): StreamTranslator => {
    stream ??= new StreamTranslator({ ...options, from, to, includeUsage });
    return stream;
  };
  return {
    plain(status, body) {
      if (status >= 300) {
        const translated = translateErrorResponse(status, body, from, to);
        return { status: translated.status, body: translated.body, usage: null };
      }
      const read = readAnswer(from, body, options);
      if (!read.ok) {
        const error =
          to === 'anthropic' ? anthropicErrorBodyFor(502, null, read.message) : openaiErrorBodyFor(502, 'upstream_error', read.message);
        return { status: 502, body: error, usage: null };
      }
      const out = to === 'anthropic' ? canonicalToAnthropicResponse(read.answer) : canonicalToOpenaiResponse(read.answer);
      return { status, body: JSON.stringify(out), usage: read.usage };
    },
    chunk(chunk) {
      return translator().push(chunk);
    },
    end() {
      return translator().end();
    },
    fail(message, code) {
      return translator().fail(message, code);
    },
    get usage() {
      return stream?.usage ?? null;
    },
  };
}

/**
 * Upstream protocol -> an OpenAI Responses API client, for both kinds of body: the answer
 * as a `Response` object (shaped by `shape`: the gateway's ids, the request's echo) or as
 * its event stream. Errors take OpenAI's shape, as for an OpenAI chat client. `response` is
 * the Response the client got, for the gateway to store; null until then, or when it failed.
 */
export function responsesTranslation(from: ProviderProtocol, shape: ResponsesShape, options: TranslationOptions = {}): ResponsesTransform {
  let stream: StreamTranslator | null = null;
  let encoder: ResponsesEventEncoder | null = null;
  let plainResponse: Record<string, unknown> | null = null;
  const translator = (): StreamTranslator => {
    if (stream === null) {
      encoder = new ResponsesEventEncoder(shape);
      stream = new StreamTranslator({ ...options, from, to: encoder });
    }
    return stream;
  };
  return {
    plain(status, body) {
      if (status >= 300) {
        const translated = translateErrorResponse(status, body, from, 'openai');
        return { status: translated.status, body: translated.body, usage: null };
      }
      const read = readAnswer(from, body, options);
      if (!read.ok) return { status: 502, body: openaiErrorBodyFor(502, 'upstream_error', read.message), usage: null };
      plainResponse = canonicalToResponsesObject(read.answer, shape);
      return { status, body: JSON.stringify(plainResponse), usage: read.usage };
    },
    chunk(chunk) {
      return translator().push(chunk);
    },
    end() {
      return translator().end();
    },
    fail(message, code) {
      return translator().fail(message, code);
    },
    get usage() {
      return stream?.usage ?? null;
    },
    get response() {
      return plainResponse ?? (encoder as ResponsesEventEncoder | null)?.response ?? null;
    },
  };
}

type ReadAnswer =
  | { readonly ok: true; readonly answer: CanonicalResponse; readonly usage: TokenUsage | null }
  | { readonly ok: false; readonly message: string };

/** A whole 2xx answer of the upstream's protocol in the canonical form, with the usage to bill. */
function readAnswer(from: ProviderProtocol, body: Buffer, options: TranslationOptions): ReadAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const read = readers[from](parsed);
  if (!read.ok) return { ok: false, message: `the provider's response could not be read (${read.reason})` };
  const answer = read.value.model === '' && options.model !== undefined ? { ...read.value, model: options.model } : read.value;
  // Billed on what the provider reported, not on the canonical form's, which fills in
  // zeros for an answer without usage (the client's protocol needs the fields): an
  // answer that reports none is billed as missing usage, its reservation.
  return { ok: true, answer, usage: reportedUsage(from, parsed as Record<string, unknown>) };
}

const readers: Readonly<Record<ProviderProtocol, (body: unknown) => Translation<CanonicalResponse>>> = {
  openai: openaiResponseToCanonical,
  anthropic: anthropicResponseToCanonical,
  gemini: geminiResponseToCanonical,
  bedrock: bedrockResponseToCanonical,
};

/** The usage a readable answer of the protocol reports, as TokenUsage; null when it reports none. */
function reportedUsage(from: ProviderProtocol, body: Record<string, unknown>): TokenUsage | null {
  if (from === 'gemini') return usageFromGemini(body.usageMetadata);
  if (from === 'bedrock') return usageFromBedrock(body.usage);
  return from === 'openai' ? usageFromOpenai(body.usage) : usageFromAnthropic(body.usage);
}
