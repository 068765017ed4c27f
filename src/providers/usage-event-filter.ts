import { CR, LF } from './ascii.js';
import type { TokenUsage } from './metering.js';
import { usageFromJson } from './openai-body.js';
import type { RelayTransform } from './relay-transform.js';
import { eventFields, isUsageOnly, mayHoldUsage } from './sse-event.js';
import { DEFAULT_MAX_EVENT_BYTES, SseReader, splitEvents } from './sse-reader.js';
import { keepTail, usageOfTail } from './usage-tail.js';

const EMPTY: Buffer = Buffer.alloc(0);

/**
 * Takes the usage-only event out of an OpenAI chat completion stream. The gateway asks
 * every OpenAI-type upstream for `stream_options.include_usage` (a stream must be billed
 * on what it used); a client that did not ask for usage must not receive the extra final
 * event it produces: `data: {..."choices":[],"usage":{...}}`. An event is held until its
 * empty line arrives (SseReader: any SSE line ending, bounded), and judged by its parsed
 * data; every other event leaves as the upstream framed it.
 */
export class UsageEventFilter {
  readonly #reader: SseReader;
  #usage: TokenUsage | null = null;
  /**
   * The event left out ended in a CR that ended its chunk: an LF that comes next is the
   * rest of that CRLF, and is left out with it.
   */
  #droppedCr = false;

  /** An event past `maxEventBytes` ends what the filter passes; the relay, reading with the same bound, ends the stream there. */
  constructor(maxEventBytes = DEFAULT_MAX_EVENT_BYTES) {
    this.#reader = new SseReader(maxEventBytes);
  }

  /** The usage the usage-only event reported, once it has been taken out. */
  get usage(): TokenUsage | null {
    return this.#usage;
  }

  /** The bytes to send on for this chunk: every whole event but the usage-only one. */
  push(chunk: Buffer): Buffer {
    const read = this.#reader.push(chunk);
    if (read === null || read.length === 0) return EMPTY;
    const whole = this.#afterDropped(read);
    // Most chunks hold no usage object at all (`"usage":null` until the last): no parse.
    if (!mayHoldUsage(whole)) return whole;
    const kept: Buffer[] = [];
    for (const event of splitEvents(whole)) {
      const dropped = this.#isUsageOnly(event);
      if (!dropped) kept.push(event);
      this.#droppedCr = dropped && event[event.length - 1] === CR;
    }
    return kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept);
  }

  #afterDropped(bytes: Buffer): Buffer {
    if (!this.#droppedCr) return bytes;
    this.#droppedCr = false;
    return bytes[0] === LF ? bytes.subarray(1) : bytes;
  }

  /** What is left at the end of the stream (an event without its empty line). */
  end(): string {
    const rest = this.#afterDropped(this.#reader.end());
    return rest.length === 0 || this.#isUsageOnly(rest) ? '' : rest.toString('utf8');
  }

  #isUsageOnly(event: Buffer): boolean {
    if (!mayHoldUsage(event) || !isUsageOnly(eventFields(event))) return false;
    this.#usage = usageFromJson(event) ?? this.#usage;
    return true;
  }
}

/**
 * A stream relayed without its usage-only event (UsageEventFilter), billed on the usage
 * that event reported, else on what the bytes' tail reports (as the pass-through reads it:
 * a server may report usage on a chunk that has choices). A plain body is left to the
 * pass-through: the filter has no part for it.
 */
export function withoutUsageEvent(maxEventBytes = DEFAULT_MAX_EVENT_BYTES): RelayTransform {
  const filter = new UsageEventFilter(maxEventBytes);
  const tail: Buffer[] = [];
  let tailBytes = 0;
  return {
    chunk(chunk) {
      tailBytes = keepTail(tail, tailBytes, chunk);
      return filter.push(chunk);
    },
    end: () => filter.end(),
    get usage() {
      return filter.usage ?? usageOfTail(tail, tailBytes, true);
    },
  };
}
