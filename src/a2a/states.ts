// Task states under both spellings: 0.3's `input-required`, 1.0's `TASK_STATE_INPUT_REQUIRED`
// (or its proto number, which ProtoJSON readers also accept).

import type { A2AVersion, TaskStateName } from './types.js';

const V1_BY_NAME: Readonly<Record<TaskStateName, string>> = Object.freeze({
  unknown: 'TASK_STATE_UNSPECIFIED',
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELED',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  rejected: 'TASK_STATE_REJECTED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
});

// The proto enum numbers, in declaration order.
const BY_NUMBER: readonly TaskStateName[] = [
  'unknown',
  'submitted',
  'working',
  'completed',
  'failed',
  'canceled',
  'input-required',
  'rejected',
  'auth-required',
];

const NAME_BY_V1 = new Map<string, TaskStateName>(
  (Object.entries(V1_BY_NAME) as [TaskStateName, string][]).map(([name, v1]) => [v1, name]),
);
const NAMES = new Set<string>(Object.keys(V1_BY_NAME));

/** The state a wire value spells, or undefined when it spells none. */
export function stateName(version: A2AVersion, raw: unknown): TaskStateName | undefined {
  if (version === '0.3') return typeof raw === 'string' && NAMES.has(raw) ? (raw as TaskStateName) : undefined;
  if (typeof raw === 'string') return NAME_BY_V1.get(raw);
  if (typeof raw === 'number') return BY_NUMBER[raw];
  return undefined;
}

/** 1.0's enum string for a state. */
export function v1State(name: TaskStateName): string {
  return V1_BY_NAME[name];
}
