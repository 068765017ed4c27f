// What a request or an answer says about tasks and contexts: the ids a follow-up is routed by,
// the ids and state an agent's answer teaches, and the webhook URLs a request would hand an
// agent. Every reader takes untrusted JSON and never throws; what it cannot read it leaves out.

import type { A2AMethod } from './methods.js';
import { stateName } from './states.js';
import { type A2AVersion, type LearnedIds, type TaskStateName, TERMINAL_STATES } from './types.js';
import { isObject, type JsonObject, member, nonEmpty } from './wire.js';

/** The task or context a request names (the follow-up routing key). */
export interface NamedIds {
  readonly taskId?: string;
  readonly contextId?: string;
}

const NOTHING: LearnedIds = Object.freeze({ terminal: false });

function named(taskId: unknown, contextId?: unknown): NamedIds {
  const out: { taskId?: string; contextId?: string } = {};
  const t = nonEmpty(taskId);
  const c = nonEmpty(contextId);
  if (t !== undefined) out.taskId = t;
  if (c !== undefined) out.contextId = c;
  return out;
}

export function requestIds(method: A2AMethod, version: A2AVersion, params: unknown): NamedIds {
  if (!isObject(params)) return {};
  switch (method.cls) {
    case 'send':
    case 'stream': {
      const message = params.message;
      if (!isObject(message)) return {};
      return version === '1.0' ? named(member(message, 'taskId'), member(message, 'contextId')) : named(message.taskId, message.contextId);
    }
    case 'get':
    case 'cancel':
    case 'subscribe':
      return named(params.id);
    case 'push-config':
      // 0.3's set names the task `taskId`; its get, list and delete name it `id`.
      if (version === '1.0') return named(member(params, 'taskId'));
      return named(method.v1 === 'CreateTaskPushNotificationConfig' ? params.taskId : params.id);
    default:
      return {};
  }
}

function learned(taskId: unknown, contextId: unknown, state: TaskStateName | undefined): LearnedIds {
  const out: { taskId?: string; contextId?: string; terminal: boolean; state?: TaskStateName } = {
    ...named(taskId, contextId),
    terminal: state !== undefined && TERMINAL_STATES.has(state),
  };
  if (state !== undefined) out.state = state;
  return out;
}

const statusState = (version: A2AVersion, o: JsonObject): TaskStateName | undefined =>
  isObject(o.status) ? stateName(version, o.status.state) : undefined;

function taskIds(version: A2AVersion, task: unknown): LearnedIds {
  if (!isObject(task)) return NOTHING;
  return learned(task.id, version === '1.0' ? member(task, 'contextId') : task.contextId, statusState(version, task));
}

function messageIds(version: A2AVersion, message: unknown): LearnedIds {
  if (!isObject(message)) return NOTHING;
  return version === '1.0'
    ? learned(member(message, 'taskId'), member(message, 'contextId'), undefined)
    : learned(message.taskId, message.contextId, undefined);
}

function updateIds(version: A2AVersion, event: unknown): LearnedIds {
  if (!isObject(event)) return NOTHING;
  return version === '1.0'
    ? learned(member(event, 'taskId'), member(event, 'contextId'), statusState(version, event))
    : learned(event.taskId, event.contextId, statusState(version, event));
}

/** One stream event's `result` (also a SendMessage result, which is one of the same payloads). */
export function eventIds(version: A2AVersion, result: unknown): LearnedIds {
  if (!isObject(result)) return NOTHING;
  if (version === '0.3') {
    switch (result.kind) {
      case 'task':
        return taskIds(version, result);
      case 'message':
        return messageIds(version, result);
      case 'status-update':
      case 'artifact-update':
        return updateIds(version, result);
      default:
        return NOTHING;
    }
  }
  const task = member(result, 'task');
  if (isObject(task)) return taskIds(version, task);
  const message = member(result, 'message');
  if (isObject(message)) return messageIds(version, message);
  const update = member(result, 'statusUpdate') ?? member(result, 'artifactUpdate');
  return updateIds(version, update);
}

/** A non-streamed result. */
export function resultIds(method: A2AMethod, version: A2AVersion, result: unknown): LearnedIds {
  switch (method.cls) {
    case 'send':
    case 'stream':
    case 'subscribe':
      return eventIds(version, result);
    case 'get':
    case 'cancel':
      return taskIds(version, result);
    default:
      return NOTHING;
  }
}

/**
 * The webhook URLs a request would hand the agent, for the caller to vet. A config whose URL is
 * missing or not a string yields '' so that the caller refuses it rather than overlooks it.
 */
export function pushUrlsOf(method: A2AMethod, version: A2AVersion, params: unknown): string[] {
  if (!isObject(params)) return [];
  let config: unknown;
  if (method.cls === 'send' || method.cls === 'stream') {
    const configuration = params.configuration;
    if (!isObject(configuration)) return [];
    config = version === '1.0' ? member(configuration, 'taskPushNotificationConfig') : configuration.pushNotificationConfig;
  } else if (method.v1 === 'CreateTaskPushNotificationConfig') {
    config = version === '1.0' ? params : params.pushNotificationConfig;
  } else {
    return [];
  }
  if (config === undefined || config === null) return [];
  return [isObject(config) && typeof config.url === 'string' ? config.url : ''];
}

/** A task's state in 0.3's words, or undefined when the task names none that is known. */
export function stateOf(version: A2AVersion, task: unknown): TaskStateName | undefined {
  return isObject(task) ? statusState(version, task) : undefined;
}

/** The task ids of a ListTasks result (`{tasks: [{id}]}`). */
export function taskIdsOfList(result: unknown): string[] {
  if (!isObject(result) || !Array.isArray(result.tasks)) return [];
  const ids: string[] = [];
  for (const task of result.tasks) {
    if (isObject(task) && typeof task.id === 'string') ids.push(task.id);
  }
  return ids;
}

/** A ListTasks result holding only the kept tasks, its `totalSize` lowered by those dropped. */
export function withTasks(result: unknown, keep: (taskId: string) => boolean): unknown {
  if (!isObject(result) || !Array.isArray(result.tasks)) return result;
  const tasks = result.tasks.filter((task) => isObject(task) && typeof task.id === 'string' && keep(task.id));
  const dropped = result.tasks.length - tasks.length;
  const out: JsonObject = { ...result, tasks };
  if (typeof result.totalSize === 'number') out.totalSize = Math.max(0, result.totalSize - dropped);
  return out;
}
