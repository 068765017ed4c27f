import type { TokenUsage } from '../metering.js';
import { DEFAULT_MAX_EVENT_BYTES } from '../sse-reader.js';
import { AnthropicEventDecoder, AnthropicEventEncoder } from './anthropic-stream.js';
import { BedrockStreamDecoder } from './bedrock-stream.js';
import { GeminiChunkDecoder } from './gemini-stream.js';
import { OpenaiChunkDecoder, OpenaiChunkEncoder } from './openai-stream.js';
import { SseParser } from './sse-parser.js';
import type { StreamSink } from './stream-sink.js';
import type { ChatProtocol, ProviderProtocol, StopReason } from './types.js';

/** A writer of the client's protocol: canonical events in, the client's bytes collected in `out`. */
export interface StreamEncoder extends StreamSink {
  out: string;
  error(status: number, message: string, code?: string | null): void;
}

export interface StreamTranslatorOptions {
  /** The upstream's protocol. */
  readonly from: ProviderProtocol;
  /**
   * The client's protocol, which must differ from `from` (same protocols are relayed as they
   * are); or the encoder of one that is not a provider protocol (the Responses API's, whose
   * encoder the caller keeps, to read the final Response from).
   */
  readonly to: ChatProtocol | StreamEncoder;
  /** OpenAI clients only: send the usage-only last chunk (`stream_options.include_usage`). */
  readonly includeUsage?: boolean;
  /** Bedrock only: the largest event-stream frame taken (max_event_bytes; default 1 MiB); a larger one ends the stream. */
  readonly maxEventBytes?: number;
  /** Bedrock only: the upstream model, which its stream does not name, for the client's events. */
  readonly model?: string;
}

/** Watches the canonical events on their way to the encoder, to report usage and completeness. */
class Tap implements StreamSink {
  readonly #next: StreamSink;
  seenUsage: TokenUsage | null = null;
  ended = false;
  failed = false;

  constructor(next: StreamSink) {
    this.#next = next;
  }

  start(id: string, model: string): void {
    this.#next.start(id, model);
  }
  text(text: string): void {
    this.#next.text(text);
  }
  thinking(text: string): void {
    this.#next.thinking(text);
  }
  thinkingSignature(signature: string): void {
    this.#next.thinkingSignature(signature);
  }
  toolStart(tool: number, id: string, name: string): void {
    this.#next.toolStart(tool, id, name);
  }
  toolArguments(tool: number, json: string): void {
    this.#next.toolArguments(tool, json);
  }
  finish(reason: StopReason | null, stopSequence: string | null): void {
    this.#next.finish(reason, stopSequence);
  }
  usage(usage: TokenUsage): void {
    this.seenUsage = usage;
    this.#next.usage(usage);
  }
  done(): void {
    this.ended = true;
    this.#next.done();
  }
  error(status: number, message: string): void {
    this.failed = true;
    this.#next.error(status, message);
  }
}

/** How an upstream protocol's stream is read into canonical events. */
interface StreamDecoder {
  readonly onEvent: (event: string, data: string) => void;
  /** The upstream's answer is whole, though its stream did not say so in its protocol's last event. */
  readonly finished: () => boolean;
  /** A binary event stream read in place of the SSE parser (Bedrock's). */
  readonly frames?: BedrockStreamDecoder;
}

