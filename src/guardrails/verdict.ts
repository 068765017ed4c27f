// What one guardrail decided about one phase of one request or tool call: the record every
// sink reads (audit, metrics, the ledger's `guardrail` column, the access line, the status
// page). It names categories and counts, never the text that matched.

/** Where a guardrail ran: a model request's input or output, a tool call's arguments or result. */
export type GuardrailPhase = 'input' | 'output' | 'arguments' | 'results';
export const GUARDRAIL_PHASES: readonly GuardrailPhase[] = ['input', 'output', 'arguments', 'results'];

/** What a guardrail did: nothing found (allow), or its configured action on a finding. */
export type VerdictAction = 'allow' | 'warn' | 'mask' | 'block';
export const VERDICT_ACTIONS: readonly VerdictAction[] = ['allow', 'warn', 'mask', 'block'];

/**
 * A service guardrail that could not answer: it timed out, failed (a network error, a
 * non-2xx answer, a body over its bound), or answered something that is not a verdict.
 */
export type GuardrailErrorKind = 'timeout' | 'error' | 'invalid';

/** What a failed check led to: fail_open served the request, fail_closed refused it. */
export type GuardrailErrorOutcome = 'fail_open' | 'fail_closed';

export interface GuardrailVerdict {
  readonly guardrail: string;
  readonly phase: GuardrailPhase;
  readonly action: VerdictAction;
  /** The findings by category (an entity, a secret kind, a pattern's category, a service's reason), with counts. */
  readonly categories: Readonly<Record<string, number>>;
  /** How long the check took, in ms (a stream's: the sum of its checks). */
  readonly latencyMs: number;
  /** Set when a service could not answer: why, and what `on_error` made of it. */
  readonly error?: { readonly kind: GuardrailErrorKind; readonly outcome: GuardrailErrorOutcome };
  /** For a stream's output, the mode a block ran under (`after` cannot un-send). */
  readonly stream?: 'hold' | 'window' | 'after';
}

const RANK: Readonly<Record<VerdictAction, number>> = { allow: 0, warn: 1, mask: 2, block: 3 };

/** The strongest action of `verdicts` (block > mask > warn), or null when none acted: the ledger's `guardrail` column. */
export function strongestAction(verdicts: readonly GuardrailVerdict[]): Exclude<VerdictAction, 'allow'> | null {
  let best: VerdictAction = 'allow';
  for (const v of verdicts) if (RANK[v.action] > RANK[best]) best = v.action;
  return best === 'allow' ? null : best;
}

/** The names of the guardrails that acted (not `allow`), each once, in the order they acted: for the access line. */
export function actedGuardrails(verdicts: readonly GuardrailVerdict[]): string[] {
  const names: string[] = [];
  for (const v of verdicts) if (v.action !== 'allow' && !names.includes(v.guardrail)) names.push(v.guardrail);
  return names;
}

/** `name (category, category)`: how a refusal names a block, never the matched text. */
export function describeBlock(guardrail: string, categories: Readonly<Record<string, number>>): string {
  const names = Object.keys(categories);
  return names.length === 0 ? `guardrail ${guardrail}` : `guardrail ${guardrail} (${names.join(', ')})`;
}
