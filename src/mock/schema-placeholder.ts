// A value that satisfies a JSON Schema, built from the schema alone: what the mock puts in a
// tool call's arguments and in a structured-output answer. Clients validate both (the
// OpenAI SDK's `parse`, the AI SDK's generateObject, LangChain's withStructuredOutput run
// the caller's zod schema over them), so the value must pass the common keywords, not just
// have the right shape.

type Schema = Record<string, unknown>;

// Past this depth a recursive schema (a tree whose nodes hold nodes) stops growing: arrays
// come out empty, objects keep only their required properties, nullable values are null.
const maxDepth = 8;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `#/$defs/a/b` read from the root; JSON Pointer escapes (`~0`, `~1`) and percent-encoding undone. */
function resolveRef(ref: string, root: unknown): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').slice(1)) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (!isSchema(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function isNullSchema(schema: unknown): boolean {
  return isSchema(schema) && (schema.type === 'null' || (schema.const === null && schema.type === undefined));
}

/** A union's branch to build: the first that is not `null`, else the first. */
function pickBranch(branches: unknown[]): unknown {
  return branches.find((b) => !isNullSchema(b)) ?? branches[0];
}

const stringFormats: Record<string, string> = {
  'date-time': '2024-01-01T00:00:00Z',
  date: '2024-01-01',
  time: '00:00:00Z',
  email: 'mock@example.com',
  uri: 'https://example.com/mock',
  url: 'https://example.com/mock',
  uuid: '00000000-0000-4000-8000-000000000000',
  ipv4: '127.0.0.1',
  ipv6: '::1',
  hostname: 'example.com',
};

function placeholderString(schema: Schema): string {
  const format = typeof schema.format === 'string' ? stringFormats[schema.format] : undefined;
  if (format !== undefined) return format;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY;
  const text = 'mock'.padEnd(min, 'k');
  return text.length > max ? text.slice(0, max) : text;
}

function placeholderNumber(schema: Schema, integer: boolean): number {
  let n = 1;
  if (typeof schema.minimum === 'number' && n < schema.minimum) n = schema.minimum;
  if (typeof schema.exclusiveMinimum === 'number' && n <= schema.exclusiveMinimum) n = schema.exclusiveMinimum + 1;
  if (typeof schema.maximum === 'number' && n > schema.maximum) n = schema.maximum;
  if (typeof schema.exclusiveMaximum === 'number' && n >= schema.exclusiveMaximum) n = schema.exclusiveMaximum - 1;
  return integer ? Math.ceil(n) : n;
}

function placeholderObject(schema: Schema, root: unknown, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required : [];
  for (const [key, prop] of Object.entries(properties)) {
    if (depth >= maxDepth && !required.includes(key)) continue;
    out[key] = build(prop, root, depth + 1);
  }
  return out;
}

function placeholderArray(schema: Schema, root: unknown, depth: number): unknown[] {
  const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : null;
  if (tuple !== null) return tuple.map((item) => build(item, root, depth + 1));
  const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
  const max = typeof schema.maxItems === 'number' ? schema.maxItems : Number.POSITIVE_INFINITY;
  const count = depth >= maxDepth ? min : Math.min(Math.max(1, min), max);
  return Array.from({ length: count }, () => build(schema.items, root, depth + 1));
}

function build(schema: unknown, root: unknown, depth: number): unknown {
  if (!isSchema(schema)) return 'mock';
  if (typeof schema.$ref === 'string') {
    const target = resolveRef(schema.$ref, root);
    // A reference to itself (or too deep a chain) ends here rather than looping.
    return depth > maxDepth * 4 ? null : build(target, root, depth + 1);
  }
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) {
      if (depth >= maxDepth && branches.some(isNullSchema)) return null;
      return build(pickBranch(branches), root, depth);
    }
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    const parts = schema.allOf.map((part) => build(part, root, depth));
    return parts.every(isSchema) ? Object.assign({}, ...parts) : parts[0];
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (depth >= maxDepth && types.includes('null')) return null;
  const type = types.find((t) => t !== 'null') ?? types[0];
  switch (type) {
    case 'object':
      return placeholderObject(schema, root, depth);
    case 'array':
      return placeholderArray(schema, root, depth);
    case 'string':
      return placeholderString(schema);
    case 'number':
      return placeholderNumber(schema, false);
    case 'integer':
      return placeholderNumber(schema, true);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      if (isSchema(schema.properties)) return placeholderObject(schema, root, depth);
      if (schema.items !== undefined) return placeholderArray(schema, root, depth);
      return 'mock';
  }
}

/** A value valid against `schema`; `$ref`s resolve within the schema itself. */
export function placeholderValue(schema: unknown): unknown {
  return build(schema, schema, 0);
}

/** Tool arguments: always an object, whatever the schema says at the top. */
export function placeholderObjectFor(schema: unknown): Record<string, unknown> {
  const value = placeholderValue(schema);
  return isSchema(value) ? value : {};
}
