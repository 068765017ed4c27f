import type { z } from 'zod';
import { formatPath } from '../contract/index.js';
import type { ConfigIssue } from './load.js';
import { type KeyConfig, keySchema, type TeamConfig, teamSchema } from './schema.js';

// Teams and keys that live in the database are the config file's teams and keys, judged by
// the very same schemas: an admin API body, a row read back for a generation, and an entry
// of the config file accept and refuse the same fields, with the same messages.

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/** Each problem with the path of its field (an unknown key names the key itself). */
function issuesOf(error: z.ZodError): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) issues.push({ path: formatPath([...issue.path, key]), message: 'unknown key' });
    } else {
      issues.push({ path: formatPath(issue.path), message: issue.message });
    }
  }
  return issues;
}

/** A team's fields (rate_limit, quota, budget, allowed_models, allowed_tools, allowed_agents), as under `teams.<id>`. */
export function checkTeam(spec: unknown): Checked<TeamConfig> {
  const parsed = teamSchema.safeParse(spec);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, issues: issuesOf(parsed.error) };
}

/** A key entry (id, team, sha256 and its limits), as under `keys[]`. */
export function checkKey(entry: unknown): Checked<KeyConfig> {
  const parsed = keySchema.safeParse(entry);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, issues: issuesOf(parsed.error) };
}
