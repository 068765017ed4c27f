import { bedrockErrorBody, STREAM_EXCEPTIONS } from './bedrock-errors.js';
import { anthropicError, anthropicErrorType, geminiError, openAiError } from './exchange.js';

export type MockFaultMode = 'status' | 'latency' | 'close' | 'cut_stream' | 'hang' | 'stream_exception';

/** A fault as posted to `POST /__mock/faults` (snake_case: it is a wire body). */
export interface MockFault {
  mode: MockFaultMode;
  /** How many of the next model requests (chat, messages, count_tokens, embeddings) it applies to; omitted = until cleared. */
  count?: number;
  /** mode `status`: the status to answer with (200-599, default 500). */
  status?: number;
  /** mode `status`: JSON body to answer with; default an OpenAI-shaped error for the status. */
  body?: Record<string, unknown>;
  /** mode `status`: extra response headers (e.g. `{"retry-after": "1"}`), names and values as strings. */
  headers?: Record<string, string>;
  /** mode `latency`: delay added before the response headers. */
  latency_ms?: number;
  /** mode `cut_stream`: content chunks sent before the connection is dropped; `stream_exception`: before the exception event (default 0). */
  after_chunks?: number;
  /**
   * mode `stream_exception` (Bedrock's converse-stream): the exception event sent inside the 200
   * stream, by its event name (default `throttlingException`). A non-streamed Bedrock request
   * gets the same exception as an HTTP error; other endpoints' streams are cut as by `cut_stream`.
   */
  exception?: string;
}

/** A validated fault, with its body serialized once rather than per request. */
export interface ActiveFault {
  readonly mode: MockFaultMode;
  /** Infinity = until cleared. */
  remaining: number;
  readonly status: number;
  readonly bodyText: string;
  /** The same answer for an Anthropic endpoint: the custom body, or an Anthropic-shaped default. */
  readonly anthropicBodyText: string;
  /** The same answer for a Gemini endpoint: the custom body, or a Gemini-shaped default (a 429 with RetryInfo). */
  readonly geminiBodyText: string;
  /** The same answer for a Bedrock endpoint: the custom body, or Bedrock's `{"message"}`. */
  readonly bedrockBodyText: string;
  /** mode `stream_exception`: the exception's event name; '' for other modes. */
  readonly streamException: string;
  /** mode `status`: extra response headers, names lower-cased; empty for none. */
  readonly headers: Readonly<Record<string, string>>;
  readonly latencyMs: number;
  readonly afterChunks: number;
  readonly source: MockFault;
}

const modes: readonly MockFaultMode[] = ['status', 'latency', 'close', 'cut_stream', 'hang', 'stream_exception'];

/** Which modes each mode-specific field belongs to; a field posted with another mode is a mistake. */
const fieldModes: Readonly<Record<string, readonly MockFaultMode[] | undefined>> = {
  status: ['status'],
  body: ['status'],
  headers: ['status'],
  latency_ms: ['latency'],
  after_chunks: ['cut_stream', 'stream_exception'],
  exception: ['stream_exception'],
};

const maxTimerMs = 2_147_483_647;

/** A fault's extra headers: a few, short, and each a valid HTTP header that the mock does not set itself. */
const maxFaultHeaders = 16;
const maxHeaderValueChars = 1024;
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
const headerValue = /^[\t\x20-\x7e]*$/;
const ownHeaders = new Set(['content-type', 'content-length', 'transfer-encoding', 'connection', 'x-mock-provider']);

/** Checks a fault's `headers`; returns them with lower-cased names, or a message naming the bad entry. */
function parseHeaders(input: unknown): Record<string, string> | string {
  if (!isRecord(input)) return 'fault.headers must be a JSON object of header names to string values';
  const entries = Object.entries(input);
  if (entries.length > maxFaultHeaders) return `fault.headers may hold at most ${maxFaultHeaders} headers`;
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (!headerName.test(name)) return `fault.headers: ${JSON.stringify(name.slice(0, 64))} is not a valid header name`;
    const lower = name.toLowerCase();
    if (ownHeaders.has(lower)) return `fault.headers.${lower} is set by the mock itself`;
    if (typeof value !== 'string') return `fault.headers.${lower} must be a string`;
    if (value.length > maxHeaderValueChars || !headerValue.test(value))
      return `fault.headers.${lower} must be printable ASCII of at most ${maxHeaderValueChars} characters`;
    out[lower] = value;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function defaultErrorBody(status: number): string {
  const message = `Mock fault: HTTP ${status}.`;
  if (status === 429) return openAiError(message, 'requests', 'rate_limit_exceeded');
  if (status >= 500) return openAiError(message, 'server_error');
  return openAiError(message, 'invalid_request_error');
}

/** Gemini says when to try again in the body (RetryInfo), not in `retry-after`. */
function defaultGeminiBody(status: number): string {
  const message = `Mock fault: HTTP ${status}.`;
  if (status !== 429) return geminiError(status, message);
  return geminiError(status, message, [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }]);
}

