import { setTimeout as sleep } from 'node:timers/promises';
import { type AdminWriteInput, type AuditWriter, adminWrite } from '../audit/index.js';
import { CommitUnknownError, type ManagedRecords, type ManagedWrites, type WriteResult } from '../database/index.js';
import { SwitchyardError } from '../errors.js';
import type { Keyring } from '../live/index.js';
import { type AdminCaller, noKey } from './caller.js';

// How an admin write ends when the database's answer to its COMMIT is lost (the connection
// died after COMMIT was sent): the write may have taken effect, so "nothing was written" would
// be a guess. The database is asked again, once it answers, what is true; only when it cannot
// say is the answer 503 outcome_unknown. Which admin requests are write attempts, so each
// one is audited however it ends (applied, refused, failed or unknown); a committed write is
// then applied here by a keyring swap. And the refusals a write ends in when its object is gone,
// has changed since its ETag, or belongs to the config file.

/** Re-reads after a lost commit answer: the pool reconnects between them; bounded (~2 s). */
const RE_READ_ATTEMPTS = 6;
const RE_READ_PAUSE_MS = 400;

export type WriteTarget = Pick<AdminWriteInput, 'action' | 'object' | 'objectId'>;

/** How the gateway applied a committed write (a swap with trigger `database`), as its answer reports it. */
export interface Applied {
  readonly result: string;
  /** The routing generation: a key or team write leaves it as it is. */
  readonly generation: number;
  /** The serving generation's topology digest, when the gateway says it (x-switchyard-topology). */
  readonly topology?: string;
  /** The keyring serving after the write: the write is live when it serves. */
  readonly keyring: number;
  readonly warnings: readonly string[];
}

/** What a write runs with: its caller, the records, the serving keyring, the audit log, and how a committed write is applied. */
export interface WriteContext {
  readonly caller: AdminCaller;
  readonly records: ManagedRecords;
  readonly keyring: Keyring;
  readonly audit: AuditWriter | null;
  /** Applies a committed write here, so the answer reflects it; null when nothing could be applied. */
  readonly apply: () => Promise<Applied | null>;
  /** Told once the write's `applied` record is written (a later failure is not another attempt). */
  readonly onAudited: () => void;
}

/** A write whose outcome nobody can know yet: what it was, so its audit record says so. */
export class OutcomeUnknownError extends SwitchyardError {
  readonly target: WriteTarget;
  readonly change: Readonly<Record<string, unknown>> | null;
  constructor(message: string, target: WriteTarget, change: Readonly<Record<string, unknown>> | null) {
    super('outcome_unknown', message);
    this.target = target;
    this.change = change;
  }
}

export interface LostCommitCheck<T> {
  readonly target: WriteTarget;
  readonly change: Readonly<Record<string, unknown>> | null;
  /** Reads the object again (undefined: it does not exist). */
  readonly read: () => Promise<{ readonly updatedAt: string } | undefined>;
  /** The write's `value` when it turns out to have been applied. */
  readonly appliedValue: T;
  /** Said in the outcome_unknown answer: how the caller can tell for itself. */
  readonly hint?: string;
}

/**
 * `records.write(change)`, except that a lost commit answer is settled: the object is read
 * again and the write counts as applied when the object carries the write's time (or, for a
 * delete, is gone); as not written when the shared version never reached the write's; and
 * otherwise, or when the database does not answer, as unknown (503 outcome_unknown).
 */
export async function writeSettled<T>(
  records: ManagedRecords,
  check: LostCommitCheck<T>,
  change: (w: ManagedWrites) => Promise<{ readonly commit: boolean; readonly value: T }>,
  options: { readonly topologyBasedOn?: number } = {},
): Promise<{ value: T; version: number | null }> {
  try {
    return await records.write(change, options);
  } catch (err) {
    if (!(err instanceof CommitUnknownError)) throw err;
    const truth = await reRead(records, err, check);
    if (truth === 'applied') return { value: check.appliedValue, version: err.version };
    const what = `${check.target.object} "${check.target.objectId}"`;
    if (truth === 'not_applied') {
      throw new SwitchyardError(
        'database_unavailable',
        `the database lost the connection at the commit; it did not take the write to ${what}: nothing was written`,
      );
    }
    throw new OutcomeUnknownError(
      `the database lost the connection after the write to ${what} was committed or not, and could not be asked again: it may have taken effect. Read ${what} before writing again${check.hint === undefined ? '' : ` (${check.hint})`}`,
      check.target,
      check.change,
    );
  }
}

