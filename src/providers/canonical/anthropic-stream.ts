import type { TokenUsage } from '../metering.js';
import { stopReasonFromAnthropic, stopReasonToAnthropic } from './stop-reason.js';
import type { StreamSink } from './stream-sink.js';
import type { StopReason } from './types.js';
import { isRecord, jsonRecord } from './types.js';
import { anthropicErrorType, statusOfAnthropicError } from './upstream-error.js';
import { usageFromAnthropic, usageToAnthropic } from './usage.js';

// Anthropic Messages streams, read into and written from canonical stream events.

/** Reads the events of an Anthropic stream into a sink. */
export class AnthropicEventDecoder {
  readonly #sink: StreamSink;
  /** Content block index -> tool number, for tool_use blocks only (text and thinking blocks have none). */
  readonly #tools = new Map<number, number>();
  /** The usage counters seen so far: message_start's, overwritten by message_delta's as they come. */
  #usage: Record<string, unknown> = {};

  constructor(sink: StreamSink) {
    this.#sink = sink;
  }

  data(event: string, data: string): void {
    const payload = jsonRecord(data);
    if (payload === null) return;
    const sink = this.#sink;
    // The data repeats the event name as `type`, which also covers a stream without `event:` lines.
    switch (typeof payload.type === 'string' ? payload.type : event) {
      case 'message_start': {
        const message = isRecord(payload.message) ? payload.message : {};
        sink.start(typeof message.id === 'string' ? message.id : '', typeof message.model === 'string' ? message.model : '');
        if (isRecord(message.usage)) this.#addUsage(message.usage);
        return;
      }
      case 'content_block_start': {
        const block = isRecord(payload.content_block) ? payload.content_block : {};
        if (block.type === 'tool_use' && typeof payload.index === 'number') {
          const tool = this.#tools.size;
          this.#tools.set(payload.index, tool);
          sink.toolStart(tool, typeof block.id === 'string' ? block.id : '', typeof block.name === 'string' ? block.name : '');
        } else if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') {
          sink.text(block.text);
        } else if (block.type === 'thinking' && typeof block.thinking === 'string' && block.thinking !== '') {
          sink.thinking(block.thinking);
        }
        return;
      }
      case 'content_block_delta': {
        const delta = isRecord(payload.delta) ? payload.delta : {};
        if (delta.type === 'text_delta' && typeof delta.text === 'string') sink.text(delta.text);
        else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string') sink.thinking(delta.thinking);
        else if (delta.type === 'signature_delta' && typeof delta.signature === 'string') sink.thinkingSignature(delta.signature);
        else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string' && delta.partial_json !== '') {
          const tool = this.#tools.get(payload.index as number);
          if (tool !== undefined) sink.toolArguments(tool, delta.partial_json);
        }
        return;
      }
      case 'message_delta': {
        if (isRecord(payload.usage)) this.#addUsage(payload.usage);
        const delta = isRecord(payload.delta) ? payload.delta : {};
        sink.finish(stopReasonFromAnthropic(delta.stop_reason), typeof delta.stop_sequence === 'string' ? delta.stop_sequence : null);
        return;
      }
      case 'message_stop':
        return sink.done();
      case 'error': {
        const error = isRecord(payload.error) ? payload.error : {};
        return sink.error(
          statusOfAnthropicError(error.type),
          typeof error.message === 'string' ? error.message : 'the provider reported an error',
        );
      }
    }
  }

  /** message_delta's counters are totals for the whole message, present only when they apply. */
  #addUsage(usage: Record<string, unknown>): void {
    for (const key in usage) if (typeof usage[key] === 'number') this.#usage[key] = usage[key];
    const canonical = usageFromAnthropic(this.#usage);
    if (canonical !== null) this.#sink.usage(canonical);
  }
}

function event(name: string, payload: string): string {
  return `event: ${name}\ndata: ${payload}\n\n`;
}

/**
 * Writes canonical stream events as an Anthropic Messages stream: message_start, a
 * content block per text run or tool call (start, deltas, stop), then message_delta with
 * the stop reason and the usage, and message_stop. An OpenAI upstream reports usage only
 * at the end, so message_start carries zeros and message_delta the whole count.
 */
