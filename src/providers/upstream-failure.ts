import { type FailureReason, type FallbackClass, reasonForStatus } from '../resilience/index.js';
import {
  bedrockErrorMessage,
  bedrockErrorType,
  isBedrockContextMessage,
  isBedrockCredentialError,
  statusOfBedrockError,
} from './canonical/bedrock-wire.js';
import { GEMINI_KEY_REASONS, geminiErrorDetails } from './canonical/gemini-wire.js';

// How an attempt that failed before anything reached the client is told to the failover
// loop: a reason it branches on, and a detail safe to show a client (both read by tests
// and clients, so they are stable strings).

/** An attempt that failed before it committed: the caller may try the next candidate. */
export interface FailedAttempt {
  readonly kind: 'failed';
  readonly reason: FailureReason;
  readonly detail: string;
  /** An upstream 429's or 503's `retry-after`, in ms: the provider asked not to be called before then. */
  readonly retryAfterMs?: number;
  /** The upstream's own HTTP answer, when the attempt failed on one: what its client may be told of it. */
  readonly answer?: UpstreamAnswer;
}

/** An upstream's failing answer, kept so the gateway's error can carry the upstream's own status and words. */
export interface UpstreamAnswer {
  readonly status: number;
  /** The upstream's `retry-after` as it sent it, on a 429 or 503, when it is a sane delay or an HTTP date; null otherwise. */
  readonly retryAfter: string | null;
  /** Calls back once with the start of its body: when it has ended, its bound was read, or `waitMs` passed. */
  readBody(cb: (text: string) => void, waitMs: number): void;
}

/** The most of a failing answer's body read: an error message is short, a hostile body is not held. */
export const ANSWER_BODY_BYTES = 16 * 1024;

/** The body of a failing answer, collected while the relay drains it (the connection stays reusable). */
export class AnswerBody implements UpstreamAnswer {
  readonly status: number;
  /** Set from the body when the provider puts its delay there (Gemini's RetryInfo). */
  retryAfter: string | null;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #text: string | null = null;
  #waiters: Array<(text: string) => void> = [];
  #timer: NodeJS.Timeout | null = null;

  constructor(status: number, retryAfter: string | undefined) {
    this.status = status;
    this.retryAfter = status === 429 || status === 503 ? saneRetryAfter(retryAfter) : null;
  }

