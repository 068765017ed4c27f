import { COLON, CR, LF, OPEN_BRACE, QUOTE, SPACE, TAB } from './ascii.js';
import { splitEvents } from './sse-reader.js';

// What one server-sent event says, for the few the relay must recognise: the usage-only
// chunk of an OpenAI stream (left out for a client that did not ask for it) and an error
// the upstream sends in its stream. Both are decided by parsing the event's data as JSON,
// so spacing (`"choices": []`, as Python's json.dumps writes it) cannot hide them. Parsing
// every event would cost the hot path, so a native byte search first rules out the events
// that cannot be one: inside a JSON string a quote is escaped, so the bytes `"usage"` or
// `"error"` can only be a key or a whole string value.

const USAGE_KEY = Buffer.from('"usage"');
const ERROR_WORD = Buffer.from('error');

/** An event's fields as the SSE format reads them: its type ('' when it names none) and its data lines joined. */
export interface SseFields {
  readonly type: string;
  /** null when the event has no data line. */
  readonly data: string | null;
}

/** Reads one event's `event` and `data` fields (WHATWG HTML, "interpreting an event stream"). */
export function eventFields(event: Buffer): SseFields {
  let text = event.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let type = '';
  let data: string | null = null;
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '' || line.charCodeAt(0) === COLON) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === SPACE) value = value.slice(1);
    if (field === 'data') data = data === null ? value : `${data}\n${value}`;
    else if (field === 'event') type = value;
  }
  return { type, data };
}

function jsonObject(data: string | null): Record<string, unknown> | null {
  if (data === null) return null;
  try {
    const value: unknown = JSON.parse(data);
    return isObject(value) ? value : null;
  } catch {
    return null; // `[DONE]`, or not JSON: not an event the gateway reads
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A chat completion chunk that reports only usage: `choices` is empty and `usage` an object. */
export function isUsageOnly(fields: SseFields): boolean {
  const chunk = jsonObject(fields.data);
  return chunk !== null && Array.isArray(chunk.choices) && chunk.choices.length === 0 && isObject(chunk.usage);
}

/** An error the upstream reports in its stream: `event: error`, or data with a top-level `error` object. */
export function isErrorEvent(fields: SseFields): boolean {
  if (fields.type === 'error') return true;
  return isObject(jsonObject(fields.data)?.error);
}

/**
 * False when no event in `bytes` can be usage-only: none has a `"usage"` key followed by an
 * object (the usual chunk of a stream that reports usage has `"usage":null`).
 */
export function mayHoldUsage(bytes: Buffer): boolean {
  for (let at = bytes.indexOf(USAGE_KEY); at !== -1; at = bytes.indexOf(USAGE_KEY, at + USAGE_KEY.length)) {
    let i = skipBlanks(bytes, at + USAGE_KEY.length);
    if (isLineEnd(bytes[i])) return true; // data split over lines: let the parse decide
    if (bytes[i] !== COLON) continue;
    i = skipBlanks(bytes, i + 1);
    if (bytes[i] === OPEN_BRACE || isLineEnd(bytes[i])) return true;
  }
  return false;
}

/** False when no event in `bytes` can be an error event: no `"error"` string, no `event:error` field. */
export function mayHoldError(bytes: Buffer): boolean {
  for (let at = bytes.indexOf(ERROR_WORD); at !== -1; at = bytes.indexOf(ERROR_WORD, at + ERROR_WORD.length)) {
    const before = bytes[at - 1];
    if (before === QUOTE && bytes[at + ERROR_WORD.length] === QUOTE) return true;
    if (before === COLON || (before === SPACE && bytes[at - 2] === COLON)) return true;
  }
  return false;
}

/** Whether a whole event in `bytes` (whole events, as SseReader returns them) is an error event. */
export function holdsErrorEvent(bytes: Buffer): boolean {
  if (!mayHoldError(bytes)) return false;
  for (const event of splitEvents(bytes)) if (mayHoldError(event) && isErrorEvent(eventFields(event))) return true;
  return false;
}

function skipBlanks(bytes: Buffer, from: number): number {
  let i = from;
  while (bytes[i] === SPACE || bytes[i] === TAB) i += 1;
  return i;
}

function isLineEnd(byte: number | undefined): boolean {
  return byte === LF || byte === CR;
}
