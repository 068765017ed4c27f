import { request } from 'undici';
import type { GuardrailErrorKind } from '../../guardrails/index.js';

// One call to a guardrail service (NeMo Guardrails, an operator's webhook): what is asked,
// what a service may answer, and the one HTTP exchange both clients share. A call is bounded
// as a whole (connect, headers and body under one timer) and in size both ways; it is never
// retried and never follows a redirect, so whether a failure serves or refuses the request
// is the caller's `on_error`. Messages name the service's origin and what went wrong: never a
// header value, a checked text, or the body the service answered (it may quote the texts).

export type { CheckedText, ServiceAnswer, ServiceCheck } from '../../guardrails/index.js';

/** A service that could not give a verdict: timed out, failed, or answered something that is not one. */
export class GuardrailServiceError extends Error {
  readonly kind: GuardrailErrorKind;

  constructor(kind: GuardrailErrorKind, message: string) {
    super(message);
    this.name = 'GuardrailServiceError';
    this.kind = kind;
  }
}

export interface ServiceCall {
  /** The service's name in messages: `webhook http://host:port`, `nemo http://host:port`. */
  readonly what: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
  readonly timeoutMs: number;
  /** The largest body posted (null: unbounded). */
  readonly maxSendBytes: number | null;
  readonly maxAnswerBytes: number;
  /** The caller went away: the call is abandoned. */
  readonly signal?: AbortSignal;
}

/** `scheme://host:port` of a service URL: its path or query may carry a token, the origin does not. */
export function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * POSTs `call.body` as JSON and returns the parsed 2xx answer. Throws GuardrailServiceError:
 * `timeout` when the whole exchange outlasts `timeoutMs`, `error` on a network failure, a
 * non-2xx status (a redirect included) or a body over its bound, `invalid` when the answer is
 * not JSON.
 */
export async function postServiceJson(call: ServiceCall): Promise<unknown> {
  const payload = JSON.stringify(call.body);
  const sendBytes = Buffer.byteLength(payload);
  if (call.maxSendBytes !== null && sendBytes > call.maxSendBytes)
    throw new GuardrailServiceError(
      'error',
      `${call.what}: the check is ${sendBytes} bytes, more than max_bytes ${call.maxSendBytes}; not sent`,
    );
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, call.timeoutMs);
  const cancel = (): void => controller.abort();
  if (call.signal?.aborted === true) cancel();
  else call.signal?.addEventListener('abort', cancel, { once: true });
  try {
    const text = await exchange(call, payload, controller.signal);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new GuardrailServiceError('invalid', `${call.what} answered a body that is not JSON`);
    }
  } catch (err) {
    if (err instanceof GuardrailServiceError) throw err;
    if (timedOut) throw new GuardrailServiceError('timeout', `${call.what} did not answer within ${call.timeoutMs} ms`);
    if (call.signal?.aborted === true) throw new GuardrailServiceError('error', `${call.what}: the check was cancelled`);
    throw new GuardrailServiceError('error', `${call.what} failed (${errorCode(err)})`);
  } finally {
    clearTimeout(timer);
    call.signal?.removeEventListener('abort', cancel);
  }
}

async function exchange(call: ServiceCall, payload: string, signal: AbortSignal): Promise<string> {
  const res = await request(call.url, {
    method: 'POST',
    // The operator's headers first: the body is JSON whatever they say.
    headers: { ...lowerCased(call.headers), 'content-type': 'application/json', accept: 'application/json' },
    body: payload,
    signal,
  });
  if (res.statusCode < 200 || res.statusCode > 299) {
    discard(res.body);
    throw new GuardrailServiceError('error', `${call.what} answered ${res.statusCode}`);
  }
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > call.maxAnswerBytes) {
    discard(res.body);
    throw tooLarge(call);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > call.maxAnswerBytes) {
      discard(res.body);
      throw tooLarge(call);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Drops an answer's body unread. undici reports a body destroyed before its end as an abort
 * error on the stream, which nothing else listens to: without a listener it would be thrown
 * as an uncaught exception.
 */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => {});
  body.destroy();
}

function tooLarge(call: ServiceCall): GuardrailServiceError {
  return new GuardrailServiceError('error', `${call.what} answered more than ${call.maxAnswerBytes} bytes`);
}

function lowerCased(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}

/** A network error's code (`ECONNREFUSED`, `UND_ERR_SOCKET`), never its message, which can hold a URL. */
function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code)) return code;
  return err instanceof Error && /^[A-Za-z]{1,64}$/.test(err.name) ? err.name : 'error';
}

const CATEGORY_MAX = 16;

/**
 * A service's category names as the verdict keeps them: lower-case `[a-z0-9_]`, at most 64
 * characters, each once, at most 16. A service's names reach metrics labels and refusal
 * messages, so they are bounded like the config's own (`self check input` → `self_check_input`).
 */
export function categoryNames(names: readonly string[]): string[] {
  const out: string[] = [];
  for (const name of names) {
    const clean = name
      .toLowerCase()
      .replace(/[^a-z0-9_]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 64);
    if (clean !== '' && !out.includes(clean)) out.push(clean);
    if (out.length === CATEGORY_MAX) break;
  }
  return out;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
