import type { EventSourceMessage } from 'eventsource-parser';
import type { ProviderPool, UpstreamCall } from '../providers/index.js';
import type { StopSignal } from './stop.js';
import type { CallFailureReason, CallOutcome, JsonRpcError, JsonRpcId, JsonRpcNotification } from './types.js';
import { type AnswerHead, type ExchangeEnd, exchange, startExchange } from './upstream-exchange.js';

// One JSON-RPC message to an MCP server over Streamable HTTP, and its answer. A request's
// answer is one JSON body or an event stream: the server's notifications and requests,
// then the response with the request's id. A stream the server closes before the response
// is resumed by GET with Last-Event-ID when its events carried ids (the server may end a
// stream early to shed a long call's connection); without ids nothing can be resumed.

/** Attempts at resuming one request's event stream. */
const MAX_RESUMES = 3;
/** The longest wait before a resume, whatever the server's `retry:` asks. */
const MAX_RESUME_DELAY_MS = 3000;
/** How long a stream may stay open after its response before it is cut. */
const AFTER_RESPONSE_GRACE_MS = 2000;

/** Where and how a message goes: the headers already hold the session's. */
export interface RpcRoute {
  readonly pool: ProviderPool;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly timeoutMs: number;
  /** The caller's signal (or the upstream's lifetime when the caller has none). */
  readonly signal: StopSignal;
  /** The upstream's lifetime, when `signal` is the caller's: either one ends the request. */
  readonly stopSignal?: StopSignal;
  /** Removes anything secret from a text the server sent, before it goes in a detail. */
  readonly redact: (text: string) => string;
}

/** A JSON-RPC response as received: exactly one of `result` and `error`. */
export interface RpcResponse {
  readonly id: JsonRpcId;
  readonly result?: unknown;
  readonly error?: unknown;
}

/** A request from the server on a call's stream, answered by the caller's `onServerRequest`. */
export interface ServerRequest {
  readonly id: JsonRpcId;
  readonly method: string;
}

export type RpcAnswer =
  | {
      readonly kind: 'response';
      readonly response: RpcResponse;
      readonly head: AnswerHead;
      /** The result's text as sent, when a plain answer has the usual shape (resultTextOf). */
      readonly resultJson?: string;
    }
  | { readonly kind: 'accepted'; readonly head: AnswerHead }
  | { readonly kind: 'status'; readonly status: number; readonly detail: string; readonly head: AnswerHead }
  | { readonly kind: 'failed'; readonly reason: CallFailureReason; readonly reached: boolean; readonly detail: string };

