import type { StopReason } from './types.js';
import { jsonRecord } from './types.js';

// What the Bedrock Runtime's answers and errors say, read into the gateway's terms: why
// generation stopped, and what an error's type stands for. Bedrock names an error by its
// type (`ThrottlingException`), in the `x-amzn-errortype` header of a plain answer and in
// the `:exception-type` header of a stream's exception frame; its body holds only a message.

/** A Converse `stopReason` as the canonical one; null for one the gateway does not know. */
export function stopReasonFromBedrock(reason: unknown): StopReason | null {
  switch (reason) {
    case 'end_turn':
    case 'tool_use':
    case 'max_tokens':
    case 'stop_sequence':
      return reason;
    // A guardrail or the model's own filter withheld or cut the answer.
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    // The answer filled the model's window: a length stop, as Anthropic's same reason is.
    case 'model_context_window_exceeded':
      return 'max_tokens';
    // malformed_model_output, malformed_tool_use: the turn ended without a usable answer.
    case 'malformed_model_output':
    case 'malformed_tool_use':
      return 'end_turn';
  }
  return null;
}

/**
 * The HTTP status each Bedrock Runtime error type stands for: the service model's where it
 * is one a client knows, and where it is not (a model's 424 and 408) the gateway's for a
 * provider that failed. A quota exceeded (400 on the wire) stands for what it is, a 429. A
 * stream's exception frame carries only the type, in camelCase (`throttlingException`);
 * both spellings are read through errorTypeKey.
 */
const STATUS_OF_TYPE: Readonly<Record<string, number>> = Object.freeze({
  accessdeniedexception: 403,
  unrecognizedclientexception: 403,
  invalidsignatureexception: 403,
  expiredtokenexception: 403,
  incompletesignatureexception: 403,
  validationexception: 400,
  conflictexception: 400,
  resourcenotfoundexception: 404,
  // A quota of the account (tokens or requests per minute): what a 429 means elsewhere.
  servicequotaexceededexception: 429,
  throttlingexception: 429,
  modelnotreadyexception: 429,
  // The model took too long or failed: the provider's fault, not the request's.
  modeltimeoutexception: 504,
  modelerrorexception: 502,
  modelstreamerrorexception: 502,
  internalserverexception: 500,
  serviceunavailableexception: 503,
});

/** `ThrottlingException:http://internal.amazon.com/coral/...` -> `throttlingexception`: the type is before the first colon. */
function errorTypeKey(type: string): string {
  const colon = type.indexOf(':');
  return (colon === -1 ? type : type.slice(0, colon)).trim().toLowerCase();
}

/** The error type as Bedrock names it (`ThrottlingException`), from `x-amzn-errortype` or an `:exception-type`; null when absent. */
export function bedrockErrorType(header: string | null | undefined): string | null {
  if (header === null || header === undefined) return null;
  const colon = header.indexOf(':');
  const type = (colon === -1 ? header : header.slice(0, colon)).trim();
  return type === '' ? null : type;
}

/** The HTTP status a Bedrock error type stands for; `fallback` for a type the gateway does not know. */
export function statusOfBedrockError(type: string | null, fallback: number): number {
  if (type === null) return fallback;
  return STATUS_OF_TYPE[errorTypeKey(type)] ?? fallback;
}

/** The error types that say the gateway's AWS credential or its signature was refused. */
const CREDENTIAL_TYPES: ReadonlySet<string> = new Set([
  'accessdeniedexception',
  'unrecognizedclientexception',
  'invalidsignatureexception',
  'expiredtokenexception',
  'incompletesignatureexception',
  'missingauthenticationtokenexception',
]);

export function isBedrockCredentialError(type: string | null): boolean {
  return type !== null && CREDENTIAL_TYPES.has(errorTypeKey(type));
}

/** Bedrock's error body: `{"message": …}`, `{"Message": …}` from some front ends; null when it holds neither. */
export function bedrockErrorMessage(body: string): string | null {
  const parsed = jsonRecord(body);
  if (parsed === null) return null;
  const message = typeof parsed.message === 'string' ? parsed.message : parsed.Message;
  return typeof message === 'string' && message !== '' ? message : null;
}

/**
 * Bedrock's words for a prompt longer than the model's window: its own ("Input is too long
 * for requested model."), the model's passed on ("prompt is too long: 210000 tokens >
 * 200000 maximum", "too many input tokens"), and the window's ("exceeds the context window",
 * "maximum context length").
 */
const CONTEXT_MESSAGE =
  /\binput is too long\b|\bprompt is too long\b|\btoo many (?:input )?tokens\b|\bmaximum context length\b|\bcontext (?:window|length)\b.*\bexceed|\bexceeds? the (?:model's )?context window\b/i;

export function isBedrockContextMessage(message: string): boolean {
  return CONTEXT_MESSAGE.test(message);
}

/** The JSON payload of an event-stream frame, as an object; null when it is not one. */
export function framePayload(body: Uint8Array): Record<string, unknown> | null {
  return jsonRecord(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
}
