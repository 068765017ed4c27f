import { COLON, CR, LF } from './ascii.js';

// The framing of a server-sent event stream (WHATWG HTML, "event stream interpretation"):
// a line ends with CRLF, LF or a lone CR, and an empty line ends an event. Upstreams use
// all three (Python servers write CRLF), and a network chunk may split an event, a line or
// a CRLF pair anywhere. The reader works on bytes, never decodes, and finds line ends with
// native searches over each new chunk only, so its work per chunk is proportional to the
// chunk; what it holds is the one event still open, and that is bounded.

const EMPTY: Buffer = Buffer.alloc(0);

/** A provider's `max_event_bytes` when it sets none: 1 MiB. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

/**
 * Cuts a byte stream into whole events, holding back the event still open at a chunk's end
 * until its empty line arrives. Events leave it as the upstream framed them, byte for byte.
 */
export class SseReader {
  readonly #maxEventBytes: number;
  /** The open event's bytes from earlier chunks. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** Bytes of the current line seen in earlier chunks (0: a line starts at the next byte). */
  #lineBytes = 0;
  /** The last byte read was a CR: an LF that comes next is the second half of its CRLF. */
  #afterCr = false;
  /** The open event has a line other than a comment. */
  #hasField = false;
  #overflowed = false;
  #events = 0;

  constructor(maxEventBytes: number) {
    this.#maxEventBytes = maxEventBytes;
  }

  /** Whole events read so far; a block of only empty lines or comments is not one. */
  get events(): number {
    return this.#events;
  }

  /**
   * The bytes of the events this chunk completes, the start of the first one (held from
   * earlier chunks) included: empty when it completes none. Null once an event has grown
   * past the bound; nothing is read after that.
   */
  push(chunk: Buffer): Buffer | null {
    if (this.#overflowed) return null;
    if (chunk.length === 0) return EMPTY;
    const end = this.#scan(chunk);
    if (end === -1) return this.#overflow();
    let out: Buffer = EMPTY;
    if (end > 0) {
      out = this.#held.length === 0 ? chunk.subarray(0, end) : Buffer.concat([...this.#held, chunk.subarray(0, end)]);
      this.#held = [];
      this.#heldBytes = 0;
    }
    if (end < chunk.length) {
      this.#held.push(end === 0 ? chunk : chunk.subarray(end));
      this.#heldBytes += chunk.length - end;
      if (this.#heldBytes > this.#maxEventBytes) return this.#overflow();
    }
    return out;
  }

  /** The stream ended: the bytes of an event left without its empty line (empty when none). */
  end(): Buffer {
    const rest = this.#held.length === 1 ? (this.#held[0] as Buffer) : Buffer.concat(this.#held, this.#heldBytes);
    if (this.#hasField) this.#events += 1;
    this.#held = [];
    this.#heldBytes = 0;
    this.#hasField = false;
    return rest;
  }

  #overflow(): null {
    this.#overflowed = true;
    this.#held = [];
    this.#heldBytes = 0;
    return null;
  }

  /** The whole events in `bytes` (what `push` returned), each as the upstream framed it. */
  static split(bytes: Buffer): Buffer[] {
    const events: Buffer[] = [];
    let from = 0;
    new SseReader(Number.POSITIVE_INFINITY).#scan(bytes, (end) => {
      events.push(bytes.subarray(from, end));
      from = end;
    });
    if (from < bytes.length) events.push(bytes.subarray(from));
    return events;
  }

  /**
   * Finds the line ends in `chunk`, with the state the chunks before it left. Returns where
   * the last whole event in it ends (0: none ends here), or -1 when a whole event was larger
   * than the bound.
   */
  #scan(chunk: Buffer, onEventEnd?: (end: number) => void): number {
    let lineStart = 0;
    if (this.#afterCr && chunk[0] === LF) lineStart = 1;
    this.#afterCr = false;
    let carried = this.#heldBytes;
    let eventStart = 0;
    let lf = chunk.indexOf(LF, lineStart);
    let cr = chunk.indexOf(CR, lineStart);
    while (lf !== -1 || cr !== -1) {
      let at: number;
      let next: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        at = lf;
        next = lf + 1;
      } else {
        at = cr;
        next = chunk[cr + 1] === LF ? cr + 2 : cr + 1;
        // A CR at the chunk's end: its LF, if it has one, is the next chunk's first byte.
        if (next === chunk.length && next === cr + 1) this.#afterCr = true;
        cr = chunk.indexOf(CR, next);
      }
      if (lf !== -1 && lf < next) lf = chunk.indexOf(LF, next);
      if (this.#lineBytes === 0 && at === lineStart) {
        // An empty line: the event ends after it.
        if (carried + (next - eventStart) > this.#maxEventBytes) return -1;
        carried = 0;
        if (this.#hasField) this.#events += 1;
        this.#hasField = false;
        eventStart = next;
        onEventEnd?.(next);
      } else if (this.#lineBytes === 0 && chunk[lineStart] !== COLON) {
        this.#hasField = true;
      }
      this.#lineBytes = 0;
      lineStart = next;
    }
    if (lineStart < chunk.length) {
      if (this.#lineBytes === 0 && chunk[lineStart] !== COLON) this.#hasField = true;
      this.#lineBytes += chunk.length - lineStart;
    }
    return eventStart;
  }
}

/** The whole events in `bytes` (what SseReader.push returned), each as the upstream framed it. */
export function splitEvents(bytes: Buffer): Buffer[] {
  return SseReader.split(bytes);
}
