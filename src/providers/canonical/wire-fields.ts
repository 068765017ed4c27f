import type { CacheControl } from './types.js';
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

/** `cache_control` on a part, a block or a tool (Anthropic's marker, also accepted on an OpenAI part): carried as it is. */
function cacheControl(value: unknown, path: string): CacheControl | undefined {
  if (!present(value)) return undefined;
  const cc = record(value, path);
  onlyKeys(cc, path, ['type', 'ttl']);
  if (cc.type !== 'ephemeral') refuse('unsupported', `${path}.type`, 'only ephemeral cache_control is supported');
  return typeof cc.ttl === 'string' ? { type: 'ephemeral', ttl: cc.ttl } : { type: 'ephemeral' };
}

/** Adds `cacheControl` only when the block has one, so canonical values compare without undefined keys. */
export function cached<T extends object>(part: T, raw: Record<string, unknown>, path: string): T {
  const cc = cacheControl(raw.cache_control, `${path}.cache_control`);
  return cc === undefined ? part : { ...part, cacheControl: cc };
}
