// Overlays carry credential references, never credential values: a secret must never reach
// a log line, an admin view or an error message.
// A candidate may hold unknown fields, so the whole candidate is searched: a field named
// like a secret, or a string shaped like one, refuses the overlay. The finding names the
// path only; the value is never copied anywhere.

// Names a secret's value would be stored under. Case-insensitive, with or without `-`/`_`
// (`api_key`, `API-Key`, `apikey`). `key` alone is not here: secretRef.key names the key
// inside a Secret, which is the reference the contract asks for.
const CREDENTIAL_KEY =
  /^(?:token|value|secret|password|authorization|(?:x[-_]?)?api[-_]?key|(?:access|refresh|bearer)[-_]?token|client[-_]?secret|private[-_]?key)$/i;

// An HTTP Authorization value (`Bearer …`, `Basic …`), or a provider key: `sk-…` (OpenAI
// `sk-proj-…`, Anthropic `sk-ant-…`). A minimum length keeps ordinary words such as a site
// named `sk-bratislava` usable. The one definition: config/ refuses the same shapes in
// provider headers.
const CREDENTIAL_VALUE = /^\s*(?:bearer\s+\S|basic\s+\S|sk-[A-Za-z0-9_-]{16,})/i;

function isCredentialKey(key: string): boolean {
  return CREDENTIAL_KEY.test(key);
}

export function looksLikeCredentialValue(value: string): boolean {
  return CREDENTIAL_VALUE.test(value);
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
  // Nearly every candidate is clean: search without building paths, and build them only
  // to report a finding.
  return holdsCredentialValue(candidate) ? locateCredentialValue(candidate) : undefined;
}

function holdsCredentialValue(candidate: unknown): boolean {
  const stack: unknown[] = [candidate];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (looksLikeCredentialValue(value)) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (typeof value === 'object' && value !== null) {
      for (const key in value) {
        if (isCredentialKey(key) || looksLikeCredentialValue(key)) return true;
        stack.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

function locateCredentialValue(candidate: unknown): CredentialFinding | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value: candidate, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      if (looksLikeCredentialValue(value)) {
        return { path, what: 'a string that looks like a credential value (Bearer …, Basic … or sk-…)' };
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
