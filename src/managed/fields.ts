import type { ConfigIssue } from '../config/index.js';
import { SwitchyardError } from '../errors.js';

// The body of a managed team or key: its id, the config file's fields (judged later by the
// config file's schemas), its metadata, and nothing else. Every refusal names each field at
// fault with its path.

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A refusal naming the fields at fault: the error body lists each with its path. */
export class FieldsError extends SwitchyardError {
  readonly issues: readonly ConfigIssue[];
  constructor(message: string, issues: readonly ConfigIssue[], code: 'invalid_request' | 'forbidden' | 'conflict') {
    super(code, message, issues[0]?.path ?? null);
    this.issues = issues;
  }
}

export const fieldsError = (
  issues: readonly ConfigIssue[],
  code: 'invalid_request' | 'forbidden' | 'conflict' = 'invalid_request',
): FieldsError => new FieldsError(issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`)).join('; '), issues, code);

export function idOf(body: Record<string, unknown>, required: boolean): string | null {
  const id = body.id;
  if (id === undefined && !required) return null;
  if (typeof id !== 'string' || !ID.test(id)) {
    throw fieldsError([{ path: 'id', message: 'must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)' }]);
  }
  return id;
}

/** The body's config fields (spec) and metadata; anything else is refused by name. */
export function splitFields(
  body: Record<string, unknown>,
  fields: readonly string[],
  others: readonly string[],
): { spec: Record<string, unknown>; metadata: Record<string, unknown> | undefined } {
  const spec: Record<string, unknown> = {};
  const issues: ConfigIssue[] = [];
  for (const [name, value] of Object.entries(body)) {
    if (fields.includes(name)) spec[name] = value;
    else if (name !== 'metadata' && !others.includes(name)) issues.push({ path: name, message: 'unknown key' });
  }
  const metadata = body.metadata;
  if (metadata !== undefined && (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))) {
    issues.push({ path: 'metadata', message: 'must be an object' });
  } else if (metadata !== undefined && JSON.stringify(metadata).length > 8192) {
    issues.push({ path: 'metadata', message: 'must be at most 8 KiB as JSON' });
  }
  if (issues.length > 0) throw fieldsError(issues);
  return { spec, metadata: metadata as Record<string, unknown> | undefined };
}

/** A JSON merge patch (RFC 7396) at the top level: a field set to null is removed. */
export function merged(current: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...current };
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete out[name];
    else out[name] = value;
  }
  return out;
}

export function patchChange(patch: {
  spec: Record<string, unknown>;
  metadata: Record<string, unknown> | undefined;
}): Record<string, unknown> {
  return patch.metadata === undefined ? patch.spec : { ...patch.spec, metadata: patch.metadata };
}
