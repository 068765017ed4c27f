import { readFileSlice } from '../contract/index.js';
import { GENESIS_HASH, MAX_RECORD_BYTES, recordHash } from './chain.js';
import { ULID_PATTERN } from './ulid.js';
import type { AuditHead } from './writer.js';

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
  const r = await verifyAuditChain(path);
  return r.ok ? { ok: true, records: r.records, gaps: r.gaps } : r;
}

/** A file's ends, for tying rotated files together: its first record (and the anchor it may be), its last. */
export interface ChainEnds {
  /** The first record's seq (null without one) and, when it is an anchor, what it anchors to. */
  readonly first: { readonly seq: number | null; readonly anchor: AuditHead | null } | null;
  /** The last record's seq (null without one) and hash; null for an empty file. */
  readonly last: { readonly seq: number | null; readonly hash: string } | null;
  /** The hash of the record with the seq asked for, when the file holds it. */
  readonly atSeq: string | null;
}

export type ChainResult = ({ readonly ok: true; readonly records: number; readonly gaps: readonly AuditGap[] } & ChainEnds) | Broken;

/** verifyAuditFile, and the file's ends; `hashOfSeq` also finds the hash of the record with that seq. */
export async function verifyAuditChain(path: string, hashOfSeq: number | null = null): Promise<ChainResult> {
  const checker = new ChainChecker(hashOfSeq);
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

const ANCHORED: Record<string, string> = {
  file_deleted: 'deleted',
  file_replaced: 'replaced',
  file_truncated: 'truncated',
  file_rotated: 'rotated at audit.max_bytes',
};

type Broken = { ok: false; line: number; reason: string };

class ChainChecker {
  readonly #hashOfSeq: number | null;
  #first: ChainEnds['first'] = null;
  #last: ChainEnds['last'] = null;
  #atSeq: string | null = null;

  constructor(hashOfSeq: number | null) {
    this.#hashOfSeq = hashOfSeq;
  }

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
    const seq = count(r.seq);
    if (n === 1) {
      const previousSeq = r.event === 'anchor' ? count(r.previous_seq) : null;
      this.#first = {
        seq,
        anchor: previousSeq !== null && typeof r.previous_hash === 'string' ? { seq: previousSeq, hash: r.previous_hash } : null,
      };
    }
    this.#last = { seq, hash };
    if (seq !== null && seq === this.#hashOfSeq) this.#atSeq = hash;
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

  end(records: number): ChainResult {
    if (this.#suspect !== null)
      return { ok: false, line: this.#suspect.line - 1, reason: 'its bytes do not match the hash the next record holds' };
    return { ok: true, records, gaps: this.#gaps, first: this.#first, last: this.#last, atSeq: this.#atSeq };
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

/** One file of a verified set, in chain order. */
export interface SetFile extends ChainEnds {
  readonly path: string;
  readonly records: number;
  readonly gaps: readonly AuditGap[];
}

export type SetResult =
  | {
      readonly ok: true;
      /** In chain order: by first seq (the order given when a file has none); empty files last. */
      readonly files: readonly SetFile[];
      readonly records: number;
      readonly gaps: number;
      /** The last record of the set; null when no file holds a record. */
      readonly head: { readonly seq: number | null; readonly hash: string } | null;
    }
  /** `line` 0: about the file as a whole, or how it ties to another file. */
  | { readonly ok: false; readonly path: string; readonly line: number; readonly reason: string };

/**
 * Verifies rotated audit files as one chain: each file alone, then, in order of their
 * first seq, that each file after the first starts with an anchor naming the seq and hash
 * of the last record of the file before it (a file missing between them, or one cut at the
 * end, breaks that link). The first file may itself start with an anchor: older files
 * may have been archived. With `head` (a seq and hash taken earlier, from /admin/status),
 * also that the set still reaches that record and that it hashes the same: cutting the last
 * records of the newest file leaves each file intact, and only a known head shows the cut.
 */
export async function verifyAuditSet(paths: readonly string[], head: AuditHead | null = null): Promise<SetResult> {
  const files: SetFile[] = [];
  for (const path of paths) {
    const r = await verifyAuditChain(path, head?.seq ?? null);
    if (!r.ok) return { ok: false, path, line: r.line, reason: r.reason };
    files.push({ path, records: r.records, gaps: r.gaps, first: r.first, last: r.last, atSeq: r.atSeq });
  }
  const held = files.filter((f) => f.first !== null);
  const ordered = held.every((f) => f.first?.seq !== null) ? [...held].sort((a, b) => (a.first?.seq ?? 0) - (b.first?.seq ?? 0)) : held;
  for (let i = 1; i < ordered.length; i += 1) {
    const before = ordered[i - 1] as SetFile;
    const file = ordered[i] as SetFile;
    const broken = link(before, file);
    if (broken !== null) return { ok: false, path: file.path, line: 1, reason: broken };
  }
  const chain = [...ordered, ...files.filter((f) => f.first === null)];
  const last = ordered.at(-1)?.last ?? null;
  if (head !== null) {
    const problem = checkHead(ordered, last, head);
    if (problem !== null) return { ok: false, path: problem.path, line: 0, reason: problem.reason };
  }
  return {
    ok: true,
    files: chain,
    records: chain.reduce((n, f) => n + f.records, 0),
    gaps: chain.reduce((n, f) => n + f.gaps.length, 0),
    head: last,
  };
}

/** Why `file` does not continue `before`'s chain, or null when its anchor names before's last record. */
function link(before: SetFile, file: SetFile): string | null {
  const last = before.last as { seq: number | null; hash: string };
  const anchor = file.first?.anchor ?? null;
  const ends = `${JSON.stringify(before.path)} ends at seq ${last.seq ?? '?'}`;
  if (anchor === null) return `it does not start with an anchor record, so it does not continue ${ends}`;
  if (last.seq !== null && anchor.seq > last.seq)
    return `its anchor follows seq ${anchor.seq}, but ${ends}: the records from seq ${last.seq + 1} to ${anchor.seq} are missing (a file left out, or the end of that one cut)`;
  if (anchor.seq !== last.seq || anchor.hash !== last.hash)
    return `its anchor names seq ${anchor.seq} with hash ${anchor.hash}, but ${ends} with hash ${last.hash}`;
  return null;
}

/** The set still holds the known head, unchanged; null when it does. */
function checkHead(ordered: readonly SetFile[], last: SetFile['last'], head: AuditHead): { path: string; reason: string } | null {
  const newest = ordered.at(-1);
  const path = newest?.path ?? '';
  const known = `the known head, seq ${head.seq}`;
  if (last === null || last.seq === null) return { path, reason: `no record with seq: cannot reach ${known}` };
  if (last.seq < head.seq)
    return {
      path,
      reason: `the records end at seq ${last.seq}, before ${known}: ${head.seq - last.seq} record(s) after seq ${last.seq} were cut or are in a file not given`,
    };
  const at = ordered.find((f) => f.atSeq !== null);
  if (at === undefined) return { path, reason: `no file given holds seq ${head.seq} (${known})` };
  if (at.atSeq !== head.hash)
    return { path: at.path, reason: `the record at seq ${head.seq} hashes to ${at.atSeq}, not to ${head.hash} (${known}): it was changed` };
  return null;
}
