import type { z } from 'zod';

// zod's own wording ("Invalid input: expected int, received number") is written for
// programmers who know zod; a config's reader gets the project's words instead. Messages
// that a schema sets itself (e.g. "must be host:port, …") take precedence over this map.

const TYPE_WORDS: Record<string, string> = {
  int: 'must be a whole number',
  number: 'must be a number',
  string: 'must be a string',
  boolean: 'must be true or false',
  object: 'must be a mapping (key: value)',
  record: 'must be a mapping (key: value)',
  array: 'must be a list',
};

function quoted(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function sizeWords(origin: string, bound: unknown, inclusive: boolean | undefined, atLeast: boolean): string | undefined {
  const n = Number(bound);
  if (origin === 'number' || origin === 'int' || origin === 'bigint') {
    if (atLeast) return inclusive === false ? `must be greater than ${n}` : `must be at least ${n}`;
    return inclusive === false ? `must be less than ${n}` : `must be at most ${n}`;
  }
  if (origin === 'string') {
    if (atLeast) return n <= 1 ? 'must not be empty' : `must be at least ${n} characters`;
    return `must be at most ${n} characters`;
  }
  if (origin === 'array' || origin === 'set') {
    if (atLeast) return n <= 1 ? 'must not be empty' : `must have at least ${n} items`;
    return `must have at most ${n} items`;
  }
  return undefined;
}

/**
 * The per-parse error map for the config schema. Returns undefined to keep zod's message
 * for a case it does not know, so a new zod issue kind is never silenced.
 */
export const configErrorMap: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'required';
      return TYPE_WORDS[issue.expected] ?? `must be of type ${issue.expected}`;
    case 'too_small':
      return sizeWords(issue.origin, issue.minimum, issue.inclusive, true);
    case 'too_big':
      return sizeWords(issue.origin, issue.maximum, issue.inclusive, false);
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${quoted(issue.values[0])}` : `must be one of: ${issue.values.map(quoted).join(', ')}`;
    case 'invalid_format':
      return issue.format === 'url' ? 'invalid URL' : issue.format === 'regex' ? 'has an invalid form' : `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_key':
      // The key's own check carries the useful words (e.g. what a provider name may hold).
      return issue.issues.map((i) => i.message).join('; ') || 'is not an allowed name';
    case 'invalid_union':
      return 'does not match any of the accepted forms';
    default:
      return undefined;
  }
};

/**
 * Edit distance with adjacent transpositions (optimal string alignment), so `wieght` is
 * one step from `weight`. Keys are short, so the plain O(n·m) table is fine.
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known key an unknown one most likely meant: a small edit away (`timout_ms`,
 * `timeoutMs`), or one whole word of a snake_case key (`timeout` for `timeout_ms`,
 * `threshold` for `failure_threshold`). Null when nothing is close.
 */
export function nearestKey(unknown: string, known: readonly string[]): string | null {
  const norm = (s: string): string => s.toLowerCase().replace(/-/g, '_');
  const u = norm(unknown);
  let best: { key: string; distance: number } | null = null;
  for (const key of known) {
    const k = norm(key);
    const words = k.split('_');
    const distance = words.length > 1 && words.includes(u) ? 1 : editDistance(u, k);
    const limit = Math.max(2, Math.floor(Math.max(u.length, k.length) / 3));
    if (distance <= limit && (best === null || distance < best.distance)) best = { key, distance };
  }
  return best?.key ?? null;
}

/** Unwraps optional/default/pipe layers down to the schema that holds the keys. */
function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  let s = schema;
  for (let i = 0; i < 20; i++) {
    const def = s._zod.def as { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType };
    if (def.innerType !== undefined) s = def.innerType;
    else if (def.type === 'pipe' && def.in !== undefined) s = def.in;
    else break;
  }
  return s;
}

/** The keys an object in `schema` accepts at `path`, or [] when the path leads elsewhere. */
export function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let s = unwrap(schema);
  for (const part of path) {
    const def = s._zod.def as {
      type: string;
      shape?: Record<string, z.core.$ZodType>;
      valueType?: z.core.$ZodType;
      element?: z.core.$ZodType;
    };
    if (def.type === 'object' && def.shape !== undefined) {
      const next = def.shape[String(part)];
      if (next === undefined) return [];
      s = unwrap(next);
    } else if (def.type === 'record' && def.valueType !== undefined) s = unwrap(def.valueType);
    else if (def.type === 'array' && def.element !== undefined) s = unwrap(def.element);
    else return [];
  }
  const def = s._zod.def as { type: string; shape?: Record<string, unknown> };
  return def.type === 'object' && def.shape !== undefined ? Object.keys(def.shape) : [];
}
