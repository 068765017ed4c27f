import type { TokenUsage } from '../metering.js';
import { AnthropicEventDecoder } from './anthropic-stream.js';
import { SseParser } from './sse-parser.js';
import type { StreamSink } from './stream-sink.js';

/** Usage events only: content is relayed as it is and needs no parsing. */
const USAGE_EVENTS = new Set(['message_start', 'message_delta', 'message_stop']);

/**
 * The usage of an Anthropic stream that is relayed untranslated (Anthropic client,
 * Anthropic provider). Its input counts arrive in the first event (message_start) and its
 * output count in one of the last (message_delta), so a bounded tail, as kept for OpenAI
 * streams, is not enough: the reader watches every chunk, parsing only those two events.
 */
export class AnthropicUsageReader implements StreamSink {
  readonly #parser = new SseParser();
  readonly #decoder = new AnthropicEventDecoder(this);
  readonly #onEvent = (event: string, data: string): void => {
    if (USAGE_EVENTS.has(event)) this.#decoder.data(event, data);
  };
  #usage: TokenUsage | null = null;
  #complete = false;

  /** The usage so far, or null before message_start. */
  get seen(): TokenUsage | null {
    return this.#usage;
  }

  /** message_stop arrived. */
  get complete(): boolean {
    return this.#complete;
  }

  observe(chunk: Buffer): void {
    this.#parser.push(chunk, this.#onEvent);
  }

  end(): void {
    this.#parser.end(this.#onEvent);
  }

  start(): void {}
  text(): void {}
  thinking(): void {}
  thinkingSignature(): void {}
  toolStart(): void {}
  toolArguments(): void {}
  finish(): void {}
  error(): void {}
  usage(usage: TokenUsage): void {
    this.#usage = usage;
  }
  done(): void {
    this.#complete = true;
  }
}