async function reRead<T>(
  records: ManagedRecords,
  lost: CommitUnknownError,
  check: LostCommitCheck<T>,
): Promise<'applied' | 'not_applied' | 'unknown'> {
  const deleting = check.target.action === 'delete';
  for (let attempt = 0; attempt < RE_READ_ATTEMPTS; attempt++) {
    if (attempt > 0) await sleep(RE_READ_PAUSE_MS);
    try {
      const object = await check.read();
      if (deleting ? object === undefined : object?.updatedAt === lost.at) return 'applied';
      // Versions only grow: below the write's, nothing of it was committed.
      if ((await records.version()) < lost.version) return 'not_applied';
      // Someone else's write took that version, or ours was overwritten since: no telling.
      return 'unknown';
    } catch {
      // The database is still away: ask again after a pause.
    }
  }
  return 'unknown';
}

/** The topology collections' objects, by path segment (as managed/topology.ts writes them). */
const TOPOLOGY_OBJECTS = new Map<string, WriteTarget['object']>([
  ['providers', 'provider'],
  ['routes', 'route'],
  ['tool-routes', 'tool_route'],
  ['pricing', 'price'],
]);

/** The write a request attempts, from its method and path under /admin/v1/; null for a read or no endpoint. */
export function writeTargetOf(method: string, parts: readonly string[]): WriteTarget | null {
  const [collection, id, action] = parts;
  const objectId = id ?? null;
  if (collection === 'teams' && action === undefined) {
    if (method === 'POST' && id === undefined) return { action: 'create', object: 'team', objectId };
    if (method === 'PATCH' && id !== undefined) return { action: 'update', object: 'team', objectId };
    if (method === 'DELETE' && id !== undefined) return { action: 'delete', object: 'team', objectId };
  }
  const kind = collection === undefined ? undefined : TOPOLOGY_OBJECTS.get(collection);
  if (kind !== undefined && action === undefined) {
    if (method === 'POST' && id === undefined) return { action: 'create', object: kind, objectId };
    if (method === 'PATCH' && id !== undefined) return { action: 'update', object: kind, objectId };
    if (method === 'DELETE' && id !== undefined) return { action: 'delete', object: kind, objectId };
  }
  if (collection === 'keys') {
    if (method === 'POST' && id === undefined && action === undefined) return { action: 'create', object: 'key', objectId };
    if (method === 'PATCH' && id !== undefined && action === undefined) return { action: 'update', object: 'key', objectId };
    if (method === 'POST' && id !== undefined && (action === 'revoke' || action === 'rotate')) return { action, object: 'key', objectId };
  }
  return null;
}

// --- Audit ---

/** A write attempt that was not applied: refused (4xx), failed (nothing written) or unknown. */
export function auditAttempt(audit: AuditWriter | null, caller: AdminCaller, target: WriteTarget | null, err: SwitchyardError): void {
  const known = err instanceof OutcomeUnknownError ? err.target : target;
  if (known === null) return;
  const outcome = err instanceof OutcomeUnknownError ? 'unknown' : err.status < 500 ? 'refused' : 'failed';
  const change = err instanceof OutcomeUnknownError ? err.change : null;
  audit?.append(adminWrite({ ...known, token: caller.id, outcome, reason: err.code, change, version: null }));
}

/** The write is committed: audited, then applied here, so the answer reflects it. */
export async function applied(
  ctx: WriteContext,
  write: Pick<LostCommitCheck<unknown>, 'target' | 'change'>,
  version: number | null,
): Promise<Applied | null> {
  ctx.onAudited();
  ctx.audit?.append(adminWrite({ ...write.target, change: write.change, token: ctx.caller.id, outcome: 'applied', reason: null, version }));
  if (version === null) return null;
  return ctx.apply().catch(() => null);
}

// --- Refusals ---

export function judge(outcome: WriteResult, object: 'team' | 'key', id: string): void {
  if (outcome === 'missing') throw object === 'key' ? noKey(id) : new SwitchyardError('not_found', `no team "${id}"`);
  if (outcome === 'stale') {
    throw new SwitchyardError('precondition_failed', `${object} "${id}" has changed since that ETag: read it again, then write`);
  }
}

export const managedByConfig = (object: string, id: string): SwitchyardError =>
  new SwitchyardError('managed_by_config', `${object} "${id}" is written in the config file: change it there (it is read-only here)`);
