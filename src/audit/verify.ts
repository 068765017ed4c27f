import { readFileSlice } from '../contract/index.js';
import { GENESIS_HASH, MAX_RECORD_BYTES, recordHash } from './chain.js';
import { ULID_PATTERN } from './ulid.js';

/**
 * A loss the file declares in a `gap` record: records that could not be written
 * (`records`), or the bytes of a torn last record cut at start-up (`cutBytes`); or an
 * `anchor` record (reason `file_deleted`, `file_replaced`, `file_truncated`), where the
 * writer went on after its file was rotated away, `afterSeq` being the old file's last seq.
 */
export interface AuditGap {
  /** 1-based line of the gap record. */
  readonly line: number;
  readonly reason: string;
  /** The seq of the last whole record before the loss (0: none), or the old file's last seq for an anchor. */
  readonly afterSeq: number | null;
  readonly records: number | null;
  readonly cutBytes: number | null;
}

export type VerifyResult =
  | { readonly ok: true; readonly records: number; readonly gaps: readonly AuditGap[] }
  | { readonly ok: false /** 1-based line of the first broken record. */; readonly line: number; readonly reason: string };

const SLICE_BYTES = 1024 * 1024;

/**
 * Checks an audit file's hash chain and names the first broken record by line number.
 * When line N's prev_hash disagrees with line N-1, either N-1's bytes changed or N's
 * prev_hash did; line N+1 tells which (it still matches N only if N is intact). The last
 * record has no successor, so a change to it is caught only once another record follows.
 * Records carry `seq` (1 at the genesis record, one more on each line); a file from before
 * seq has none, and its records are accepted without. Gap records are collected: the chain
 * runs through them, and the result names each loss they declare.
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

/** What `switchyard audit verify` prints for an intact file: the count, then each gap, in file order. */
export function describeIntact(result: { readonly records: number; readonly gaps: readonly AuditGap[] }): string {
  const head = `${result.records} record(s), chain intact`;
  if (result.gaps.length === 0) return head;
  return `${head}, ${result.gaps.length} gap(s): ${result.gaps.map(describeGap).join('; ')}`;
}

export function describeGap(g: AuditGap): string {
  const after = g.afterSeq === null ? '' : g.afterSeq === 0 ? ' at the start of the file' : ` after seq ${g.afterSeq}`;
  if (g.reason.startsWith('file_'))
    return `the writer went on here after its file was ${ANCHORED[g.reason] ?? g.reason}; the file before ends at seq ${g.afterSeq ?? '?'} (line ${g.line})`;
  if (g.cutBytes !== null) return `${g.cutBytes} byte(s) of an incomplete record cut at start-up${after} (line ${g.line})`;
  if (g.records !== null) return `${g.records} record(s) lost${after} (line ${g.line})`;
  return `${g.reason}${after} (line ${g.line})`;
}

const ANCHORED: Record<string, string> = { file_deleted: 'deleted', file_replaced: 'replaced', file_truncated: 'truncated' };

type Broken = { ok: false; line: number; reason: string };

class ChainChecker {
  #prevHash = GENESIS_HASH;
  /** The previous record's seq: undefined before the first record, null when it had none. */
  #prevSeq: number | null | undefined = undefined;
  readonly #gaps: AuditGap[] = [];
  /** A line whose prev_hash disagreed with its predecessor, waiting for its successor's verdict. */
  #suspect: { line: number; hash: string } | null = null;

  line(n: number, bytes: Buffer): Broken | null {
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
    if (n === 1 && r.event === 'anchor' && typeof r.previous_hash === 'string' && r.prev_hash === r.previous_hash) {
      // A file the writer went on in after its old one was rotated away: it continues that file's chain.
      this.#prevHash = r.prev_hash;
      this.#prevSeq = count(r.previous_seq) ?? undefined;
    }
    if (r.prev_hash !== this.#prevHash) {
      if (n === 1) return { ok: false, line: 1, reason: 'the first record does not start from the genesis hash' };
      this.#suspect = { line: n, hash };
    }
    const seqBroken = this.#checkSeq(n, r.seq);
    if (seqBroken !== null) return seqBroken;
    if (r.event === 'gap' || r.event === 'anchor') {
      this.#gaps.push({
        line: n,
        reason: typeof r.reason === 'string' ? r.reason : r.event,
        afterSeq: count(r.event === 'gap' ? r.after_seq : r.previous_seq),
        records: count(r.records),
        cutBytes: count(r.cut_bytes),
      });
    }
    this.#prevHash = hash;
    return null;
  }

  /** seq is 1 at the genesis record and one more on each line; a file from before seq has none until a newer writer continues it. */
  #checkSeq(n: number, seq: unknown): Broken | null {
    const prev = this.#prevSeq;
    if (seq === undefined) {
      if (typeof prev === 'number') return { ok: false, line: n, reason: 'it has no seq, but the record before it has one' };
      this.#prevSeq = null;
      return null;
    }
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1)
      return { ok: false, line: n, reason: 'its seq is not a positive whole number' };
    // After records without seq, the first one with it continues the count of lines.
    const expected = typeof prev === 'number' ? prev + 1 : n;
    if (seq !== expected) return { ok: false, line: n, reason: `its seq ${seq} is not ${expected}` };
    this.#prevSeq = seq;
    return null;
  }

  end(records: number): VerifyResult {
    if (this.#suspect !== null)
      return { ok: false, line: this.#suspect.line - 1, reason: 'its bytes do not match the hash the next record holds' };
    return { ok: true, records, gaps: this.#gaps };
  }
}

function count(x: unknown): number | null {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : null;
}

interface Parsed {
  readonly prev_hash: string;
  readonly event: string;
  readonly seq?: unknown;
  readonly reason?: unknown;
  readonly after_seq?: unknown;
  readonly records?: unknown;
  readonly cut_bytes?: unknown;
  readonly previous_seq?: unknown;
  readonly previous_hash?: unknown;
}

function parse(bytes: Buffer): Parsed | null {
  let record: unknown;
  try {
    record = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  const r = record as { id?: unknown; ts?: unknown; prev_hash?: unknown; event?: unknown } | null;
  if (typeof r !== 'object' || r === null || typeof r.prev_hash !== 'string') return null;
  if (typeof r.id !== 'string' || !ULID_PATTERN.test(r.id) || typeof r.ts !== 'string' || typeof r.event !== 'string') return null;
  return r as Parsed;
}
