// Request params between 0.3 and 1.0, one pair of converters per method. 0.3 names the task
// `id` where 1.0 says `taskId` for push configs, and names the push config
// `pushNotificationConfigId` where 1.0 says `id`; 0.3 has no tenants.

import { messageTo1, messageTo03 } from './messages.js';
import { pushConfigTo1, pushConfigTo03, taskPushConfigTo1, taskPushConfigTo03 } from './tasks.js';
import { isObject, type JsonObject, loose, member, metadataOf, nonEmpty, objectAt, put, ShapeError } from './wire.js';

export type Convert = (value: unknown, path: string) => unknown;

function sendParamsTo1(value: unknown, path: string): JsonObject {
  const params = objectAt(value, path);
  const out: JsonObject = { message: messageTo1(params.message, `${path}.message`) };
  if (params.configuration !== undefined && params.configuration !== null) {
    const c = objectAt(params.configuration, `${path}.configuration`);
    const configuration: JsonObject = {};
    if (Array.isArray(c.acceptedOutputModes) && c.acceptedOutputModes.length > 0) {
      configuration.acceptedOutputModes = c.acceptedOutputModes.map(loose);
    }
    if (c.pushNotificationConfig !== undefined && c.pushNotificationConfig !== null) {
      configuration.taskPushNotificationConfig = pushConfigTo1(c.pushNotificationConfig, `${path}.configuration.pushNotificationConfig`);
    }
    put(configuration, 'historyLength', historyLengthOf(c));
    // 0.3's `blocking` is 1.0's `returnImmediately` inverted; the SDK reads a configuration
    // that leaves `blocking` out as non-blocking.
    if (c.blocking === undefined || !c.blocking) configuration.returnImmediately = true;
    out.configuration = configuration;
  }
  put(out, 'metadata', metadataOf(params));
  return out;
}

function sendParamsTo03(value: unknown, path: string): JsonObject {
  const params = objectAt(value, path);
  const out: JsonObject = { message: messageTo03(objectAt(params.message, `${path}.message`), `${path}.message`) };
  if (isObject(params.configuration)) {
    const c = params.configuration;
    const accepted = member(c, 'acceptedOutputModes');
    const configuration: JsonObject = {
      blocking: !member(c, 'returnImmediately'),
      acceptedOutputModes: Array.isArray(accepted) ? accepted.map(loose) : [],
    };
    put(configuration, 'historyLength', historyLengthOf(c));
    const push = member(c, 'taskPushNotificationConfig');
    if (isObject(push)) {
      configuration.pushNotificationConfig = pushConfigTo03(push, `${path}.configuration.taskPushNotificationConfig`);
    }
    out.configuration = configuration;
  }
  put(out, 'metadata', metadataOf(params));
  return out;
}

const taskIdOf = (params: JsonObject, key: string, path: string): string => {
  const id = params[key];
  if (typeof id !== 'string' || id === '') throw new ShapeError(`${path}.${key}`, 'must be a non-empty string');
  return id;
};

// ProtoJSON readers take an int32 as a number or as its decimal string.
const historyLengthOf = (params: JsonObject): number | undefined => {
  const n = member(params, 'historyLength');
  if (typeof n === 'number') return n;
  return typeof n === 'string' && /^-?\d+$/.test(n) ? Number(n) : undefined;
};

/** Request converters by 1.0 method name: [0.3 -> 1.0, 1.0 -> 0.3]. */
export const REQUESTS: Readonly<Record<string, readonly [Convert, Convert]>> = {
  SendMessage: [sendParamsTo1, sendParamsTo03],
  SendStreamingMessage: [sendParamsTo1, sendParamsTo03],
  GetTask: [
    (v, path) => {
      const p = objectAt(v, path);
      const out: JsonObject = { id: taskIdOf(p, 'id', path) };
      put(out, 'historyLength', historyLengthOf(p));
      return out;
    },
    (v, path) => {
      const p = objectAt(v, path);
      const out: JsonObject = { id: taskIdOf(p, 'id', path) };
      put(out, 'historyLength', historyLengthOf(p));
      return out;
    },
  ],
  CancelTask: [
    (v, path) => {
      const p = objectAt(v, path);
      const out: JsonObject = { id: taskIdOf(p, 'id', path) };
      put(out, 'metadata', metadataOf(p));
      return out;
    },
    (v, path) => {
      const p = objectAt(v, path);
      const out: JsonObject = { id: taskIdOf(p, 'id', path) };
      put(out, 'metadata', metadataOf(p));
      return out;
    },
  ],
  SubscribeToTask: [
    (v, path) => ({ id: taskIdOf(objectAt(v, path), 'id', path) }),
    (v, path) => ({ id: taskIdOf(objectAt(v, path), 'id', path) }),
  ],
  CreateTaskPushNotificationConfig: [
    (v, path) => {
      const p = objectAt(v, path);
      taskIdOf(p, 'taskId', path);
      return taskPushConfigTo1(p, path);
    },
    (v, path) => {
      const p = objectAt(v, path);
      taskIdOf(p, 'taskId', path);
      return taskPushConfigTo03(p, path);
    },
  ],
  GetTaskPushNotificationConfig: [
    (v, path) => {
      const p = objectAt(v, path);
      const out: JsonObject = { taskId: taskIdOf(p, 'id', path) };
      put(out, 'id', nonEmpty(p.pushNotificationConfigId));
      return out;
    },
    (v, path) => {
      const p = objectAt(v, path);
      const out: JsonObject = { id: taskIdOf(p, 'taskId', path) };
      put(out, 'pushNotificationConfigId', nonEmpty(p.id));
      return out;
    },
  ],
  ListTaskPushNotificationConfigs: [
    (v, path) => ({ taskId: taskIdOf(objectAt(v, path), 'id', path) }),
    (v, path) => ({ id: taskIdOf(objectAt(v, path), 'taskId', path) }),
  ],
  DeleteTaskPushNotificationConfig: [
    (v, path) => {
      const p = objectAt(v, path);
      return { taskId: taskIdOf(p, 'id', path), id: taskIdOf(p, 'pushNotificationConfigId', path) };
    },
    (v, path) => {
      const p = objectAt(v, path);
      return { id: taskIdOf(p, 'taskId', path), pushNotificationConfigId: taskIdOf(p, 'id', path) };
    },
  ],
  // 0.3 sends no params for the card; 1.0 sends an object (with at most a tenant, which 0.3 lacks).
  GetExtendedAgentCard: [() => ({}), () => undefined],
};