/** Checks one posted fault; returns it ready to queue, or a message naming the bad field. */
export function parseFault(input: unknown): ActiveFault | string {
  if (!isRecord(input)) return 'fault must be a JSON object';
  const mode = input.mode;
  if (typeof mode !== 'string' || !modes.includes(mode as MockFaultMode)) {
    return `fault.mode must be one of ${modes.join(', ')}`;
  }
  for (const key of Object.keys(input)) {
    if (key === 'mode' || key === 'count') continue;
    if (!(key in fieldModes)) return `fault.${key} is not a known field`;
    const allowed = fieldModes[key] ?? [];
    if (!allowed.includes(mode as MockFaultMode)) return `fault.${key} only applies to mode ${allowed.join(' or ')}`;
  }
  const { count, status, body, headers, latency_ms, after_chunks, exception } = input;
  if (count !== undefined && !(isNonNegativeInteger(count) && count > 0)) {
    return 'fault.count must be a positive integer (omit it to apply until cleared)';
  }
  if (status !== undefined && !(isNonNegativeInteger(status) && status >= 200 && status <= 599)) {
    return 'fault.status must be an integer from 200 to 599';
  }
  if (body !== undefined && !isRecord(body)) return 'fault.body must be a JSON object';
  const extraHeaders = headers === undefined ? {} : parseHeaders(headers);
  if (typeof extraHeaders === 'string') return extraHeaders;
  if (mode === 'latency' && latency_ms === undefined) return 'fault.latency_ms is required for mode latency';
  if (latency_ms !== undefined && !(typeof latency_ms === 'number' && latency_ms >= 0 && latency_ms <= maxTimerMs)) {
    return `fault.latency_ms must be a number from 0 to ${maxTimerMs}`;
  }
  if (after_chunks !== undefined && !isNonNegativeInteger(after_chunks)) {
    return 'fault.after_chunks must be a non-negative integer';
  }
  if (exception !== undefined && !(typeof exception === 'string' && exception in STREAM_EXCEPTIONS)) {
    return `fault.exception must be one of ${Object.keys(STREAM_EXCEPTIONS).join(', ')}`;
  }
  const resolvedStatus = status ?? 500;
  return {
    mode: mode as MockFaultMode,
    remaining: count ?? Infinity,
    status: resolvedStatus,
    bodyText: body === undefined ? defaultErrorBody(resolvedStatus) : JSON.stringify(body),
    anthropicBodyText:
      body === undefined ? anthropicError(`Mock fault: HTTP ${resolvedStatus}.`, anthropicErrorType(resolvedStatus)) : JSON.stringify(body),
    geminiBodyText: body === undefined ? defaultGeminiBody(resolvedStatus) : JSON.stringify(body),
    bedrockBodyText: body === undefined ? bedrockErrorBody(`Mock fault: HTTP ${resolvedStatus}.`) : JSON.stringify(body),
    streamException: mode === 'stream_exception' ? ((exception as string | undefined) ?? 'throttlingException') : '',
    headers: extraHeaders,
    latencyMs: latency_ms ?? 0,
    afterChunks: after_chunks ?? 0,
    source: { ...input } as unknown as MockFault,
  };
}

/**
 * Faults waiting for model requests, first in first out. A request takes the head fault and uses
 * one of its count; a fault is removed once spent, so the head always has some count left and a
 * fault without a count holds the head until cleared.
 */
export class FaultQueue {
  #faults: ActiveFault[] = [];

  add(fault: ActiveFault): void {
    this.#faults.push(fault);
  }

  take(): ActiveFault | undefined {
    const head = this.#faults[0];
    if (head === undefined) return undefined;
    head.remaining -= 1;
    if (head.remaining <= 0) this.#faults.shift();
    return head;
  }

  clear(): void {
    this.#faults = [];
  }

  /** What is still queued, with counts as they stand now. */
  list(): MockFault[] {
    return this.#faults.map((f) => (f.remaining === Infinity ? { ...f.source } : { ...f.source, count: f.remaining }));
  }
}
