import { StringDecoder } from 'node:string_decoder';

/** Receives one whole server-sent event: its `event:` name ('' when absent) and its data lines joined. */
export type SseListener = (event: string, data: string) => void;

/**
 * Cuts a byte stream into server-sent events (WHATWG HTML, "event stream interpretation").
 * Network chunks may split an event, a line or a UTF-8 character anywhere: the decoder
 * keeps a partial character, and the text after the last blank line waits for the next
 * chunk. Only `event` and `data` fields matter here; comments, `id` and `retry` are skipped.
 */
export class SseParser {
  readonly #decoder = new StringDecoder('utf8');
  #pending = '';
  /** The last chunk ended in a CR: an LF that starts the next is the rest of that CRLF, not a line of its own. */
  #afterCr = false;

  push(chunk: Buffer | string, listener: SseListener): void {
    let incoming = typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    if (incoming === '') return;
    if (this.#afterCr && incoming.charCodeAt(0) === 0x0a) incoming = incoming.slice(1);
    this.#afterCr = incoming.charCodeAt(incoming.length - 1) === 0x0d;
    let text = this.#pending + incoming;
    // CRLF and lone CR end lines too; normalising keeps the scan below to one separator.
    if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
    let start = 0;
    for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n', start)) {
      if (end > start) dispatch(text.slice(start, end), listener);
      start = end + 2;
    }
    this.#pending = start === 0 ? text : text.slice(start);
  }

  /** The stream ended: a last event without its blank line still counts. */
  end(listener: SseListener): void {
    const rest = this.#pending + this.#decoder.end();
    this.#pending = '';
    if (rest.trim() !== '') dispatch(rest.replace(/\r\n?/g, '\n'), listener);
  }
}

function dispatch(block: string, listener: SseListener): void {
  let event = '';
  let data: string | null = null;
  for (const line of block.split('\n')) {
    if (line === '' || line.charCodeAt(0) === 0x3a) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === 'data') data = data === null ? value : `${data}\n${value}`;
    else if (field === 'event') event = value;
  }
  if (data !== null) listener(event, data);
}
