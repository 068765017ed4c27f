import { createHash } from 'node:crypto';

/** The prev_hash of a file's first record. A constant, so a file cut at the front no longer verifies. */
export const GENESIS_HASH = '0'.repeat(64);

/** SHA-256 of a record's exact bytes, without its newline. */
export function recordHash(line: Uint8Array): string {
  return createHash('sha256').update(line).digest('hex');
}

/** The longest record the writer continues from or verify accepts. */
export const MAX_RECORD_BYTES = 1024 * 1024;
