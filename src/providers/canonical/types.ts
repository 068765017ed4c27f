import type { TokenUsage } from '../metering.js';

// The canonical chat form: the one shape every client protocol is read into and every
// provider protocol is written from, so N protocols need 2N converters, not N x N. Field
// names are the gateway's own. What becomes of each field of each protocol is the table in
// policy.ts: mapped, dropped (and listed), or unable (the converter refuses, by path).

/** A protocol clients speak: OpenAI chat completions or Anthropic Messages. */
export type ChatProtocol = 'openai' | 'anthropic';

/**
 * A protocol a client's request is read from: a chat protocol, or OpenAI's Responses API,
 * whose requests are read into the canonical form but whose errors keep OpenAI's shape.
 */
export type ClientProtocol = ChatProtocol | 'responses';

/** A protocol a provider's chat endpoint speaks: a client's, or one only providers speak (Gemini's, Bedrock's Converse). */
export type ProviderProtocol = ChatProtocol | 'gemini' | 'bedrock';

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

/** A document (a PDF...): the Responses API's `input_file`, Anthropic's `document` block. */
export interface FilePart {
  readonly type: 'file';
  readonly source: ImageSource;
  readonly filename?: string;
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

export type ContentPart = TextPart | ImagePart | FilePart | ToolCallPart | ToolResultPart;

/** The model's reasoning in an answer: Anthropic's thinking block, OpenAI-compatible servers' `reasoning_content`. */
export interface ThinkingPart {
  readonly type: 'thinking';
  readonly text: string;
  /** Anthropic's opaque signature; '' when the upstream gave none (an OpenAI-compatible server). */
  readonly signature: string;
}

export interface CanonicalMessage {
  readonly role: 'user' | 'assistant';
  readonly content: readonly ContentPart[];
}

export interface CanonicalTool {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the tool's input. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
  /** The model's arguments must match the schema exactly (OpenAI `strict`, Anthropic `strict`). */
  readonly strict?: boolean;
  readonly cacheControl?: CacheControl;
}

/** Structured output: the answer's text is JSON matching `schema`. */
export interface ResponseFormat {
  readonly type: 'json_schema';
  /** OpenAI requires a name; Anthropic has none ("response" is used). */
  readonly name: string;
  readonly description?: string;
  readonly schema: Readonly<Record<string, unknown>>;
  readonly strict?: boolean;
}

/** OpenAI's `reasoning_effort` levels. */
export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';

/** Extended thinking: OpenAI's `reasoning_effort`, Anthropic's `thinking` budget; each is derived from the other (policy.ts). */
export interface Reasoning {
  readonly effort: ReasoningEffort;
  /** Anthropic's `budget_tokens`; null = no budget was given (OpenAI's effort, Anthropic's adaptive thinking). */
  readonly budgetTokens: number | null;
}

/**
 * Sampling settings only one client protocol has (OpenAI's seed and penalties, Anthropic's
 * top-k). A reader lists each as dropped, since the other client protocol has no place for
 * it, and also carries it here for a target that has (Gemini), whose writer then says it
 * carried it (WrittenRequest.carried).
 */
export interface Sampling {
  readonly seed?: number;
  readonly frequencyPenalty?: number;
  readonly presencePenalty?: number;
  readonly topK?: number;
}

/** What becomes of a request field crossing protocols (policy.ts, which holds the table). */
export type TranslationOutcome = 'mapped' | 'dropped' | 'unable';

export interface TranslationRule {
  /** The client's protocol: the field is one of its requests'. */
  readonly from: ClientProtocol;
  /** The provider's protocol the request is translated to. */
  readonly to: ProviderProtocol;
  readonly field: string;
  readonly outcome: TranslationOutcome;
  /** What becomes of it in the other protocol. */
  readonly effect: string;
}

/** The rule maker for one direction of the policy table: each rule frozen, as the table is. */
export function ruleMaker(
  from: ClientProtocol,
  to: ProviderProtocol,
): (field: string, outcome: TranslationOutcome, effect: string) => TranslationRule {
  return (field, outcome, effect) => Object.freeze({ from, to, field, outcome, effect });
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
  readonly responseFormat?: ResponseFormat;
  readonly reasoning?: Reasoning;
  readonly sampling?: Sampling;
  /** Fields the reader dropped (no canonical counterpart), named as policy.ts names them. */
  readonly dropped: readonly string[];
}

/** Why generation stopped. OpenAI `stop` is `end_turn`: OpenAI does not say whether a stop sequence matched. */
export type StopReason = 'end_turn' | 'stop_sequence' | 'max_tokens' | 'tool_use' | 'content_filter';

export interface CanonicalResponse {
  readonly id: string;
  readonly model: string;
  readonly content: readonly (TextPart | ToolCallPart | ThinkingPart)[];
  readonly stopReason: StopReason | null;
  readonly stopSequence?: string;
  readonly usage: TokenUsage;
}

/**
 * A converter's answer: the converted value, or the request field that cannot be expressed
 * (`unsupported`: valid in its own protocol, but the target cannot give what it asks for, so
 * this candidate is unable to take the request) or is malformed (`invalid`). `path` is in OpenAI's `param` notation (`messages[2].content[0].detail`), so
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

/** JSON text that holds an object (an upstream's event or error body), or null: what it holds otherwise says nothing. */
export function jsonRecord(text: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  return isRecord(value) ? value : null;
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

/** A request written for the target protocol, and the fields the writer dropped or clamped. */
export interface WrittenRequest {
  readonly body: Record<string, unknown>;
  readonly dropped: readonly string[];
  /** Fields the reader listed as dropped that this writer sent after all (Sampling's); absent = none. */
  readonly carried?: readonly string[];
}
