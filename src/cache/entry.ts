import type { TokenUsage } from '../providers/index.js';

// A cached answer: what the client of the request that stored it was given (after the
// translation to its protocol; never one a guardrail acted on), with where it came from and
// what it cost. An entry is only ever served to a client of the same endpoint and protocol.

/** The endpoints a cache serves: chat completions (OpenAI or Anthropic Messages), completions, the Responses API, embeddings. */
export type CachedOperation = 'chat' | 'completions' | 'responses' | 'embeddings';

/** The client protocol an entry was stored for (a chat endpoint's; `responses` for the Responses API). */
export type CachedProtocol = 'openai' | 'anthropic' | 'responses';

/** The candidate that answered: what a hit's attribution headers and its ledger row name. */
export interface EntryOrigin {
  readonly provider: string;
  readonly model: string;
  /** The candidate's stable_id. */
  readonly candidate: string;
}

export interface CacheEntry {
  /** The format of this record; a reader refuses (as a miss) any other. */
  readonly v: 1;
  /** The key's digest (hex): what `x-switchyard-cache-key` shows. */
  readonly key: string;
  readonly operation: CachedOperation;
  readonly protocol: CachedProtocol;
  /** The route (requested model) and the storing caller's team (`none` for an anonymous one): what `DELETE /admin/v1/cache` filters on. */
  readonly route: string;
  readonly team: string;
  /** Epoch ms when it was stored: a hit's `age`, and `max-age`'s test. */
  readonly createdAtMs: number;
  /** How long it lives, from createdAtMs. */
  readonly ttlS: number;
  /**
   * `whole`: `body` is the JSON answer as its client got it. `stream`: `events` are the
   * server-sent events its client got, each one whole (`event: …\ndata: …\n\n`), in order.
   */
  readonly form: 'whole' | 'stream';
  readonly body?: string;
  readonly events?: readonly string[];
  readonly origin: EntryOrigin;
  /** The usage the answer reported, or null. */
  readonly usage: TokenUsage | null;
  /** What the answer cost when it was made (micro-USD), or null when unpriced: what a hit saves. */
  readonly costMicroUsd: number | null;
}

/** What the store holds for a semantic lookup: an entry's key and the vector of its last user turn. */
export interface NearestMatch {
  readonly key: string;
  /** Cosine similarity to the vector looked up, in [-1, 1]. */
  readonly similarity: number;
}

/**
 * The size an entry is counted at (max_entry_bytes, max_bytes, `switchyard_cache_bytes`):
 * the UTF-8 bytes of its answer (body or events) and its names, plus a fixed allowance for
 * the rest of the record. Not its JSON's exact length (that would stringify the whole answer
 * once more on every store); within a few hundred bytes of it, more for text JSON escapes.
 */
export function entryBytes(entry: CacheEntry): number {
  let bytes = ENTRY_OVERHEAD_BYTES + entry.key.length + Buffer.byteLength(entry.route) + Buffer.byteLength(entry.team);
  if (entry.body !== undefined) bytes += Buffer.byteLength(entry.body);
  if (entry.events !== undefined) for (const e of entry.events) bytes += Buffer.byteLength(e) + 3;
  const o = entry.origin;
  return bytes + Buffer.byteLength(o.provider) + Buffer.byteLength(o.model) + Buffer.byteLength(o.candidate);
}

/** The record's fixed members (version, form, times, usage, cost) and their names, generously. */
const ENTRY_OVERHEAD_BYTES = 384;
