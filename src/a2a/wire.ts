// Reading untrusted A2A JSON: small readers that never trust a member's type, and the one
// failure they raise, naming the member path so a refused request says where it went wrong.

/** A JSON object as parsed from the wire. */
export type JsonObject = Record<string, unknown>;

/** A member of a body had the wrong shape; `path` is like `params.message.parts[0]`. */
export class ShapeError extends Error {
  readonly path: string;
  constructor(path: string, reason: string) {
    super(`${path}: ${reason}`);
    this.name = 'ShapeError';
    this.path = path;
  }
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function objectAt(value: unknown, path: string): JsonObject {
  if (!isObject(value)) throw new ShapeError(path, 'must be an object');
  return value;
}

export function arrayAt(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw new ShapeError(path, 'must be an array');
  return value;
}

export function stringAt(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new ShapeError(path, 'must be a string');
  return value;
}

/** 1.0's ProtoJSON readers also accept the proto field name (`context_id` for `contextId`). */
/** camelCase member names in their snake_case spelling, worked out once each (the names are the code's own, a few dozen). */
const SNAKE = new Map<string, string>();

export function member(o: JsonObject, camel: string): unknown {
  const value = o[camel];
  if (value !== undefined && value !== null) return value;
  let snake = SNAKE.get(camel);
  if (snake === undefined) {
    snake = camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    SNAKE.set(camel, snake);
  }
  return snake === camel ? value : o[snake];
}

/** A present, non-empty string member, else undefined (1.0 writes absent strings as ""). */
export function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A string member; numbers and booleans are spelled out the way ProtoJSON readers do. */
export function loose(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

/** A non-empty array of strings copied, else undefined (both versions drop empty lists). */
export function strings(value: unknown): string[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  return value.map((s) => loose(s));
}

/** Sets `key` on `out` only when `value` is defined, so absent members stay absent. */
export function put(out: JsonObject, key: string, value: unknown): void {
  if (value !== undefined) out[key] = value;
}

/** The metadata bag when it is an object; anything else is dropped, as both SDK readers do. */
export function metadataOf(o: JsonObject): JsonObject | undefined {
  return isObject(o.metadata) ? o.metadata : undefined;
}
