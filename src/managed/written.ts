import type { Applied } from './commit.js';

// What a write is asked with, and what it answers: the transport (the admin API's HTTP
// mapping) reads the body and the If-Match only when the write asks for them, so a refusal
// that needs neither comes first, whatever the body holds.

export interface Asked {
  /** The body as a JSON object (`emptyIsObject`: an empty body is `{}`). */
  body(emptyIsObject?: boolean): Promise<Record<string, unknown>>;
  /** The version `If-Match` names; null = unconditional. */
  expected(): number | null;
  /** Reads (and ignores) a body the write takes none of. */
  drain(): Promise<void>;
}

/** A write's answer: its status, the object's view and ETag (null for a delete), and how it was applied. */
export interface Written {
  readonly status: 200 | 201 | 204;
  readonly view: Record<string, unknown> | null;
  readonly etag: string | null;
  readonly applied: Applied | null;
}

export const tagOf = (version: number): string => `"${version}"`;
