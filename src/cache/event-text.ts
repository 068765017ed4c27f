import { SseParser } from '../providers/index.js';

// The text of server-sent events as a replay handles it: an entry's events read back
// (name and data), an encoder's output cut into whole events for the writer, and an
// answer's text cut into the deltas a stream rebuilt from a whole answer gives it in.

/** One stored event read back: its `event:` name ('' when absent), its data (null for a comment, a keep-alive), and its text as stored. */
export interface ReadEvent {
  readonly name: string;
  readonly data: string | null;
  readonly text: string;
}

/** The entry's events, each with its name and data. */
export function readEvents(events: readonly string[]): ReadEvent[] {
  const parser = new SseParser();
  return events.map((text) => {
    // Each stored event is whole, so the parser hands it over before push returns; one
    // stored without its blank line comes out at end.
    let read: ReadEvent | null = null;
    const take = (name: string, data: string) => {
      read = { name, data, text };
    };
    parser.push(text, take);
    if (read === null) parser.end(take);
    return read ?? { name: '', data: null, text };
  });
}

/** An encoder's output cut into whole events: its data is JSON, which never holds a raw line break, so every `\n\n` ends one. */
export function cutEvents(out: string): string[] {
  const events: string[] = [];
  let start = 0;
  for (let end = out.indexOf('\n\n'); end !== -1; end = out.indexOf('\n\n', start)) {
    events.push(out.slice(start, end + 2));
    start = end + 2;
  }
  if (start < out.length) events.push(out.slice(start));
  return events;
}

/** About how long a replayed delta is: a few words, so a client of a whole answer replayed as a stream sees it arrive in pieces. */
export const DELTA_CHARS = 24;

/**
 * A text cut into deltas of at most `size` UTF-16 units, each ending after a space or a line
 * break when one falls in its span (a word is not cut), else at `size` (a run with no spaces:
 * a long word, CJK text), never inside a surrogate pair. Concatenated, they are the text.
 */
export function deltaPieces(text: string, size = DELTA_CHARS): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (text.length - start > size) {
    let cut = -1;
    for (let i = start + size - 1; i > start; i--) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x09) {
        cut = i + 1;
        break;
      }
    }
    if (cut === -1) {
      cut = start + size;
      // A high surrogate ends the span: its pair goes with it into the next piece.
      const last = text.charCodeAt(cut - 1);
      if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
    }
    pieces.push(text.slice(start, cut));
    start = cut;
  }
  if (start < text.length) pieces.push(text.slice(start));
  return pieces;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON text that holds an object, or null. */
export function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}
