import type { TokenUsage } from '../metering.js';

// The canonical chat form: the one shape every client protocol is read into and every
// provider protocol is written from, so N protocols need 2N converters, not N x N. Field
// names are the gateway's own; where a protocol's concept has no counterpart the converter
// refuses the request (Translation) rather than dropping the field. ADR-0011.

export type ChatProtocol = 'openai' | 'anthropic';

/** Anthropic's prompt-cache marker, kept as given so an Anthropic upstream receives it unchanged. */
export interface CacheControl {
  readonly type: 'ephemeral';
  readonly ttl?: string;
}

export interface TextPart {
  readonly type: 'text';
  readonly text: string;
  readonly cacheControl?: CacheControl;
}

export type ImageSource =
  | { readonly kind: 'base64'; readonly mediaType: string; readonly data: string }
  | { readonly kind: 'url'; readonly url: string };

export interface ImagePart {
  readonly type: 'image';
  readonly source: ImageSource;
  readonly cacheControl?: CacheControl;
}

/** The model asking for a tool: OpenAI's `tool_calls[]`, Anthropic's `tool_use` block. */
export interface ToolCallPart {
  readonly type: 'tool_call';
  readonly id: string;
  readonly name: string;
  /** The arguments, parsed: Anthropic carries an object, OpenAI its JSON text. */
  readonly input: unknown;
  readonly cacheControl?: CacheControl;
}

/** A tool's answer: OpenAI's `role: "tool"` message, Anthropic's `tool_result` block. */
export interface ToolResultPart {
  readonly type: 'tool_result';
  readonly toolCallId: string;
  readonly content: readonly (TextPart | ImagePart)[];
  readonly isError: boolean;
  readonly cacheControl?: CacheControl;
}

export type ContentPart = TextPart | ImagePart | ToolCallPart | ToolResultPart;

export interface CanonicalMessage {
  readonly role: 'user' | 'assistant';
  readonly content: readonly ContentPart[];
}

export interface CanonicalTool {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the tool's input. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly cacheControl?: CacheControl;
}

/** `any` is OpenAI's `required`; `tool` forces the named tool. */
export type ToolChoice =
  | { readonly type: 'auto' }
  | { readonly type: 'none' }
  | { readonly type: 'any' }
  | { readonly type: 'tool'; readonly name: string };

export interface CanonicalRequest {
  readonly model: string;
  /** System prompt pieces, in order (OpenAI's leading system/developer messages). */
  readonly system: readonly TextPart[];
  readonly messages: readonly CanonicalMessage[];
  readonly maxOutputTokens?: number;
  readonly temperature?: number;
  readonly topP?: number;
  readonly stopSequences?: readonly string[];
  readonly tools?: readonly CanonicalTool[];
  readonly toolChoice?: ToolChoice;
  /** false = at most one tool call per turn (OpenAI `parallel_tool_calls: false`). */
  readonly parallelToolCalls?: boolean;
  readonly stream: boolean;
  /** OpenAI `stream_options.include_usage`: the client wants the usage-only last chunk. */
  readonly streamUsage?: boolean;
  /** End-user id: OpenAI `user`, Anthropic `metadata.user_id`. */
  readonly user?: string;
}

/** Why generation stopped. OpenAI `stop` is `end_turn`: OpenAI does not say whether a stop sequence matched. */
export type StopReason = 'end_turn' | 'stop_sequence' | 'max_tokens' | 'tool_use' | 'content_filter';

export interface CanonicalResponse {
  readonly id: string;
  readonly model: string;
  readonly content: readonly (TextPart | ToolCallPart)[];
  readonly stopReason: StopReason | null;
  readonly stopSequence?: string;
  readonly usage: TokenUsage;
}

/**
 * A converter's answer: the converted value, or the request field that cannot be expressed
 * (`unsupported`: valid in its own protocol, no counterpart in the target) or is malformed
 * (`invalid`). `path` is in OpenAI's `param` notation (`messages[2].content[0].detail`), so
 * the server can answer 400 naming it.
 */
export type Translation<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly kind: 'unsupported' | 'invalid'; readonly path: string; readonly reason: string };

export type Refusal = Extract<Translation<never>, { ok: false }>;

/** Thrown inside a converter and caught at its entry, so deep helpers need not thread results. */
export class TranslationRefused extends Error {
  readonly refusal: Refusal;
  constructor(refusal: Refusal) {
    super(refusal.reason);
    this.refusal = refusal;
  }
}

export function refuse(kind: Refusal['kind'], path: string, reason: string): never {
  throw new TranslationRefused({ ok: false, kind, path, reason });
}

/** Runs a converter body, turning a refusal thrown anywhere inside into a Translation. */
export function attempt<T>(convert: () => T): Translation<T> {
  try {
    return { ok: true, value: convert() };
  } catch (err) {
    if (err instanceof TranslationRefused) return err.refusal;
    throw err;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** OpenAI tool-call arguments (JSON text) as the value Anthropic carries; empty text is no arguments. */
export function parseToolArguments(args: string, path: string): unknown {
  if (args === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return refuse('invalid', path, `${path} is not valid JSON`);
  }
}