export class AnthropicEventEncoder implements StreamSink {
  out = '';
  #started = false;
  /** Index of the open content block, -1 when none is open. */
  #open = -1;
  #openKind: 'text' | 'thinking' | 'tool' | null = null;
  #blocks = 0;
  readonly #toolBlocks = new Map<number, number>();
  #stopReason: StopReason | null = null;
  #stopSequence: string | null = null;
  #usage: TokenUsage | null = null;
  #ended = false;

  start(id: string, model: string): void {
    if (this.#started) return;
    this.#started = true;
    const message = {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    this.out += event('message_start', JSON.stringify({ type: 'message_start', message }));
    this.out += event('ping', '{"type": "ping"}');
  }

  #openBlock(kind: 'text' | 'thinking' | 'tool', block: string): number {
    if (!this.#started) this.start('', '');
    this.#close();
    const index = this.#blocks++;
    this.#open = index;
    this.#openKind = kind;
    this.out += event('content_block_start', `{"type":"content_block_start","index":${index},"content_block":${block}}`);
    return index;
  }

  #close(): void {
    if (this.#open === -1) return;
    this.out += event('content_block_stop', `{"type":"content_block_stop","index":${this.#open}}`);
    this.#open = -1;
    this.#openKind = null;
  }

  text(text: string): void {
    const index = this.#openKind === 'text' ? this.#open : this.#openBlock('text', '{"type":"text","text":""}');
    this.out += event(
      'content_block_delta',
      `{"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":${JSON.stringify(text)}}}`,
    );
  }

  /** Reasoning from an OpenAI-compatible server, as a thinking block (unsigned: no signature was made). */
  thinking(text: string): void {
    const index =
      this.#openKind === 'thinking' ? this.#open : this.#openBlock('thinking', '{"type":"thinking","thinking":"","signature":""}');
    this.out += event(
      'content_block_delta',
      `{"type":"content_block_delta","index":${index},"delta":{"type":"thinking_delta","thinking":${JSON.stringify(text)}}}`,
    );
  }

  thinkingSignature(signature: string): void {
    if (this.#openKind !== 'thinking') return;
    this.out += event(
      'content_block_delta',
      `{"type":"content_block_delta","index":${this.#open},"delta":{"type":"signature_delta","signature":${JSON.stringify(signature)}}}`,
    );
  }

  toolStart(tool: number, id: string, name: string): void {
    const block = JSON.stringify({ type: 'tool_use', id, name, input: {} });
    this.#toolBlocks.set(tool, this.#openBlock('tool', block));
  }

  toolArguments(tool: number, json: string): void {
    // OpenAI streams one call's arguments before the next call starts; a late piece for an
    // earlier call still names that call's block.
    const index = this.#toolBlocks.get(tool);
    if (index === undefined) return;
    this.out += event(
      'content_block_delta',
      `{"type":"content_block_delta","index":${index},"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(json)}}}`,
    );
  }

  finish(reason: StopReason | null, stopSequence: string | null): void {
    this.#close();
    this.#stopReason = reason;
    this.#stopSequence = stopSequence;
  }

  usage(usage: TokenUsage): void {
    this.#usage = usage;
  }

  /** OpenAI's usage arrives after its finish_reason, so message_delta waits for the end. */
  done(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!this.#started) this.start('', '');
    this.#close();
    const delta = { stop_reason: stopReasonToAnthropic(this.#stopReason ?? 'end_turn'), stop_sequence: this.#stopSequence };
    const usage = usageToAnthropic(this.#usage ?? { inputTokens: 0, outputTokens: 0 });
    this.out += event('message_delta', JSON.stringify({ type: 'message_delta', delta, usage }));
    this.out += event('message_stop', '{"type":"message_stop"}');
  }

  error(status: number, message: string, code: string | null = null): void {
    if (this.#ended) return;
    this.#ended = true;
    this.out += event('error', JSON.stringify({ type: 'error', error: { type: anthropicErrorType(status, code), message } }));
  }
}
