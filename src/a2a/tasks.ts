// Tasks, their status, the two update events and push-notification configs between 0.3 and
// 1.0. 0.3's status-update carries `final`, which 1.0 dropped: going to 0.3 it is worked out
// from the state, and only completed, failed, canceled and rejected are final (an interrupted
// task, input-required or auth-required, is not), as the reference SDK decides. 0.3 nests a push
// config under `pushNotificationConfig` beside `taskId` and lists auth `schemes`; 1.0 is flat
// with one `scheme`, so only the first 0.3 scheme survives the trip.

import { artifactTo1, artifactTo03, listOf, messageTo1, messageTo03 } from './messages.js';
import { stateName, v1State } from './states.js';
import { TERMINAL_STATES } from './types.js';
import { isObject, type JsonObject, loose, member, metadataOf, nonEmpty, objectAt, put, stringAt } from './wire.js';

export function statusTo1(value: unknown, path: string): JsonObject {
  const status = isObject(value) ? value : {};
  const out: JsonObject = {};
  const state = stateName('0.3', status.state) ?? 'unknown';
  if (state !== 'unknown') out.state = v1State(state);
  if (isObject(status.message)) out.message = messageTo1(status.message, `${path}.message`);
  if (typeof status.timestamp === 'string') out.timestamp = status.timestamp;
  return out;
}

export function statusTo03(value: unknown, path: string): JsonObject {
  const status = isObject(value) ? value : {};
  const out: JsonObject = { state: stateName('1.0', status.state) ?? 'unknown' };
  if (isObject(status.message)) out.message = messageTo03(status.message, `${path}.message`);
  put(out, 'timestamp', nonEmpty(status.timestamp));
  return out;
}

export function taskTo1(value: unknown, path: string): JsonObject {
  const task = objectAt(value, path);
  const out: JsonObject = {};
  put(out, 'id', nonEmpty(task.id));
  put(out, 'contextId', nonEmpty(task.contextId));
  out.status = statusTo1(task.status, `${path}.status`);
  put(out, 'artifacts', listOf(task.artifacts, `${path}.artifacts`, artifactTo1));
  put(out, 'history', listOf(task.history, `${path}.history`, messageTo1));
  put(out, 'metadata', metadataOf(task));
  return out;
}

export function taskTo03(value: unknown, path: string): JsonObject {
  const task = objectAt(value, path);
  const out: JsonObject = {
    kind: 'task',
    id: loose(task.id),
    contextId: loose(member(task, 'contextId')),
    status: statusTo03(task.status, `${path}.status`),
  };
  put(out, 'history', listOf(task.history, `${path}.history`, messageTo03));
  put(out, 'artifacts', listOf(task.artifacts, `${path}.artifacts`, artifactTo03));
  put(out, 'metadata', metadataOf(task));
  return out;
}

export function statusUpdateTo1(value: unknown, path: string): JsonObject {
  const event = objectAt(value, path);
  const out: JsonObject = {};
  put(out, 'taskId', nonEmpty(event.taskId));
  put(out, 'contextId', nonEmpty(event.contextId));
  out.status = statusTo1(event.status, `${path}.status`);
  put(out, 'metadata', metadataOf(event));
  return out;
}

export function statusUpdateTo03(value: unknown, path: string): JsonObject {
  const event = objectAt(value, path);
  const status = statusTo03(event.status, `${path}.status`);
  const out: JsonObject = {
    kind: 'status-update',
    taskId: loose(member(event, 'taskId')),
    contextId: loose(member(event, 'contextId')),
    status,
    final: TERMINAL_STATES.has(stateName('0.3', status.state) ?? 'unknown'),
  };
  put(out, 'metadata', metadataOf(event));
  return out;
}

export function artifactUpdateTo1(value: unknown, path: string): JsonObject {
  const event = objectAt(value, path);
  const out: JsonObject = {};
  put(out, 'taskId', nonEmpty(event.taskId));
  put(out, 'contextId', nonEmpty(event.contextId));
  out.artifact = artifactTo1(event.artifact, `${path}.artifact`);
  if (event.append === true) out.append = true;
  if (event.lastChunk === true) out.lastChunk = true;
  put(out, 'metadata', metadataOf(event));
  return out;
}

export function artifactUpdateTo03(value: unknown, path: string): JsonObject {
  const event = objectAt(value, path);
  const out: JsonObject = {
    kind: 'artifact-update',
    taskId: loose(member(event, 'taskId')),
    contextId: loose(member(event, 'contextId')),
    artifact: artifactTo03(event.artifact, `${path}.artifact`),
    append: Boolean(event.append),
    lastChunk: Boolean(member(event, 'lastChunk')),
  };
  put(out, 'metadata', metadataOf(event));
  return out;
}

function authenticationTo1(value: unknown): JsonObject | undefined {
  if (!isObject(value)) return undefined;
  const out: JsonObject = {};
  if (Array.isArray(value.schemes)) put(out, 'scheme', nonEmpty(value.schemes[0]));
  put(out, 'credentials', nonEmpty(value.credentials));
  return out;
}

function authenticationTo03(value: unknown): JsonObject | undefined {
  if (!isObject(value)) return undefined;
  const scheme = nonEmpty(value.scheme);
  const out: JsonObject = { schemes: scheme === undefined ? [] : [scheme] };
  put(out, 'credentials', nonEmpty(value.credentials));
  return out;
}

/** 0.3's inner push config (no task id) as 1.0's flat config, `taskId` set when given. */
export function pushConfigTo1(value: unknown, path: string, taskId?: string): JsonObject {
  const config = objectAt(value, path);
  const out: JsonObject = {};
  put(out, 'id', nonEmpty(config.id));
  put(out, 'taskId', nonEmpty(taskId));
  out.url = stringAt(config.url, `${path}.url`);
  put(out, 'token', nonEmpty(config.token));
  put(out, 'authentication', authenticationTo1(config.authentication));
  return out;
}

/** 1.0's flat config as 0.3's inner push config (its task id dropped). */
export function pushConfigTo03(value: unknown, path: string): JsonObject {
  const config = objectAt(value, path);
  const out: JsonObject = { url: loose(config.url) };
  put(out, 'id', nonEmpty(config.id));
  put(out, 'token', nonEmpty(config.token));
  put(out, 'authentication', authenticationTo03(config.authentication));
  return out;
}

/** 0.3's `{taskId, pushNotificationConfig}` as 1.0's flat config. */
export function taskPushConfigTo1(value: unknown, path: string): JsonObject {
  const config = objectAt(value, path);
  return pushConfigTo1(config.pushNotificationConfig, `${path}.pushNotificationConfig`, loose(config.taskId));
}

/** 1.0's flat config as 0.3's `{taskId, pushNotificationConfig}`. */
export function taskPushConfigTo03(value: unknown, path: string): JsonObject {
  const config = objectAt(value, path);
  return { taskId: loose(member(config, 'taskId')), pushNotificationConfig: pushConfigTo03(config, path) };
}
