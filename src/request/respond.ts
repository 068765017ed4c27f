import type { ServerResponse } from 'node:http';
import { anthropicErrorBody, type ErrorCode, openaiErrorBody, SwitchyardError, statusOf } from '../errors.js';
import type { JsonRpcId } from '../mcp/index.js';
import type { ChatProtocol } from '../providers/index.js';
import { ClientGoneError } from './body.js';
import { errorText, gatewayError } from './mcp/messages.js';
import type { Services } from './services.js';

/**
 * The shapes an error is rendered in: the client's chat protocol (OpenAI's, also the admin
 * API's, or Anthropic's), or JSON-RPC for /mcp, whose body carries the request's id and the
 * stable code in `error.data.code`.
 */
export type ErrorDialect = ChatProtocol | 'jsonrpc';

/** How an error is rendered beyond its code: its dialect, the JSON-RPC id it answers, a status other than the catalog's. */
export interface ErrorRendering {
  readonly dialect: ErrorDialect;
  /** The JSON-RPC request's id, when one could be read (jsonrpc only). */
  readonly id?: JsonRpcId | null;
  /** A transport status that says more than the code's (415, 406 on /mcp); absent = the catalog's. */
  readonly status?: number;
}

/** Sends an error in its dialect. No attribution headers: an error names no provider. */
function sendError(
  res: ServerResponse,
  how: ErrorRendering,
  code: ErrorCode,
  message: string,
  param: string | null = null,
  extra?: Readonly<Record<string, string>>,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body =
    how.dialect === 'anthropic'
      ? anthropicErrorBody(code, message)
      : how.dialect === 'jsonrpc'
        ? errorText(how.id ?? null, gatewayError(code, message))
        : openaiErrorBody(code, message, param);
  res.writeHead(how.status ?? statusOf(code), {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extra,
  });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendBody(res, status, JSON.stringify(value), 'application/json');
}

export function sendBody(res: ServerResponse, status: number, body: string, contentType: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** What failRequest needs of a request: its response, and where to note the refusal's code. */
export interface Answerable {
  readonly res: ServerResponse;
  failed(code: ErrorCode): void;
  /** The client's protocol; absent = OpenAI's (and the admin API's) shape. */
  readonly protocol?: ChatProtocol;
  /** The request's id, sent as `x-switchyard-request-id` on the error as on any answer, so a client can quote it; absent = none. */
  readonly requestId?: string;
}

/**
 * The one error path of both listeners: a refusal is answered in the client's dialect
 * with its stable code; a client that already left gets nothing; anything unexpected is
 * logged and answered 500 without its details. `how` = the client's protocol's shape.
 */
export function failRequest(x: Answerable, err: unknown, svc: Services, how: ErrorRendering = { dialect: x.protocol ?? 'openai' }): void {
  if (err instanceof ClientGoneError) {
    // Nobody is left to answer: the record counts it as nginx's 499, without an error line.
    x.res.destroy();
    return;
  }
  if (err instanceof SwitchyardError) {
    x.failed(err.code);
    // The client may still be sending a body we refused: close rather than read it all.
    const closing = err.code === 'body_too_large' ? { ...err.headers, connection: 'close' } : err.headers;
    sendError(x.res, how, err.code, err.message, err.param, withRequestId(x, closing));
    return;
  }
  x.failed('internal_error');
  svc.logger.error({
    msg: 'unexpected error while handling a request',
    err: { message: (err as Error)?.message, stack: (err as Error)?.stack },
  });
  sendError(x.res, how, 'internal_error', 'internal error; see the gateway log', null, withRequestId(x, undefined));
}

function withRequestId(x: Answerable, headers: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> | undefined {
  const id = x.requestId;
  if (id === undefined) return headers;
  return headers === undefined ? { 'x-switchyard-request-id': id } : { ...headers, 'x-switchyard-request-id': id };
}
