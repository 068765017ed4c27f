import { anthropicErrorBody } from '../errors.js';
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
import { StreamTranslator } from './canonical/stream-translator.js';
import type { CanonicalResponse, ChatProtocol, ProviderProtocol, Translation } from './canonical/types.js';
import { anthropicErrorBodyFor, openaiErrorBodyFor, translateErrorResponse } from './canonical/upstream-error.js';
import { usageFromAnthropic, usageFromBedrock, usageFromOpenai } from './canonical/usage.js';
import type { TokenUsage } from './metering.js';

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

/** A value now, or a promise of it: a guardrail that asks a service answers later. */
export type MaybeAsync<T> = T | Promise<T>;

/**
 * What the relay takes: a RelayTransform whose body parts may answer later (a promise), as
 * the transform stack's do when a guardrail in it asks a service. The relay then waits,
 * with the upstream paused, and keeps the order of what it writes. Translations are never
 * asynchronous; only the composed transform may be.
 */
export interface RelayTransformAsync extends Omit<RelayTransform, 'plain' | 'chunk' | 'end'> {
  plain?(status: number, body: Buffer): MaybeAsync<PlainAnswer>;
  chunk?(chunk: Buffer): MaybeAsync<Buffer | string>;
  end?(): MaybeAsync<string>;
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
  return translatedBody(
    from,
    to,
    options,
    (answer) => (to === 'anthropic' ? canonicalToAnthropicResponse(answer) : canonicalToOpenaiResponse(answer)),
    () => new StreamTranslator({ ...options, from, to, includeUsage }),
  );
}

/**
 * A body translated from the upstream's protocol, whatever the client's: a plain 2xx answer
 * read into the canonical form and written by `write`; a stream through the translator
 * `stream` makes on the first chunk; an upstream error, or an answer the gateway cannot
 * read, in the error shape of `errors` (the client's dialect).
 */
export function translatedBody(
  from: ProviderProtocol,
  errors: ChatProtocol,
  options: TranslationOptions,
  write: (answer: CanonicalResponse) => unknown,
  stream: () => StreamTranslator,
): BodyTransform {
  let translator: StreamTranslator | null = null;
  const open = (): StreamTranslator => {
    translator ??= stream();
    return translator;
  };
  return {
    plain(status, body) {
      if (status >= 300) {
        const translated = translateErrorResponse(status, body, from, errors);
        return { status: translated.status, body: translated.body, usage: null };
      }
      const read = readAnswer(from, body, options);
      if (!read.ok) {
        const error =
          errors === 'anthropic' ? anthropicErrorBodyFor(502, null, read.message) : openaiErrorBodyFor(502, 'upstream_error', read.message);
        return { status: 502, body: error, usage: null };
      }
      return { status, body: JSON.stringify(write(read.answer)), usage: read.usage };
    },
    chunk(chunk) {
      return open().push(chunk);
    },
    end() {
      return open().end();
    },
    fail(message, code) {
      return open().fail(message, code);
    },
    get usage() {
      return translator?.usage ?? null;
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

/** The usage a readable answer of each protocol reports, as TokenUsage; null when it reports none. */
const REPORTED_USAGE: Readonly<Record<ProviderProtocol, (body: Record<string, unknown>) => TokenUsage | null>> = {
  openai: (body) => usageFromOpenai(body.usage),
  anthropic: (body) => usageFromAnthropic(body.usage),
  gemini: (body) => usageFromGemini(body.usageMetadata),
  bedrock: (body) => usageFromBedrock(body.usage),
};

function reportedUsage(from: ProviderProtocol, body: Record<string, unknown>): TokenUsage | null {
  return REPORTED_USAGE[from](body);
}
