// Overlays carry credential references, never credential values (DESIGN.md invariant 7).
// A candidate may hold unknown fields, so the whole candidate is searched: a field named
// like a secret, or a string shaped like one, refuses the overlay. The finding names the
// path only; the value is never copied anywhere.

// Compared after lower-casing and dropping `-` and `_`, so `api_key`, `API-Key` and `apikey` match.
const CREDENTIAL_KEYS = new Set([
  'token',
  'value',
  'apikey',
  'secret',
  'password',
  'authorization',
  'accesstoken',
  'refreshtoken',
  'bearertoken',
  'clientsecret',
  'xapikey',
  'privatekey',
]);

const BEARER_VALUE = /^\s*bearer\s+\S/i;
// Provider keys are `sk-…` (OpenAI `sk-proj-…`, Anthropic `sk-ant-…`).
const SK_VALUE = /^\s*sk-\S/;

export function isCredentialKey(key: string): boolean {
  return CREDENTIAL_KEYS.has(key.toLowerCase().replace(/[-_]/g, ''));
}

export function looksLikeCredentialValue(value: string): boolean {
  return BEARER_VALUE.test(value) || SK_VALUE.test(value);
}

/** For messages: a value in quotes, unless it looks like a credential. */
export function quote(value: string): string {
  return looksLikeCredentialValue(value) ? '(a value that looks like a credential)' : JSON.stringify(value);
}

export interface CredentialFinding {
  /** Relative to the candidate, e.g. `.metadata.api_key` or `.labels[2]`. */
  path: string;
  what: string;
}

/**
 * The first credential-looking field or string in a candidate, depth first in document
 * order. Iterative, so a hostile nesting depth cannot overflow the stack.
 */
export function findCredentialValue(candidate: unknown): CredentialFinding | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value: candidate, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      if (looksLikeCredentialValue(value)) {
        return { path, what: 'a string that looks like a credential value (Bearer … or sk-…)' };
      }
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: `${path}[${i}]` });
    } else if (typeof value === 'object' && value !== null) {
      const keys = Object.keys(value);
      for (const key of keys) {
        // A key shaped like a secret must not be echoed either: name its parent only.
        if (looksLikeCredentialValue(key)) {
          return { path, what: 'a field name that looks like a credential value' };
        }
        if (isCredentialKey(key)) {
          return { path: `${path}.${key}`, what: 'a field whose name marks a credential value' };
        }
      }
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        stack.push({ value: (value as Record<string, unknown>)[key], path: `${path}.${key}` });
      }
    }
  }
  return undefined;
}
