import { type ErrorCode, SwitchyardError } from '../errors.js';
import type { GenerationCandidate } from '../live/index.js';
import type { Committed, TokenUsage } from '../providers/index.js';
import { settle } from './admission.js';
import type { Attempt } from './attempt.js';
import type { Exchange, Failure } from './exchange.js';
import type { Services } from './services.js';

// The end of every model request's path, once its chain is chosen and admitted: the
// failover loop over the chain, the relay of the answer that commits, and the one settle.

export interface ServeOptions {
  /** Runs when a candidate's response commits, before its body is relayed. */
  readonly onCommit?: (committed: Committed) => void;
  /** Bill this usage whatever the response says (a stored response's read costs no tokens). */
  readonly usage?: TokenUsage;
}

/** Tries the chain, relays the committed answer, and settles, once, whatever happened. */
export async function serveChain(
  x: Exchange,
  svc: Services,
  chain: readonly GenerationCandidate[],
  body: { readonly raw: Buffer; readonly parsed: Record<string, unknown> },
  attempt: Attempt,
  options: ServeOptions = {},
): Promise<void> {
  try {
    const committed = await failover(x, chain, body, attempt, svc);
    if (committed === null) return;
    options.onCommit?.(committed);
    const relayed = await committed.finished;
    x.outcome = relayed.outcome;
    x.firstByteAt = relayed.firstByteAt;
    x.usage = options.usage ?? relayed.usage;
    x.events = relayed.events;
  } finally {
    // Bills what was served, or gives the reservation back when nothing was.
    await settle(x, svc);
  }
}

/**
 * Tries the chain in order until an attempt commits. The first pass skips candidates whose
 * breaker is open; when every breaker was open the chain is tried anyway, in order:
 * failing fast would turn a provider blip into an outage. Resolves with the committed
 * attempt, or null when the client left; throws when every candidate failed.
 */
async function failover(
  x: Exchange,
  chain: readonly GenerationCandidate[],
  body: { readonly raw: Buffer; readonly parsed: Record<string, unknown> },
  attempt: Attempt,
  svc: Services,
): Promise<Committed | null> {
  for (let pass: 0 | 1 = 0; ; pass = 1) {
    let attempted = 0;
    for (const c of chain) {
      if (pastDeadline(x)) return outOfTime(x, chain.length);
      if (x.stopped !== null) throw new SwitchyardError('shutting_down', `the gateway is shutting down: ${x.stopped}`);
      const r = await attempt({ x, raw: body.raw, parsed: body.parsed, candidate: c, pass });
      if (r.kind === 'skipped') continue;
      attempted += 1;
      if (r.kind === 'failed') {
        x.failures.push({ provider: c.provider.name, candidate: c.stableId, reason: r.reason, detail: r.detail });
        svc.metrics.fallbacks.inc({ provider: c.provider.name, reason: r.reason });
        continue;
      }
      x.candidate = c;
      if (r.kind === 'aborted') {
        x.outcome = 'aborted';
        return null;
      }
      x.headersAt = r.headersAt;
      return r;
    }
    if (attempted > 0 || pass === 1) break;
  }
  if (pastDeadline(x)) return outOfTime(x, chain.length);
  if (x.stopped !== null) throw new SwitchyardError('shutting_down', `the gateway is shutting down: ${x.stopped}`);
  const summary = x.failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
  throw new SwitchyardError(failureCode(x.failures), `all ${chain.length} candidate(s) for model "${x.model}" failed (${summary})`);
}

/**
 * Whether the route's deadline has passed, give or take a millisecond: a timer may fire a
 * fraction early, and an attempt with less than that left could not be answered anyway.
 */
function pastDeadline(x: Exchange): boolean {
  return x.deadlineAt !== null && performance.now() >= x.deadlineAt - 1;
}

/** The route's deadline passed before a candidate answered: 504, naming what was tried. */
function outOfTime(x: Exchange, candidates: number): never {
  const tried = x.failures.map((f) => `${f.provider}: ${f.detail}`).join('; ');
  throw new SwitchyardError(
    'upstream_timeout',
    `deadline_ms for model "${x.model}" passed after ${x.failures.length} of ${candidates} candidate(s)${tried === '' ? '' : ` (${tried})`}`,
  );
}

/**
 * One status for "every candidate failed": when all failures agree (all timeouts, all
 * 429s, all missing credentials) the client gets that specific answer; a mix is a 502.
 */
function failureCode(failures: readonly Failure[]): ErrorCode {
  const first = failures[0];
  if (first === undefined) return 'upstream_unavailable';
  if (failures.some((f) => f.reason !== first.reason)) return 'upstream_error';
  switch (first.reason) {
    case 'timeout':
      return 'upstream_timeout';
    case 'status_429':
      return 'upstream_rate_limited';
    case 'credential_unavailable':
      return 'credential_unavailable';
    default:
      return 'upstream_error';
  }
}