  push(chunk: Buffer): void {
    if (this.#text !== null) return;
    const room = ANSWER_BODY_BYTES - this.#bytes;
    this.#chunks.push(chunk.length <= room ? chunk : chunk.subarray(0, room));
    this.#bytes += Math.min(chunk.length, room);
    if (this.#bytes >= ANSWER_BODY_BYTES) this.end();
  }

  end(): void {
    if (this.#text !== null) return;
    this.#text = Buffer.concat(this.#chunks).toString('utf8');
    this.#chunks = [];
    if (this.#timer !== null) clearTimeout(this.#timer);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w(this.#text);
  }

  readBody(cb: (text: string) => void, waitMs: number): void {
    if (this.#text !== null) {
      cb(this.#text);
      return;
    }
    this.#waiters.push(cb);
    if (this.#timer === null) {
      // An upstream that sends its status and then stalls its body must not hold the client's error.
      this.#timer = setTimeout(() => this.end(), waitMs);
      this.#timer.unref();
    }
  }
}

/** The longest `retry-after` passed on to a client: a day; beyond that it is not advice a client can use. */
const MAX_RETRY_AFTER_S = 86_400;

/** `retry-after` as the upstream sent it, when it is delay-seconds up to a day or an HTTP date; null otherwise. */
export function saneRetryAfter(value: string | undefined): string | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (/^\d{1,6}$/.test(trimmed)) return Number(trimmed) <= MAX_RETRY_AFTER_S ? String(Number(trimmed)) : null;
  // IMF-fixdate and its obsolete forms: letters, digits, spaces, commas, colons and hyphens only.
  if (trimmed.length > 40 || !/^[A-Za-z0-9 ,:-]+$/.test(trimmed)) return null;
  return Number.isNaN(Date.parse(trimmed)) ? null : trimmed;
}

/** The most of an upstream's error message a client is shown. */
const MAX_MESSAGE_CHARS = 1000;

/**
 * The upstream's error message from its body (OpenAI's and Anthropic's shapes both carry
 * `error.message`; older vLLM a top-level `message`), bounded, on one line, with anything that looks like a credential
 * removed: OpenAI's 401 echoes part of the key it was sent. `secrets` are values known to
 * be secret (the provider's configured key), removed wherever they appear. Null when the
 * body holds no such message.
 */
export function upstreamMessage(body: string, secrets: readonly string[] = []): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  const top =
    typeof parsed === 'object' && parsed !== null ? (parsed as { error?: unknown; object?: unknown; message?: unknown }) : undefined;
  const error = top?.error;
  // vLLM's older shape puts the message at the top: `{"object": "error", "message": …}`.
  const message =
    typeof error === 'object' && error !== null
      ? (error as { message?: unknown }).message
      : top?.object === 'error'
        ? top.message
        : undefined;
  if (typeof message !== 'string') return null;
  let text = message;
  for (const s of secrets) if (s.length >= 8) text = text.replaceAll(s, '[redacted]');
  // A message on one line: no control character can break a log line or a client's display.
  text = redactKeys(text)
    .replace(/[\p{Cc}\u2028\u2029]+/gu, ' ')
    .trim();
  if (text === '') return null;
  return text.length <= MAX_MESSAGE_CHARS ? text : `${text.slice(0, MAX_MESSAGE_CHARS)}…`;
}

/** Removes what looks like a key: `sk-…`/`sy-…` tokens, masked fragments (`abc***xyz`), long base64 or hex runs. */
export function redactKeys(text: string): string {
  return text
    .replace(/\b(?:sk|sy)[-_][A-Za-z0-9_*-]+/gi, '[redacted]')
    .replace(/[^\s"'`]*\*{2,}[^\s"'`.,;]*/g, '[redacted]')
    .replace(/(?:bearer\s+)[^\s"'`]+/gi, 'Bearer [redacted]')
    .replace(/[A-Za-z0-9+/_=-]{24,}/g, (run) => (/\d/.test(run) && /[A-Za-z]/.test(run) ? '[redacted]' : run));
}

/** The attempt ran out of time (request_timeout_ms, the route's deadline, stream_max_ms). */
export class OutOfTime extends Error {
  readonly code = 'SWITCHYARD_OUT_OF_TIME';
}

/** A plain body to translate grew past the relay's bound for a body it must hold whole. */
export class TooLargeToTranslate extends Error {
  readonly code = 'SWITCHYARD_TOO_LARGE_TO_TRANSLATE';
}

const entry = (reason: FailureReason, detail: string): readonly [FailureReason, string] => Object.freeze([reason, detail] as const);

/** The undici and socket error codes the gateway tells apart, with what they fail over as. */
export const FAILURE_BY_CODE: Readonly<Record<string, readonly [FailureReason, string]>> = Object.freeze({
  UND_ERR_HEADERS_TIMEOUT: entry('timeout', 'timed out waiting for a response'),
  UND_ERR_BODY_TIMEOUT: entry('timeout', 'timed out waiting for a response'),
  UND_ERR_CONNECT_TIMEOUT: entry('timeout', 'timed out connecting'),
  ECONNREFUSED: entry('connect_error', 'connection refused'),
  UND_ERR_CLOSED: entry('connect_error', 'connection pool closed'),
  UND_ERR_DESTROYED: entry('connect_error', 'connection pool closed'),
  UND_ERR_SOCKET: entry('connect_error', 'connection closed by the provider'),
  ECONNRESET: entry('connect_error', 'connection closed by the provider'),
  EPIPE: entry('connect_error', 'connection closed by the provider'),
  ENOTFOUND: entry('connect_error', 'provider host not found'),
  EAI_AGAIN: entry('connect_error', 'provider host not found'),
});

/** Maps an error from the pool or undici to a failover reason and a detail safe to show a client. */
export function upstreamFailure(err: unknown): FailedAttempt {
  if (err instanceof OutOfTime) return { kind: 'failed', reason: 'timeout', detail: `out of time: ${err.message}` };
  if (err instanceof TooLargeToTranslate) return { kind: 'failed', reason: 'status_5xx', detail: err.message };
  const code = typeof err === 'object' && err !== null ? ((err as { code?: unknown }).code ?? '') : '';
  // An own property only: a code such as "constructor" must not find Object's prototype.
  const known = typeof code === 'string' && Object.hasOwn(FAILURE_BY_CODE, code) ? FAILURE_BY_CODE[code] : undefined;
  if (known !== undefined) return { kind: 'failed', reason: known[0], detail: known[1] };
  return { kind: 'failed', reason: 'connect_error', detail: code === '' ? 'request failed' : `request failed (${String(code)})` };
}

/** Whether an upstream status says the gateway's own credential was refused: never the client's fault. */
export function isAuthStatus(status: number): boolean {
  return status === 401 || status === 403;
}

/**
 * An upstream answer whose status fails the attempt (resilience's rule, and a refused
 * credential), with a 429's or 503's `retry-after` when it gave one, and the answer itself.
 */
export function statusFailure(status: number, retryAfterMs: number | null, answer?: UpstreamAnswer): FailedAttempt {
  const reason = isAuthStatus(status) ? 'status_auth' : reasonForStatus(status);
  const failed: FailedAttempt =
    retryAfterMs === null
      ? { kind: 'failed', reason, detail: `HTTP ${status}` }
      : { kind: 'failed', reason, detail: `HTTP ${status}`, retryAfterMs };
  return answer === undefined ? failed : { ...failed, answer };
}

/**
 * What a provider's error body says that its status does not, for a provider whose body
 * carries it (Gemini: a refused key is a 400 with reason API_KEY_INVALID; a 429's delay is
 * RetryInfo, not `retry-after`).
 */
export interface AnswerVerdict {
  /** The provider refused the gateway's credential, whatever the status. */
  readonly keyRefused: boolean;
  /** When to call again, in seconds; null when the body does not say. */
  readonly retryAfterSeconds: number | null;
  /**
   * The answer's fallback class, for a provider whose words the shared reader
   * (resilience's answerClassOf) does not know (Bedrock's "Input is too long for requested
   * model."); absent or null = the shared reader decides.
   */
  readonly answerClass?: FallbackClass | null;
}

/** A response header of the failing answer, by lower-case name: for a provider that names its error there (Bedrock's `x-amzn-errortype`). */
export type AnswerHeader = (name: string) => string | undefined;

export type AnswerReader = (status: number, body: string, header?: AnswerHeader) => AnswerVerdict;

/** Gemini's error body: ErrorInfo's reason names a refused key; RetryInfo gives a 429's delay. */
export const readGeminiAnswer: AnswerReader = (_status, body) => {
  const details = geminiErrorDetails(body);
  return { keyRefused: details.reason !== null && GEMINI_KEY_REASONS.has(details.reason), retryAfterSeconds: details.retryDelaySeconds };
};

/**
 * Bedrock's error answer: its type is the `x-amzn-errortype` header (`ValidationException:
 * http://…`, the type before the first colon), its body only `{"message": …}`. A credential
 * type (AccessDenied, UnrecognizedClient, InvalidSignature, ExpiredToken…) is a refused
 * credential whatever the status; a validation error that says the prompt is over the
 * model's window is the context_length class. Throttling and 5xx types come with their
 * statuses (429, 503, 500), which say as much.
 */
export const readBedrockAnswer: AnswerReader = (status, body, header) => {
  const type = bedrockErrorType(header?.('x-amzn-errortype'));
  if (isBedrockCredentialError(type)) return { keyRefused: true, retryAfterSeconds: null };
  const message = bedrockErrorMessage(body);
  const validation = type === null ? status === 400 || status === 413 : statusOfBedrockError(type, 0) === 400;
  const context = validation && message !== null && isBedrockContextMessage(message);
  return { keyRefused: false, retryAfterSeconds: null, answerClass: context ? 'context_length' : null };
};

/** The status a Bedrock error answer stands for, by its `x-amzn-errortype` (relay's statusOfAnswer); its own without one. */
export function bedrockAnswerStatus(status: number, header: AnswerHeader): number {
  const type = bedrockErrorType(header('x-amzn-errortype'));
  if (type === null) return status;
  // A refused credential keeps its 403 (statusFailure's status_auth) whatever type named it.
  return isBedrockCredentialError(type) ? 403 : statusOfBedrockError(type, status);
}

/** A failing answer whose body said the gateway's credential was refused: as a 401 is. */
export function keyRefusedFailure(status: number, answer: UpstreamAnswer): FailedAttempt {
  return { kind: 'failed', reason: 'status_auth', detail: `HTTP ${status} (the provider refused the key)`, answer };
}

/** A client-error answer of a class the route fails over on (fallback_on): the provider is healthy, the request did not fit it. */
export function classFailure(status: number, kind: FallbackClass, answer: UpstreamAnswer): FailedAttempt {
  return { kind: 'failed', reason: kind, detail: `HTTP ${status} (${kind})`, answer };
}

/** An answer in a content encoding the gateway did not ask for (it asks for identity): the provider misbehaved. */
export function encodingFailure(encoding: string): FailedAttempt {
  const shown = encoding.length <= 32 ? encoding : `${encoding.slice(0, 32)}…`;
  return {
    kind: 'failed',
    reason: 'status_5xx',
    detail: `the provider answered with content-encoding ${JSON.stringify(shown)}, though asked for identity`,
  };
}

/** `retry-after` as delay-seconds or an HTTP date (RFC 9110 10.2.3), in ms from now; null when absent or unreadable. */
export function retryAfterOf(value: string | string[] | undefined, nowMs = Date.now()): number | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
