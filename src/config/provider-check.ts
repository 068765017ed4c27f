import { formatPath } from '../contract/index.js';
import { configErrorMap, nearestKey } from './issue-text.js';
import type { ConfigIssue } from './load.js';
import type { Checked } from './managed.js';
import { type ProviderConfig, providerKeyHint, providerKeys, providerSchema } from './provider-types.js';

// One provider's fields outside the config file (an admin API body: a draft to probe), judged
// by the very schema of `providers.<name>` with the file's words: a key of another type names
// that type, a near miss is suggested, and a literal secret is refused as the file refuses it.

/** A provider's fields, as under `providers.<name>`; each problem with the path of its field. */
export function checkProvider(spec: unknown): Checked<ProviderConfig> {
  const parsed = providerSchema.safeParse(spec, { error: configErrorMap });
  if (parsed.success) return { ok: true, value: parsed.data };
  const type = (spec as { type?: unknown } | null)?.type;
  const issues: ConfigIssue[] = [];
  for (const issue of parsed.error.issues) {
    if (issue.code !== 'unrecognized_keys') {
      issues.push({ path: formatPath(issue.path), message: issue.message });
      continue;
    }
    for (const key of issue.keys) {
      const path = formatPath([...issue.path, key]);
      const hint = issue.path.length === 0 ? providerKeyHint(type, key) : null;
      const near = issue.path.length === 0 ? nearestKey(key, providerKeys(type)) : null;
      issues.push({ path, message: hint ?? (near === null ? 'unknown key' : `unknown key; did you mean ${near}?`) });
    }
  }
  return { ok: false, issues };
}
