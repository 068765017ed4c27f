// Translating one JSON-RPC exchange between a client and an agent that speak different A2A
// versions: the request's method and params on the way in, the result, each stream event and
// the error on the way out. Same-version pairs are returned untouched. The outcomes follow the
// reference SDK's 0.3 compatibility layer, field for field, so a client cannot tell the gateway
// from an agent built on that SDK. Nothing here throws: a request that cannot be translated is
// refused with the JSON-RPC error a client expects, and an answer that cannot be is handed on
// as the agent sent it.

import { messageTo1, messageTo03 } from './messages.js';
import type { A2AMethod } from './methods.js';
import { REQUESTS } from './requests.js';
import {
  artifactUpdateTo1,
  artifactUpdateTo03,
  statusUpdateTo1,
  statusUpdateTo03,
  taskPushConfigTo1,
  taskPushConfigTo03,
  taskTo1,
  taskTo03,
} from './tasks.js';
import { A2A_ERRORS, type A2AVersion, type JsonRpcErrorObject } from './types.js';
import { isObject, type JsonObject, member, ShapeError } from './wire.js';

export type TranslatedRequest =
  | { readonly ok: true; readonly method: string; readonly params: unknown }
  | { readonly ok: false; readonly error: JsonRpcErrorObject };

const invalidParams = (message: string): JsonRpcErrorObject => ({ code: A2A_ERRORS.invalidParams, message });

/** The request as the agent's version names and shapes it, or the error to answer the client with. */
export function translateRequest(method: A2AMethod, params: unknown, from: A2AVersion, to: A2AVersion): TranslatedRequest {
  const name = to === '1.0' ? method.v1 : method.v03;
  if (name === null) {
    return {
      ok: false,
      error: {
        code: A2A_ERRORS.unsupportedOperation,
        message: `${method.v1} is not supported: the agent speaks A2A ${to}, which has no JSON-RPC method for it`,
      },
    };
  }
  if (from === to) return { ok: true, method: name, params };
  const convert = REQUESTS[method.v1]?.[to === '1.0' ? 0 : 1];
  if (convert === undefined) return { ok: true, method: name, params };
  try {
    return { ok: true, method: name, params: convert(params, 'params') };
  } catch (err) {
    if (err instanceof ShapeError) return { ok: false, error: invalidParams(err.message) };
    return { ok: false, error: invalidParams(`params: ${err instanceof Error ? err.message : 'could not be read'}`) };
  }
}

// ---- answers ----------------------------------------------------------------------------

// A 1.0 result or event names its payload by member (`{"task": {...}}`); 0.3 tags it with `kind`.
const PAYLOAD_BY_KIND: ReadonlyMap<unknown, readonly [string, (v: unknown, p: string) => JsonObject]> = new Map([
  ['task', ['task', taskTo1]],
  ['message', ['message', messageTo1]],
  ['status-update', ['statusUpdate', statusUpdateTo1]],
  ['artifact-update', ['artifactUpdate', artifactUpdateTo1]],
] as const);

const PAYLOAD_BY_MEMBER: readonly (readonly [string, (v: unknown, p: string) => JsonObject])[] = [
  ['task', taskTo03],
  ['message', messageTo03],
  ['statusUpdate', statusUpdateTo03],
  ['artifactUpdate', artifactUpdateTo03],
];

function payloadTo1(result: unknown): unknown {
  if (!isObject(result)) return result;
  const entry = PAYLOAD_BY_KIND.get(result.kind);
  if (entry === undefined) return result;
  return { [entry[0]]: entry[1](result, 'result') };
}

function payloadTo03(result: unknown): unknown {
  if (!isObject(result)) return result;
  for (const [key, convert] of PAYLOAD_BY_MEMBER) {
    const value = member(result, key);
    if (value !== undefined && value !== null) return convert(value, `result.${key}`);
  }
  return result;
}

function resultTo1(method: A2AMethod, result: unknown): unknown {
  switch (method.v1) {
    case 'SendMessage':
    case 'SendStreamingMessage':
    case 'SubscribeToTask':
      return payloadTo1(result);
    case 'GetTask':
    case 'CancelTask':
      return taskTo1(result, 'result');
    case 'CreateTaskPushNotificationConfig':
    case 'GetTaskPushNotificationConfig':
      return taskPushConfigTo1(result, 'result');
    case 'ListTaskPushNotificationConfigs': {
      if (!Array.isArray(result)) return result;
      const configs = result.map((c, i) => taskPushConfigTo1(c, `result[${i}]`));
      return configs.length > 0 ? { configs } : {};
    }
    default:
      return result;
  }
}

