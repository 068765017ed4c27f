import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
import { constants as h2 } from 'node:http2';

/**
 * One request and its response, with the state the handlers share while answering it. Over
 * HTTP/2 (Bedrock's h2c) `req` and `res` are Node's compatibility objects, which offer the
 * same methods the handlers use; only the connection differs (see `sever` and `drop`).
 */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Provider name, echoed in `x-mock-provider` on every response. */
  readonly name: string;
  /** Request path without its query string. */
  readonly path: string;
  /** The query string, without its `?` ('' for none). */
  readonly query: string;
  body: string;
  /** The body's bytes, kept only where a signature covers them (Bedrock); `body` is their UTF-8. */
  raw?: Buffer;
  /** The connection went away; nothing more may be written and timers must stop. */
  closed: boolean;
  /** The mock dropped the connection on purpose (a fault), so it is not a client abort. */
  severed: boolean;
}

/** `extra`: more response headers (a status fault's), never the ones set here. */
export function replyJson(ex: Exchange, status: number, text: string, extra?: Readonly<Record<string, string>>): void {
  ex.res.writeHead(status, {
    ...extra,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-mock-provider': ex.name,
  });
  ex.res.end(text);
}

export type OpenAiErrorType = 'invalid_request_error' | 'server_error' | 'requests';

export function openAiError(message: string, type: OpenAiErrorType, code: string | null = null, param: string | null = null): string {
  return JSON.stringify({ error: { message, type, param, code } });
}

/**
 * Anthropic's error type by status. A copy of src/providers/canonical/anthropic-error-types.ts,
 * since the mock imports nothing from the gateway; test/mock/anthropic-error-types.test.ts
 * fails when the two differ. 503 is not in Anthropic's list but reads as its 529.
 */
export const ANTHROPIC_ERROR_TYPES: Readonly<Record<number, string>> = Object.freeze({
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
});

/** Any other 4xx gets Anthropic's 400 type, any other 5xx its 500 type. */
export function anthropicErrorTypeOfClass(status: number): string {
  return status < 500 ? 'invalid_request_error' : 'api_error';
}

export function anthropicErrorType(status: number): string {
  return ANTHROPIC_ERROR_TYPES[status] ?? anthropicErrorTypeOfClass(status);
}

export function anthropicError(message: string, type: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

export function replyAnthropicInvalid(ex: Exchange, message: string): void {
  replyJson(ex, 400, anthropicError(message, 'invalid_request_error'));
}

/** Google's canonical status names, as a Gemini error carries them beside the HTTP code. */
const GOOGLE_STATUS: Readonly<Record<number, string>> = Object.freeze({
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'NOT_IMPLEMENTED',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
});

/** A Gemini API error body: `{"error": {"code", "message", "status", "details"?}}`. */
export function geminiError(status: number, message: string, details?: readonly Record<string, unknown>[]): string {
  const name = GOOGLE_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
  const error: Record<string, unknown> = { code: status, message, status: name };
  if (details !== undefined) error.details = details;
  return JSON.stringify({ error });
}

export function replyInvalid(ex: Exchange, status: number, message: string): void {
  replyJson(ex, status, openAiError(message, 'invalid_request_error'));
}

export function replyNotFound(ex: Exchange): void {
  replyInvalid(ex, 404, `No route for ${ex.req.method ?? 'GET'} ${ex.path}.`);
}

export function replyMethodNotAllowed(ex: Exchange, allow: string): void {
  ex.res.setHeader('allow', allow);
  replyInvalid(ex, 405, `Method ${ex.req.method ?? 'GET'} is not allowed on ${ex.path}; use ${allow}.`);
}

/**
 * Waits `ms`, or less if the connection closes first, so a client that goes away never leaves a
 * timer behind (close() must resolve promptly and the test runner must be able to exit).
 */
export function pause(ex: Exchange, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      ex.res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    ex.res.once('close', done);
  });
}

/** Waits for the response to accept more data, or for the connection to close. */
export function drained(ex: Exchange): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      ex.res.off('drain', done);
      ex.res.off('close', done);
      resolve();
    };
    ex.res.once('drain', done);
    ex.res.once('close', done);
  });
}

/**
 * Drops the connection after whatever was already written reaches the kernel. `end()` uncorks
 * and flushes first (Node corks chunked responses until the next tick), so the client really
 * receives the partial response before the connection disappears.
 */
export function sever(ex: Exchange): void {
  ex.severed = true;
  const stream = http2StreamOf(ex);
  // HTTP/2 cuts one stream, not the connection the client may share: a RST_STREAM after the data.
  if (stream !== undefined) {
    // A reset discards DATA frames still queued, so it waits until what was written went out.
    stream.write(Buffer.alloc(0), () => stream.close(h2.NGHTTP2_INTERNAL_ERROR));
    return;
  }
  const socket = ex.req.socket;
  socket.end(() => socket.destroy());
}

/**
 * A JSON body cut halfway: the declared length promises more than arrives, which is how a
 * cut shows up to a client reading JSON (a `cut_stream` fault on a non-streamed request).
 */
export function replyTruncated(ex: Exchange, text: string): void {
  ex.res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-mock-provider': ex.name,
  });
  ex.res.write(text.slice(0, text.length >> 1));
  sever(ex);
}

/** Drops the connection at once, without answering. */
export function drop(ex: Exchange): void {
  ex.severed = true;
  const stream = http2StreamOf(ex);
  if (stream !== undefined) return void stream.session?.destroy();
  ex.req.socket.destroy();
}

/** The HTTP/2 stream under a compatibility response; undefined over HTTP/1. */
function http2StreamOf(ex: Exchange): ServerHttp2Stream | undefined {
  return ex.req.httpVersionMajor === 2 ? (ex.res as unknown as { stream: ServerHttp2Stream }).stream : undefined;
}

/**
 * The body of an OpenAI-style model request: a JSON object with a non-empty `model`. Answers
 * the client's mistake (400, OpenAI's wording) and returns null when it is not one.
 */
export function readModelRequest(ex: Exchange): { readonly payload: Record<string, unknown>; readonly model: string } | null {
  let payload: unknown;
  try {
    payload = JSON.parse(ex.body);
  } catch {
    replyInvalid(ex, 400, 'The request body is not valid JSON.');
    return null;
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    replyInvalid(ex, 400, 'The request body must be a JSON object.');
    return null;
  }
  const model = (payload as Record<string, unknown>).model;
  if (typeof model !== 'string' || model === '') {
    replyInvalid(ex, 400, 'You must provide a model parameter.');
    return null;
  }
  return { payload: payload as Record<string, unknown>, model };
}
