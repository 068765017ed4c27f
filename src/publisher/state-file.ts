// The publisher's memory across restarts: the source_uid it publishes under and the last
// source_generation it used. The gateway refuses a lower generation from the same source_uid
// (rollback protection), so losing count would make every later publish a "rollback".
import { z } from 'zod';
import { formatPath, readFileSlice } from '../contract/index.js';
import { PublishError } from './issues.js';
import { writeByRename } from './output.js';

const MAX_STATE_BYTES = 64 * 1024;
export const STATE_FORMAT = 'switchyard-publisher-state/1';

const stateSchema = z.strictObject({
  format: z.literal(STATE_FORMAT, `must be "${STATE_FORMAT}"`),
  source_uid: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, 'must be 1-128 of A-Z a-z 0-9 _ . : -'),
  source_generation: z.int('must be a whole number > 0').min(1, 'must be a whole number > 0').max(Number.MAX_SAFE_INTEGER),
  revision: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits'),
  updated_at: z.string(),
});

export interface PublisherState {
  readonly sourceUid: string;
  readonly sourceGeneration: number;
  /** The revision published under that generation. */
  readonly revision: string;
}

/**
 * The state at `path`, or null when there is none yet. Anything else that is wrong (bad
 * JSON, a missing field, generation 0) is a PublishError: silently starting again from 0
 * would publish revisions the gateway refuses as rollbacks.
 */
export async function readState(path: string): Promise<PublisherState | null> {
  const where = `state file ${JSON.stringify(path)}`;
  const read = await readFileSlice(path, 0, MAX_STATE_BYTES + 1, 'state file');
  if (!read.ok) {
    if (read.reason === 'missing') return null;
    throw new PublishError('state_unreadable', read.message);
  }
  if (read.size > MAX_STATE_BYTES) throw new PublishError('state_invalid', `${where}: larger than ${MAX_STATE_BYTES} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(read.bytes.toString('utf8'));
  } catch {
    throw new PublishError('state_invalid', `${where}: not valid JSON; fix or remove it (removing starts a new source_uid)`);
  }
  const parsed = stateSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0] ?? ''] : (issue?.path ?? []);
    const message =
      issue?.code === 'unrecognized_keys'
        ? 'unknown key'
        : issue?.code === 'invalid_type' && issue.input === undefined
          ? 'required'
          : (issue?.message ?? 'invalid');
    throw new PublishError('state_invalid', `${where}: ${formatPath(path) || '(top level)'}: ${message}`);
  }
  return { sourceUid: parsed.data.source_uid, sourceGeneration: parsed.data.source_generation, revision: parsed.data.revision };
}

/** Durably replaces the state (temp file, fsync, rename, fsync of the folder). */
export async function writeState(path: string, state: PublisherState, now: Date): Promise<void> {
  const body = {
    format: STATE_FORMAT,
    source_uid: state.sourceUid,
    source_generation: state.sourceGeneration,
    revision: state.revision,
    updated_at: now.toISOString(),
  };
  try {
    await writeByRename(path, `${JSON.stringify(body, null, 2)}\n`);
  } catch (err) {
    throw new PublishError(
      'write_failed',
      `cannot write state file ${JSON.stringify(path)}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}
