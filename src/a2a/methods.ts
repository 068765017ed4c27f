// The A2A JSON-RPC methods under both names: 1.0's PascalCase and 0.3's slash names. One table,
// read both ways, so a client's method is known whatever version it speaks and can be renamed
// for an agent that speaks the other.

import type { A2AVersion } from './types.js';

/** What a method does, as far as routing, ids and streaming care. */
export type MethodClass = 'send' | 'stream' | 'get' | 'cancel' | 'subscribe' | 'push-config' | 'list' | 'extended-card';

export interface A2AMethod {
  /** The 1.0 name (`SendMessage`). */
  readonly v1: string;
  /** The 0.3 name (`message/send`); null when 0.3 has no JSON-RPC method for it (ListTasks). */
  readonly v03: string | null;
  readonly cls: MethodClass;
  /** Answered as server-sent events. */
  readonly streams: boolean;
}

const method = (v1: string, v03: string | null, cls: MethodClass, streams = false): A2AMethod => Object.freeze({ v1, v03, cls, streams });

export const A2A_METHODS: readonly A2AMethod[] = Object.freeze([
  method('SendMessage', 'message/send', 'send'),
  method('SendStreamingMessage', 'message/stream', 'stream', true),
  method('GetTask', 'tasks/get', 'get'),
  method('CancelTask', 'tasks/cancel', 'cancel'),
  method('SubscribeToTask', 'tasks/resubscribe', 'subscribe', true),
  method('CreateTaskPushNotificationConfig', 'tasks/pushNotificationConfig/set', 'push-config'),
  method('GetTaskPushNotificationConfig', 'tasks/pushNotificationConfig/get', 'push-config'),
  method('ListTaskPushNotificationConfigs', 'tasks/pushNotificationConfig/list', 'push-config'),
  method('DeleteTaskPushNotificationConfig', 'tasks/pushNotificationConfig/delete', 'push-config'),
  // ListTasks was REST/gRPC only in 0.3: its JSON-RPC binding has no name for it.
  method('ListTasks', null, 'list'),
  method('GetExtendedAgentCard', 'agent/getAuthenticatedExtendedCard', 'extended-card'),
]);

const byName = new Map<string, { readonly method: A2AMethod; readonly version: A2AVersion }>();
for (const m of A2A_METHODS) {
  byName.set(m.v1, Object.freeze({ method: m, version: '1.0' }));
  if (m.v03 !== null) byName.set(m.v03, Object.freeze({ method: m, version: '0.3' }));
}

/** The method a JSON-RPC `method` string names, and the protocol version its spelling belongs to. */
export function methodOf(name: string): { readonly method: A2AMethod; readonly version: A2AVersion } | null {
  return byName.get(name) ?? null;
}

/** The method's name in one version; null when that version has none. */
export function methodName(method: A2AMethod, version: A2AVersion): string | null {
  return version === '1.0' ? method.v1 : method.v03;
}
