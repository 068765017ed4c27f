import type { ConfigIssue } from '../config/index.js';
import { compileModelAllowList } from '../governance/index.js';

// What a `team:<id>` admin token may change on a key of its own team: it may tighten the
// key's limits, never loosen them. An admin who caps a team's key must not see the team
// lift the cap; a team that wants more asks an admin. The same rule holds whoever set the
// limit, so that no per-field record of its author is needed.

/** The key fields a change is judged on: the limits in the spec, and when the key stops working. */
export interface KeyLimits {
  readonly spec: Readonly<Record<string, unknown>>;
  readonly expiresAt: string | null;
}

/** Limits where a smaller number is tighter. */
const COUNTS = ['rpm', 'tpm', 'tokens_per_day', 'budget_usd_per_month', 'tool_calls_per_day', 'agent_messages_per_day'] as const;
/** Allow lists, where fewer models (or tools) is tighter, and absent means the team's whole list. */
const LISTS = ['allowed_models', 'allowed_tools', 'allowed_agents'] as const;

/** Each field whose change from `current` to `next` lets the key do more; empty when none does. */
export function loosenedLimits(current: KeyLimits, next: KeyLimits): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const field of COUNTS) {
    const was = current.spec[field];
    if (typeof was !== 'number') continue;
    const now = next.spec[field];
    if (typeof now !== 'number') issues.push({ path: field, message: `removing the limit (${was}) takes an admin token` });
    else if (now > was) issues.push({ path: field, message: `raising the limit from ${was} to ${now} takes an admin token` });
  }
  for (const field of LISTS) {
    const was = current.spec[field];
    if (!Array.isArray(was)) continue;
    const now = next.spec[field];
    if (!Array.isArray(now)) {
      issues.push({ path: field, message: 'removing the list takes an admin token' });
      continue;
    }
    const within = compileModelAllowList(was as string[]);
    // A pattern is within the old list when the list names it, or it is a plain name the list matches.
    const wider = (now as string[]).filter((p) => !was.includes(p) && (/[*?]/.test(p) || !within(p)));
    if (wider.length > 0)
      issues.push({ path: field, message: `adding ${wider.map((p) => JSON.stringify(p)).join(', ')} takes an admin token` });
  }
  issues.push(...loosenedResidency(current.spec.residency, next.spec.residency));
  if (current.expiresAt !== null) {
    if (next.expiresAt === null) issues.push({ path: 'expires_at', message: 'removing the expiry takes an admin token' });
    else if (Date.parse(next.expiresAt) > Date.parse(current.expiresAt))
      issues.push({ path: 'expires_at', message: `moving the expiry later than ${current.expiresAt} takes an admin token` });
  }
  return issues;
}

/** A key's residency loosened: removed (the team's may be wider), a zone added, or unlabelled providers let in. */
function loosenedResidency(was: unknown, now: unknown): ConfigIssue[] {
  const before = was as { allow?: unknown; fail_closed?: unknown } | undefined;
  if (before === undefined || before === null || !Array.isArray(before.allow)) return [];
  const after = now as { allow?: unknown; fail_closed?: unknown } | undefined;
  if (after === undefined || after === null || !Array.isArray(after.allow))
    return [{ path: 'residency', message: 'removing the residency takes an admin token' }];
  const issues: ConfigIssue[] = [];
  const added = (after.allow as unknown[]).filter((z) => !(before.allow as unknown[]).includes(z));
  if (added.length > 0)
    issues.push({ path: 'residency.allow', message: `adding ${added.map((z) => JSON.stringify(z)).join(', ')} takes an admin token` });
  if (before.fail_closed !== false && after.fail_closed === false)
    issues.push({ path: 'residency.fail_closed', message: 'letting providers without zones in takes an admin token' });
  return issues;
}
