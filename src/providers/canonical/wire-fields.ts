import { isRecord, refuse } from './types.js';

// Reading one field of a parsed request body, naming its path when it is wrong. Both
// request readers use these, so both protocols word their refusals alike.

/** OpenAI and Anthropic both read `null` as "not set". */
export function present(value: unknown): boolean {
  return value !== undefined && value !== null;
}

export function text(value: unknown, path: string): string {
  if (typeof value !== 'string') refuse('invalid', path, `${path} must be a string`);
  return value;
}

export function num(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) refuse('invalid', path, `${path} must be a number`);
  return value;
}

export function record(value: unknown, path: string): Record<string, unknown> {
  if (!isRecord(value)) refuse('invalid', path, `${path} must be an object`);
  return value;
}

export function positiveInteger(value: unknown, path: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1) refuse('invalid', path, `${path} must be a positive integer`);
  return value as number;
}

/** Refuses any set key of `value` outside `allowed`: an unread field would be a dropped one. */
export function onlyKeys(value: Record<string, unknown>, path: string, allowed: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key) && present(value[key])) {
      refuse('unsupported', `${path}.${key}`, `${path}.${key} cannot be translated to the target protocol`);
    }
  }
}