function resultTo03(method: A2AMethod, result: unknown): unknown {
  switch (method.v1) {
    case 'SendMessage':
    case 'SendStreamingMessage':
    case 'SubscribeToTask':
      return payloadTo03(result);
    case 'GetTask':
    case 'CancelTask':
      return taskTo03(result, 'result');
    case 'CreateTaskPushNotificationConfig':
    case 'GetTaskPushNotificationConfig':
      return taskPushConfigTo03(result, 'result');
    case 'ListTaskPushNotificationConfigs': {
      if (!isObject(result)) return result;
      const configs = Array.isArray(result.configs) ? result.configs : [];
      return configs.map((c, i) => taskPushConfigTo03(c, `result.configs[${i}]`));
    }
    default:
      return result;
  }
}

/**
 * A non-streamed result as the client's version shapes it. The extended agent card and
 * ListTasks (1.0 only) pass as they are; a result that cannot be read is handed on unchanged.
 */
export function translateResult(method: A2AMethod, result: unknown, from: A2AVersion, to: A2AVersion): unknown {
  if (from === to) return result;
  try {
    return to === '1.0' ? resultTo1(method, result) : resultTo03(method, result);
  } catch {
    return result;
  }
}

/** One stream event's `result` as the client's version shapes it; unreadable events pass unchanged. */
export function translateEvent(result: unknown, from: A2AVersion, to: A2AVersion): unknown {
  if (from === to) return result;
  try {
    return to === '1.0' ? payloadTo1(result) : payloadTo03(result);
  } catch {
    return result;
  }
}

// ---- errors -----------------------------------------------------------------------------

// 1.0 errors carry a `google.rpc.ErrorInfo` in `data` naming the reason; 0.3 errors never did.
const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
const ERROR_DOMAIN = 'a2a-protocol.org';
const REASON_BY_CODE: ReadonlyMap<number, string> = new Map([
  [A2A_ERRORS.taskNotFound, 'TASK_NOT_FOUND'],
  [A2A_ERRORS.taskNotCancelable, 'TASK_NOT_CANCELABLE'],
  [A2A_ERRORS.pushNotificationNotSupported, 'PUSH_NOTIFICATION_NOT_SUPPORTED'],
  [A2A_ERRORS.unsupportedOperation, 'UNSUPPORTED_OPERATION'],
  [A2A_ERRORS.contentTypeNotSupported, 'CONTENT_TYPE_NOT_SUPPORTED'],
  [A2A_ERRORS.invalidAgentResponse, 'INVALID_AGENT_RESPONSE'],
  [A2A_ERRORS.extendedCardNotConfigured, 'EXTENDED_AGENT_CARD_NOT_CONFIGURED'],
  [A2A_ERRORS.invalidParams, 'INVALID_PARAMS'],
]);

const isDetailList = (data: unknown): boolean => Array.isArray(data) && data.every((d) => isObject(d) && typeof d['@type'] === 'string');

/**
 * An error as the client's version shapes it. Codes are shared; going to 0.3 the 1.0 detail
 * list is dropped, going to 1.0 an A2A error gains its ErrorInfo (other codes keep their data).
 */
export function translateError(error: JsonRpcErrorObject, from: A2AVersion, to: A2AVersion): JsonRpcErrorObject {
  if (from === to) return error;
  const raw: unknown = error;
  if (!isObject(raw)) return { code: A2A_ERRORS.internalError, message: 'The agent sent an unreadable error' };
  const code = typeof raw.code === 'number' ? raw.code : A2A_ERRORS.internalError;
  const message = typeof raw.message === 'string' ? raw.message : '';
  if (to === '0.3') {
    return raw.data === undefined || isDetailList(raw.data) ? { code, message } : { code, message, data: raw.data };
  }
  const reason = REASON_BY_CODE.get(code);
  if (reason !== undefined) {
    return { code, message, data: [{ '@type': ERROR_INFO_TYPE, reason, domain: ERROR_DOMAIN }] };
  }
  return raw.data === undefined ? { code, message } : { code, message, data: raw.data };
}