export interface RequestHooks {
  readonly onNotification?: (n: JsonRpcNotification) => void;
  readonly onServerRequest: (r: ServerRequest) => void;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Sends a notification or a response to the server: its answer is a 202 with no body. */
export async function sendMessage(route: RpcRoute, message: Record<string, unknown>): Promise<RpcAnswer> {
  const end = await exchange({ pool: route.pool, call: post(route, message), signal: route.signal, stopSignal: route.stopSignal }).done;
  if (end.kind === 'failed') return { kind: 'failed', reason: end.reason, reached: end.reason !== 'refused', detail: end.detail };
  if (end.head.status === 202 || end.head.status === 200) return { kind: 'accepted', head: end.head };
  return statusAnswer(route, end.head, end.body);
}

/** Sends a request and waits for its response (see above). */
export async function sendRequest(
  route: RpcRoute,
  id: number,
  method: string,
  params: Record<string, unknown>,
  hooks: RequestHooks,
): Promise<RpcAnswer> {
  // Filled by the stream's events (closures, hence one object rather than narrowed locals).
  const got: {
    response: RpcResponse | null;
    unreadable: string | null;
    head: AnswerHead | null;
    lastEventId: string | null;
    retryMs: number | null;
  } = { response: null, unreadable: null, head: null, lastEventId: null, retryMs: null };
  let responded: () => void = () => undefined;
  const onEvent = (event: EventSourceMessage): void => {
    if (event.id !== undefined && event.id !== '') got.lastEventId = event.id;
    if (got.response !== null || got.unreadable !== null || event.data === '') return;
    if (event.event !== undefined && event.event !== 'message') return;
    const message = parseMessage(event.data);
    if (message === null) got.unreadable = 'an event that is not a JSON-RPC message';
    else got.response = take(message, id, hooks);
    if (got.response !== null || got.unreadable !== null) responded();
  };
  const onHead = (head: AnswerHead): void => {
    got.head ??= head;
  };
  const onRetry = (ms: number): void => {
    got.retryMs = ms;
  };

  let call: UpstreamCall = post(route, { jsonrpc: '2.0', id, method, params });
  for (let resume = 0; ; resume += 1) {
    // One promise per exchange: it settles at the exchange's end, or sooner when an event
    // stream has delivered the response (its end is then not awaited, and cut if it lingers).
    const step: { ended: boolean; cut: NodeJS.Timeout | null } = { ended: false, cut: null };
    let cancel: () => void = () => undefined;
    const end = await new Promise<ExchangeEnd | null>((resolve) => {
      responded = () => resolve(null);
      const spec = { pool: route.pool, call, signal: route.signal, stopSignal: route.stopSignal, onHead, onEvent, onRetry };
      cancel = startExchange(spec, (ended) => {
        step.ended = true;
        if (step.cut !== null) clearTimeout(step.cut);
        resolve(ended);
      });
    });
    if (got.unreadable !== null) {
      cancel();
      return { kind: 'failed', reason: 'malformed', reached: true, detail: got.unreadable };
    }
    if (got.response !== null && got.head !== null) {
      if (end === null && !step.ended) {
        step.cut = setTimeout(cancel, AFTER_RESPONSE_GRACE_MS);
        step.cut.unref();
      }
      return { kind: 'response', response: got.response, head: got.head };
    }
    const settled = end as ExchangeEnd;
    if (settled.kind === 'complete' && !settled.head.eventStream) {
      if (resume === 0) return plainAnswer(route, settled.head, settled.body, id);
      return { kind: 'failed', reason: 'dropped', reached: true, detail: `resuming the event stream: HTTP ${settled.head.status}` };
    }
    const lastEventId = got.lastEventId;
    const resumable = got.head?.eventStream === true && lastEventId !== null;
    if (settled.kind === 'failed' && (settled.reason !== 'dropped' || !resumable)) {
      const reached = settled.reason !== 'refused';
      return { kind: 'failed', reason: settled.reason, reached, detail: settled.detail };
    }
    if (lastEventId === null)
      return { kind: 'failed', reason: 'dropped', reached: true, detail: 'the event stream ended before the response' };
    if (resume >= MAX_RESUMES) return { kind: 'failed', reason: 'dropped', reached: true, detail: 'the event stream could not be resumed' };
    if (!(await pause(Math.min(got.retryMs ?? 100, MAX_RESUME_DELAY_MS), route.signal))) {
      return { kind: 'failed', reason: 'aborted', reached: true, detail: 'aborted by the caller' };
    }
    const resumed = get(route);
    call = { ...resumed, headers: { ...resumed.headers, 'last-event-id': lastEventId } };
  }
}

/** A request's answer that is no event stream: a 200 with the JSON response, a 202, or another status. */
function plainAnswer(route: RpcRoute, head: AnswerHead, body: Buffer, id: number): RpcAnswer {
  if (head.status === 202) return { kind: 'accepted', head };
  if (head.status !== 200) return statusAnswer(route, head, body);
  const text = body.toString('utf8');
  const message = parseMessage(text);
  if (!Array.isArray(message)) {
    if (isObject(message) && message.id === id && ('result' in message || 'error' in message))
      return { kind: 'response', response: message as unknown as RpcResponse, head, resultJson: resultTextOf(text, message, id) };
    return { kind: 'failed', reason: 'malformed', reached: true, detail: 'the answer holds no response to the request' };
  }
  const messages = message;
  for (const m of messages) {
    if (isObject(m) && m.id === id && ('result' in m || 'error' in m))
      return { kind: 'response', response: m as unknown as RpcResponse, head };
  }
  return { kind: 'failed', reason: 'malformed', reached: true, detail: 'the answer holds no response to the request' };
}

/**
 * The result's JSON text, cut out of the answer as sent, so a caller that relays it need
 * not serialise the parsed form again. Only for the shape servers write (the official
 * SDK's: `{"result":…,"jsonrpc":"2.0","id":N}`, no space, no other member): then the
 * text between the two is the result. Any other shape gives undefined, and the caller
 * serialises the parsed result. (A `result` given twice would be cut out with both: the
 * client's parser then reads the last, as JSON.parse did here.)
 */
function resultTextOf(text: string, message: Record<string, unknown>, id: number): string | undefined {
  if (!text.startsWith(RESULT_HEAD) || !isObject(message.result)) return undefined;
  const tail = `,"jsonrpc":"2.0","id":${id}}`;
  if (!text.endsWith(tail) || Object.keys(message).length !== 3) return undefined;
  return text.slice(RESULT_HEAD.length, text.length - tail.length);
}

const RESULT_HEAD = '{"result":';

function statusAnswer(route: RpcRoute, head: AnswerHead, body: Buffer): RpcAnswer {
  const text = route.redact(body.toString('utf8')).slice(0, 200);
  return { kind: 'status', status: head.status, detail: text === '' ? `HTTP ${head.status}` : `HTTP ${head.status}: ${text}`, head };
}

/** The response to `id`, or null after handing a notification or a server request on. */
function take(message: unknown, id: number, hooks: RequestHooks): RpcResponse | null {
  if (!isObject(message)) return null;
  const hasId = typeof message.id === 'string' || typeof message.id === 'number';
  if (typeof message.method === 'string') {
    if (hasId) hooks.onServerRequest({ id: message.id as JsonRpcId, method: message.method });
    else hooks.onNotification?.(message as unknown as JsonRpcNotification);
    return null;
  }
  if (message.id === id && ('result' in message || 'error' in message)) return message as unknown as RpcResponse;
  return null;
}

function parseMessage(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function post(route: RpcRoute, message: Record<string, unknown>): UpstreamCall {
  const body = JSON.stringify(message);
  return { method: 'POST' as const, path: route.path, headers: route.headers, body, timeoutMs: route.timeoutMs };
}

/** A GET for an event stream: the standing one, or a request's resumed. */
export function get(route: RpcRoute): UpstreamCall {
  return {
    method: 'GET' as const,
    path: route.path,
    headers: { ...route.headers, accept: 'text/event-stream' },
    body: null,
    timeoutMs: route.timeoutMs,
  };
}

/** Waits, or less if the signal aborts; false when it aborted. */
export function pause(ms: number, signal: StopSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A request's answer as a call's outcome: the server's result or error exactly as sent, or why there is none. */
export function outcomeOf(answer: RpcAnswer): CallOutcome {
  switch (answer.kind) {
    case 'failed':
      return { kind: 'failed', reason: answer.reason, reached: answer.reached, detail: answer.detail };
    case 'status':
      return { kind: 'failed', reason: 'status', reached: true, status: answer.status, detail: answer.detail };
    case 'accepted':
      return { kind: 'failed', reason: 'malformed', reached: true, detail: `HTTP ${answer.head.status} without a response` };
  }
  const { response } = answer;
  if ('error' in response) {
    const error = response.error;
    if (isObject(error) && typeof error.code === 'number' && typeof error.message === 'string') {
      return { kind: 'error', error: error as unknown as JsonRpcError };
    }
  } else if (isObject(response.result)) {
    const resultJson = answer.resultJson;
    return resultJson === undefined ? { kind: 'result', result: response.result } : { kind: 'result', result: response.result, resultJson };
  }
  return { kind: 'failed', reason: 'malformed', reached: true, detail: 'a response that is not JSON-RPC' };
}

/** What went wrong with an answer that was not a result, for a problem's message. */
export function describeFailure(outcome: CallOutcome): string {
  if (outcome.kind === 'result') return 'a result';
  if (outcome.kind === 'error') return `the server answered error ${outcome.error.code}: ${outcome.error.message.slice(0, 200)}`;
  return outcome.detail;
}
