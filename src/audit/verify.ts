import { readFileSlice } from '../contract/index.js';
import { GENESIS_HASH, MAX_RECORD_BYTES, recordHash } from './chain.js';
import { ULID_PATTERN } from './ulid.js';

export type VerifyResult =
  | { readonly ok: true; readonly records: number }
  | { readonly ok: false /** 1-based line of the first broken record. */; readonly line: number; readonly reason: string };

const SLICE_BYTES = 1024 * 1024;

/**
 * Checks an audit file's hash chain and names the first broken record by line number.
 * When line N's prev_hash disagrees with line N-1, either N-1's bytes changed or N's
 * prev_hash did; line N+1 tells which (it still matches N only if N is intact). The last
 * record has no successor, so a change to it is caught only once another record follows.
 * Reads through the bounded reader, one slice at a time.
 */
export async function verifyAuditFile(path: string): Promise<VerifyResult> {
  const checker = new ChainChecker();
  let position = 0;
  let carry: Buffer = Buffer.alloc(0);
  let lineNo = 0;
  let size = Number.POSITIVE_INFINITY;
  // Bounded: every slice advances the position; a file that keeps growing is read to the size first seen.
  for (let slice = 0; position < size; slice += 1) {
    const r = await readFileSlice(path, position, SLICE_BYTES, 'audit file');
    if (!r.ok) return { ok: false, line: 0, reason: r.message };
    if (slice === 0) size = r.size;
    if (r.bytes.length === 0) break;
    position += r.bytes.length;
    let data = carry.length === 0 ? r.bytes : Buffer.concat([carry, r.bytes]);
    for (let nl = data.indexOf(0x0a); nl !== -1; nl = data.indexOf(0x0a)) {
      lineNo += 1;
      const broken = checker.line(lineNo, data.subarray(0, nl));
      if (broken !== null) return broken;
      data = data.subarray(nl + 1);
    }
    if (data.length > MAX_RECORD_BYTES) return { ok: false, line: lineNo + 1, reason: `record longer than ${MAX_RECORD_BYTES} bytes` };
    carry = Buffer.from(data);
  }
  if (carry.length > 0) return { ok: false, line: lineNo + 1, reason: 'incomplete record (no final newline)' };
  return checker.end(lineNo);
}

class ChainChecker {
  #prevHash = GENESIS_HASH;
  /** A line whose prev_hash disagreed with its predecessor, waiting for its successor's verdict. */
  #suspect: { line: number; hash: string } | null = null;

  line(n: number, bytes: Buffer): { ok: false; line: number; reason: string } | null {
    const r = parse(bytes);
    const hash = recordHash(bytes);
    if (this.#suspect !== null) {
      // The suspect's successor still chains to it: the suspect is intact, so the line before it changed.
      const s = this.#suspect.line;
      return r !== null && r.prev_hash === this.#suspect.hash
        ? { ok: false, line: s - 1, reason: 'its bytes do not match the hash the next record holds' }
        : { ok: false, line: s, reason: 'its prev_hash does not match the previous record' };
    }
    if (r === null) return { ok: false, line: n, reason: 'not an audit record (JSON with id, ts, event, prev_hash)' };
    if (r.prev_hash !== this.#prevHash) {
      if (n === 1) return { ok: false, line: 1, reason: 'the first record does not start from the genesis hash' };
      this.#suspect = { line: n, hash };
    }
    this.#prevHash = hash;
    return null;
  }

  end(records: number): { ok: true; records: number } | { ok: false; line: number; reason: string } {
    if (this.#suspect !== null)
      return { ok: false, line: this.#suspect.line - 1, reason: 'its bytes do not match the hash the next record holds' };
    return { ok: true, records };
  }
}

function parse(bytes: Buffer): { prev_hash: string } | null {
  let record: unknown;
  try {
    record = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  const r = record as { id?: unknown; ts?: unknown; prev_hash?: unknown; event?: unknown } | null;
  if (typeof r !== 'object' || r === null || typeof r.prev_hash !== 'string') return null;
  if (typeof r.id !== 'string' || !ULID_PATTERN.test(r.id) || typeof r.ts !== 'string' || typeof r.event !== 'string') return null;
  return { prev_hash: r.prev_hash };
}
