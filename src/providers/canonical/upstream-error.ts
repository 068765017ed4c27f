import { ANTHROPIC_ERROR_TYPES, type AnthropicErrorType, anthropicErrorTypeOfClass } from './anthropic-error-types.js';
import { bedrockErrorMessage } from './bedrock-wire.js';
import type { ChatProtocol, ProviderProtocol } from './types.js';
import { isRecord, jsonRecord } from './types.js';

// Error answers in the client's protocol. The status decides the wire type, so the gateway's
// own errors (status, code, message) and an upstream's translated errors read alike.

/** Anthropic's error type for a status; `insufficient_quota` (OpenAI's billing refusal) is a billing error whatever its status. */
export function anthropicErrorType(status: number, code: string | null = null): AnthropicErrorType {
  if (code === 'insufficient_quota') return 'billing_error';
  return ANTHROPIC_ERROR_TYPES[status] ?? anthropicErrorTypeOfClass(status);
}

// The other way, for an Anthropic stream's `error` event, which carries a type but no status.
// 503 is left out so that overloaded_error reads as 529, the status Anthropic sends it with.
const ANTHROPIC_STATUS: Readonly<Record<string, number>> = Object.freeze(
  Object.fromEntries(
    Object.entries(ANTHROPIC_ERROR_TYPES)
      .filter(([status]) => status !== '503')
      .map(([status, type]) => [type, Number(status)]),
  ),
);

export function statusOfAnthropicError(type: unknown): number {
  return ANTHROPIC_STATUS[type as string] ?? 500;
}

/** OpenAI's error type for a status, as errors.ts's catalog spells them. */
export function openaiErrorType(status: number, code: string | null = null): string {
  if (code === 'insufficient_quota' || code === 'billing_error') return 'insufficient_quota';
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 429:
      return 'rate_limit_error';
  }
  return status < 500 ? 'invalid_request_error' : 'server_error';
}

const OPENAI_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  rate_limit_error: 429,
  insufficient_quota: 429,
};

export function statusOfOpenaiError(type: unknown): number {
  return OPENAI_STATUS[type as string] ?? 500;
}

/** Anthropic's error body, `{"type":"error","error":{"type","message"}}`, for any status. */
export function anthropicErrorBodyFor(status: number, code: string | null, message: string): string {
  return JSON.stringify({ type: 'error', error: { type: anthropicErrorType(status, code), message } });
}

/** OpenAI's error body, `{"error":{"message","type","param","code"}}`, for any status. */
export function openaiErrorBodyFor(status: number, code: string | null, message: string): string {
  return JSON.stringify({ error: { message, type: openaiErrorType(status, code), param: null, code } });
}

/** The message and code an error body of either protocol carries, or null when it carries none. */
function readError(body: string): { message: string; code: string | null } | null {
  const parsed = jsonRecord(body);
  if (parsed === null || !isRecord(parsed.error) || typeof parsed.error.message !== 'string') return null;
  const e = parsed.error;
  // OpenAI's `code` is the specific reason; Anthropic's `type` is all it has; Gemini's
  // `code` is the HTTP status, and its `status` (RESOURCE_EXHAUSTED) is not a code either protocol knows.
  const code = typeof e.code === 'string' ? e.code : typeof e.type === 'string' ? e.type : null;
  return { message: e.message as string, code };
}

/** Protocols whose error body is a bare message rather than an error object, and how to read it. */
const BARE_MESSAGE: Readonly<Partial<Record<ProviderProtocol, (text: string) => string | null>>> = {
  bedrock: bedrockErrorMessage,
};

/**
 * An upstream's error answer (status and body, in the upstream's protocol) as the client's
 * protocol expects it. The status is kept, except Anthropic's non-standard 529 that an
 * OpenAI client reads as 503. A body that is not a recognisable error keeps only its status.
 */
export function translateErrorResponse(
  status: number,
  body: Buffer | string,
  from: ProviderProtocol,
  to: ChatProtocol,
): { status: number; body: string } {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (from === to) return { status, body: text };
  // Bedrock's body is only `{"message": …}`; its type is a header, and its status says as much.
  const bare = BARE_MESSAGE[from]?.(text) ?? null;
  const read = (bare === null ? readError(text) : { message: bare, code: null }) ?? {
    message: `the provider answered HTTP ${status}`,
    code: null,
  };
  if (to === 'anthropic') return { status, body: anthropicErrorBodyFor(status, read.code, read.message) };
  const outStatus = status === 529 ? 503 : status;
  return { status: outStatus, body: openaiErrorBodyFor(outStatus, read.code, read.message) };
}
