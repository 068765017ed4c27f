import { StringDecoder } from 'node:string_decoder';
import type { RelayTransform } from './relay-transform.js';
import { keepTail, usageOfTail } from './usage-tail.js';

/**
 * Takes the usage-only event out of an OpenAI chat completion stream. The gateway asks
 * every OpenAI-type upstream for `stream_options.include_usage` (a stream must be billed
 * on what it used); a client that did not ask for usage must not receive the extra final
 * event it produces: `data: {..."choices":[],"usage":{...}}`. Events are cut at their
 * blank line, so an event split across network chunks is held until it is whole.
 */
export class UsageEventFilter {
  readonly #decoder = new StringDecoder('utf8');
  #pending = '';

  /** The text to send on for this chunk: every whole event but the usage-only one. */
  push(chunk: Buffer): string {
    const text = this.#pending + this.#decoder.write(chunk);
    const last = text.lastIndexOf('\n\n');
    if (last === -1) {
      this.#pending = text;
      return '';
    }
    this.#pending = text.slice(last + 2);
    const whole = text.slice(0, last + 2);
    if (!whole.includes('"usage":{')) return whole;
    let out = '';
    for (const event of whole.split('\n\n')) {
      if (event === '' || isUsageOnly(event)) continue;
      out += `${event}\n\n`;
    }
    return out;
  }

  /** What is left at the end of the stream (an event without its blank line). */
  end(): string {
    const rest = this.#pending + this.#decoder.end();
    this.#pending = '';
    return isUsageOnly(rest) ? '' : rest;
  }
}

function isUsageOnly(event: string): boolean {
  return event.startsWith('data:') && event.includes('"choices":[]') && event.includes('"usage":{');
}

/**
 * A stream relayed without its usage-only event (UsageEventFilter), billed on the usage its
 * bytes report, read from their tail as the pass-through reads it. A plain body is left to
 * the pass-through: the filter has no part for it.
 */
export function withoutUsageEvent(): RelayTransform {
  const filter = new UsageEventFilter();
  const tail: Buffer[] = [];
  let tailBytes = 0;
  return {
    chunk(chunk) {
      tailBytes = keepTail(tail, tailBytes, chunk);
      return filter.push(chunk);
    },
    end: () => filter.end(),
    get usage() {
      return usageOfTail(tail, tailBytes, true);
    },
  };
}