const DECODERS: Readonly<Record<ProviderProtocol, (sink: StreamSink, options: StreamTranslatorOptions) => StreamDecoder>> = {
  openai: (sink) => {
    const decoder = new OpenaiChunkDecoder(sink);
    // Some OpenAI-compatible servers end after the finish chunk without `[DONE]`.
    return { onEvent: (_event, data) => decoder.data(data), finished: () => decoder.finished };
  },
  bedrock: (sink, options) => {
    const decoder = new BedrockStreamDecoder(sink, options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES, options.model ?? '');
    // The answer is whole after metadata; at the body's end, after messageStop is enough.
    return { onEvent: () => {}, finished: () => decoder.finished, frames: decoder };
  },
  gemini: (sink) => {
    const decoder = new GeminiChunkDecoder(sink);
    // Gemini has no end marker: an answer that gave its finishReason is whole.
    return { onEvent: (_event, data) => decoder.data(data), finished: () => decoder.finished };
  },
  anthropic: (sink) => {
    const decoder = new AnthropicEventDecoder(sink);
    return { onEvent: (event, data) => decoder.data(event, data), finished: () => false };
  },
};

/**
 * Translates one streamed answer between protocols as it arrives. Fed the upstream's raw
 * bytes, split anywhere, it returns the bytes to write to the client for each chunk: an
 * event is translated as soon as its blank line arrives, so the client's first byte waits
 * for nothing but the upstream's first event. State lives here, per stream; the decoding
 * and encoding rules are in the protocol codecs, meeting in canonical events.
 */
export class StreamTranslator {
  readonly #parser = new SseParser();
  readonly #encoder: StreamEncoder;
  readonly #tap: Tap;
  readonly #onEvent: (event: string, data: string) => void;
  readonly #upstreamFinished: () => boolean;
  /** A Bedrock upstream's binary event stream, read in place of the SSE parser; null for the SSE protocols. */
  readonly #frames: BedrockStreamDecoder | null;
  #closed = false;

  constructor(options: StreamTranslatorOptions) {
    if (options.from === options.to) throw new TypeError('a stream translator needs two different protocols');
    const to = options.to;
    this.#encoder =
      to === 'openai' ? new OpenaiChunkEncoder(options.includeUsage === true) : to === 'anthropic' ? new AnthropicEventEncoder() : to;
    this.#tap = new Tap(this.#encoder);
    const decoder = DECODERS[options.from](this.#tap, options);
    this.#onEvent = decoder.onEvent;
    this.#upstreamFinished = decoder.finished;
    this.#frames = decoder.frames ?? null;
  }

  /** The usage the upstream reported so far (whole, not an increment), or null. */
  get usage(): TokenUsage | null {
    return this.#tap.seenUsage;
  }

  /** The upstream's answer ended as its protocol says a whole answer ends. */
  get complete(): boolean {
    return this.#tap.ended;
  }

  /** The client's bytes for this upstream chunk; '' while an event is still incomplete. */
  push(chunk: Buffer | string): string {
    if (this.#closed) return '';
    const frames = this.#frames;
    if (frames === null) this.#parser.push(chunk, this.#onEvent);
    else {
      frames.push(chunk);
      if (frames.overflowed) {
        const message = `the upstream sent an event-stream frame larger than max_event_bytes`;
        return this.#take() + this.fail(message, 'stream_event_too_large');
      }
    }
    return this.#take();
  }

  /**
   * The upstream ended: the client's last bytes. An answer that ended before its protocol's
   * end (message_stop, or a finish_reason) is cut, and ends with the client's error event.
   */
  end(): string {
    if (this.#closed) return '';
    if (this.#frames === null) this.#parser.end(this.#onEvent);
    else this.#frames.end();
    if (!this.#tap.ended && !this.#tap.failed) {
      if (this.#upstreamFinished()) this.#tap.done();
      else return this.#take() + this.fail('the upstream stream ended before the answer was complete');
    }
    this.#closed = true;
    return this.#take();
  }

  /** The client protocol's error event, ending the stream (an upstream that broke, timed out, sent an event over the bound...). */
  fail(message: string, code: 'stream_interrupted' | 'stream_event_too_large' = 'stream_interrupted'): string {
    if (this.#closed) return '';
    this.#closed = true;
    this.#encoder.error(502, message, code);
    return this.#take();
  }

  #take(): string {
    const out = this.#encoder.out;
    this.#encoder.out = '';
    return out;
  }
}
