import { usageFromResponses } from './canonical/usage.js';
import type { TokenUsage } from './metering.js';

/** The events whose data is read: the first (the response's id) and the terminal ones (its usage). */
const WANTED = new Set(['response.created', 'response.completed', 'response.incomplete', 'response.failed']);
/** Enough of an event's start to hold its `event:` line, or its data's leading `"type"`. */
const HEAD_BYTES = 160;
/** A terminal event carries the whole response; one larger than this is not read (and not billed by it). */
const MAX_EVENT_BYTES = 16 * 1024 * 1024;

const EVENT_LINE = /^event: ?([^\r\n]*)\r?\n/m;
/** OpenAI writes `sequence_number` right after `type`, within the head of every event. */
const SEQUENCE = /"sequence_number"\s*:\s*(\d{1,15})\b/;
const DATA_TYPE = /^data: ?\{\s*"type"\s*:\s*"([^"\\]+)"/m;

/**
 * Reads what the gateway needs from an OpenAI Responses API stream that it relays
 * untouched: the response id (in `response.created`, the first event) and the usage (in
 * `response.completed`, or `.incomplete` / `.failed`, the last). Most events are text
 * deltas the gateway has no use for: it cuts events at their blank line with native
 * byte searches, looks at the first bytes of each for its type, and skips the rest of an
 * unwanted one without decoding it. Only wanted events, and any whose type the head does
 * not show, are decoded and parsed. Inside JSON a newline is always escaped, so a line
 * that starts with `event:` or `data:` is an SSE field, never model text.
 */
export class ResponsesStreamReader {
  readonly #onId: (id: string) => void;
  #state: 'head' | 'keep' | 'skip' = 'head';
  #parts: Buffer[] = [];
  #bytes = 0;
  /** Bytes of the current line seen in earlier chunks. */
  #lineBytes = 0;
  #lastByte = -1;
  #id: string | null = null;
  #usage: TokenUsage | null = null;
  /** The data of the `response.completed` or `response.incomplete` event: the whole Response, parsed only when asked for. */
  #terminal: string | null = null;
  /** The sequence_number the next event takes: one after the last event's (counted when an event's head does not show it). */
  #nextSequence = 0;
  /** The current event's sequence_number, once its head showed it. */
  #sequence: number | null = null;
  /** The current block has a type or data: an event, not a comment. */
  #isEvent = false;

  constructor(onId: (id: string) => void) {
    this.#onId = onId;
  }

  get id(): string | null {
    return this.#id;
  }

  get usage(): TokenUsage | null {
    return this.#usage;
  }

  /** The JSON text of the event that ended the stream with an answer (completed or incomplete); null before, or when it failed. */
  get terminalEvent(): string | null {
    return this.#terminal;
  }

  /**
   * The sequence_number for an event the gateway adds after those relayed (its error event):
   * the Responses API numbers every event of a stream, and a client's schema requires it.
   */
  get nextSequenceNumber(): number {
    return this.#nextSequence;
  }

  push(chunk: Buffer): void {
    let from = 0;
    let lineStart = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, lineStart)) {
      const length = this.#lineBytes + (nl - lineStart);
      // A blank line ends the event: "\n\n", or "\r\n\r\n" with the \r possibly in the last chunk.
      const blank = length === 0 || (length === 1 && (nl > lineStart ? chunk[nl - 1] : this.#lastByte) === 0x0d);
      this.#lineBytes = 0;
      lineStart = nl + 1;
      if (blank) {
        this.#take(chunk, from, nl);
        this.#finish();
        from = lineStart;
      }
    }
    this.#lineBytes += chunk.length - lineStart;
    this.#take(chunk, from, chunk.length);
    if (chunk.length > 0) this.#lastByte = chunk[chunk.length - 1] as number;
  }

  /** The stream ended: a last event without its blank line still counts. */
  end(): void {
    if (this.#bytes > 0) this.#finish();
  }

  #take(chunk: Buffer, from: number, to: number): void {
    if (this.#state === 'skip' || to <= from) return;
    this.#parts.push(chunk.subarray(from, to));
    this.#bytes += to - from;
    if (this.#state === 'head' && this.#bytes >= HEAD_BYTES) this.#decide();
    else if (this.#bytes > MAX_EVENT_BYTES) this.#drop();
  }

  /** Keeps the event when its type is wanted or not yet known from its head; skips it otherwise. */
  #decide(): void {
    const first = this.#parts[0] as Buffer;
    const head = (first.length >= HEAD_BYTES ? first : Buffer.concat(this.#parts)).toString('latin1', 0, HEAD_BYTES);
    const type = EVENT_LINE.exec(head)?.[1] ?? DATA_TYPE.exec(head)?.[1];
    const sequence = SEQUENCE.exec(head)?.[1];
    if (sequence !== undefined) this.#sequence = Number(sequence);
    this.#isEvent = type !== undefined || head.includes('data:');
    if (type === undefined || WANTED.has(type.trim())) this.#state = 'keep';
    else this.#drop();
  }

  #drop(): void {
    this.#state = 'skip';
    this.#parts = [];
  }

  #finish(): void {
    // A blank line after a blank line ends no event.
    if (this.#bytes === 0 && this.#state === 'head') return;
    if (this.#state === 'head') this.#decide();
    if (this.#state === 'keep') this.#read(Buffer.concat(this.#parts, this.#bytes).toString('utf8'));
    if (this.#isEvent) this.#nextSequence = (this.#sequence ?? this.#nextSequence) + 1;
    this.#state = 'head';
    this.#parts = [];
    this.#bytes = 0;
    this.#sequence = null;
    this.#isEvent = false;
  }

  #read(block: string): void {
    let event = '';
    let data = '';
    for (const line of block.split('\n')) {
      const text = line.endsWith('\r') ? line.slice(0, -1) : line;
      if (text.startsWith('data:')) data += data === '' ? fieldValue(text, 5) : `\n${fieldValue(text, 5)}`;
      else if (text.startsWith('event:')) event = fieldValue(text, 6);
    }
    let parsed: { type?: unknown; sequence_number?: unknown; response?: { id?: unknown; usage?: unknown } };
    try {
      parsed = JSON.parse(data) as typeof parsed;
    } catch {
      return;
    }
    if (parsed === null || typeof parsed !== 'object') return;
    if (Number.isSafeInteger(parsed.sequence_number)) this.#sequence = parsed.sequence_number as number;
    const type = event !== '' ? event : parsed.type;
    if (typeof type !== 'string' || !WANTED.has(type)) return;
    const response = parsed.response;
    if (response === null || typeof response !== 'object') return;
    if (this.#id === null && typeof response.id === 'string' && response.id !== '') {
      this.#id = response.id;
      this.#onId(response.id);
    }
    if (type !== 'response.created') this.#usage = usageFromResponses(response.usage) ?? this.#usage;
    if (type === 'response.completed' || type === 'response.incomplete') this.#terminal = data;
  }
}

function fieldValue(line: string, after: number): string {
  return line.charCodeAt(after) === 0x20 ? line.slice(after + 1) : line.slice(after);
}
