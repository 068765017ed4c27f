import type { TokenUsage } from '../metering.js';
import { stopReasonFromOpenai, stopReasonToOpenai } from './stop-reason.js';
import type { StreamSink } from './stream-sink.js';
import type { StopReason } from './types.js';
import { isRecord, jsonRecord } from './types.js';
import { openaiErrorType, statusOfOpenaiError } from './upstream-error.js';
import { usageFromOpenai, usageToOpenai } from './usage.js';

// OpenAI `chat.completion.chunk` streams, read into and written from canonical stream events.

/** Reads the data payloads of an OpenAI stream into a sink. */
export class OpenaiChunkDecoder {
  readonly #sink: StreamSink;
  #started = false;
  #finished = false;
  readonly #tools = new Set<number>();

  constructor(sink: StreamSink) {
    this.#sink = sink;
  }

  /** A finish_reason arrived: the answer is whole even if `[DONE]` never does. */
  get finished(): boolean {
    return this.#finished;
  }

  data(data: string): void {
    if (data === '[DONE]') return this.#sink.done();
    const chunk = jsonRecord(data);
    if (chunk === null) return;
    const sink = this.#sink;
    if (isRecord(chunk.error)) {
      const message = typeof chunk.error.message === 'string' ? chunk.error.message : 'the provider reported an error';
      return sink.error(statusOfOpenaiError(chunk.error.type), message);
    }
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    // Azure opens with a chunk that has no choices, only its prompt filter results (and an empty id).
    if (!this.#started && (choice !== undefined || isRecord(chunk.usage))) {
      this.#started = true;
      sink.start(typeof chunk.id === 'string' ? chunk.id : '', typeof chunk.model === 'string' ? chunk.model : '');
    }
    if (isRecord(choice)) {
      const delta = choice.delta;
      if (isRecord(delta)) {
        // vLLM and DeepSeek stream reasoning as `reasoning_content`; some servers call it `reasoning`.
        const reasoning = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : delta.reasoning;
        if (typeof reasoning === 'string' && reasoning !== '') sink.thinking(reasoning);
        if (typeof delta.content === 'string' && delta.content !== '') sink.text(delta.content);
        if (typeof delta.refusal === 'string' && delta.refusal !== '') sink.text(delta.refusal);
        if (Array.isArray(delta.tool_calls)) {
          for (const call of delta.tool_calls) {
            if (!isRecord(call) || typeof call.index !== 'number') continue;
            const fn = isRecord(call.function) ? call.function : {};
            // The first delta of a call carries its id and name, the rest only argument text;
            // some compatible servers repeat the id on every delta, or never send one.
            if (!this.#tools.has(call.index)) {
              this.#tools.add(call.index);
              const id = typeof call.id === 'string' ? call.id : `call_${call.index}`;
              sink.toolStart(call.index, id, typeof fn.name === 'string' ? fn.name : '');
            }
            if (typeof fn.arguments === 'string' && fn.arguments !== '') sink.toolArguments(call.index, fn.arguments);
          }
        }
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        this.#finished = true;
        sink.finish(stopReasonFromOpenai(choice.finish_reason), null);
      }
    }
    const usage = usageFromOpenai(chunk.usage);
    if (usage !== null) sink.usage(usage);
  }
}

/**
 * Writes canonical stream events as an OpenAI chunk stream: a role chunk, content and
 * tool_calls deltas, a finish_reason chunk, the usage-only chunk when the client asked for
 * it (`stream_options.include_usage`), then `data: [DONE]`.
 */
export class OpenaiChunkEncoder implements StreamSink {
  out = '';
  readonly #includeUsage: boolean;
  readonly #created: number;
  #head = '';
  #usage: TokenUsage | null = null;
  #ended = false;

  constructor(includeUsage: boolean, created = Math.floor(Date.now() / 1000)) {
    this.#includeUsage = includeUsage;
    this.#created = created;
  }

  #chunk(delta: string, finish: string | null = null): void {
    if (this.#head === '') this.start('', '');
    this.out += `${this.#head}{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
  }

  start(id: string, model: string): void {
    // Every chunk shares this prefix: built once, as the mock and OpenAI send it.
    this.#head = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${this.#created},"model":${JSON.stringify(model)},"choices":[`;
    this.#chunk('{"role":"assistant","content":""}');
  }

  text(text: string): void {
    this.#chunk(`{"content":${JSON.stringify(text)}}`);
  }

  /** Thinking as the `reasoning_content` delta that OpenAI-compatible clients read. */
  thinking(text: string): void {
    this.#chunk(`{"reasoning_content":${JSON.stringify(text)}}`);
  }

  /** A signature has no OpenAI field: the client cannot send thinking back anyway. */
  thinkingSignature(_signature: string): void {}

  toolStart(tool: number, id: string, name: string): void {
    const call = { index: tool, id, type: 'function', function: { name, arguments: '' } };
    this.#chunk(`{"tool_calls":[${JSON.stringify(call)}]}`);
  }

  toolArguments(tool: number, json: string): void {
    this.#chunk(`{"tool_calls":[{"index":${tool},"function":{"arguments":${JSON.stringify(json)}}}]}`);
  }

  finish(reason: StopReason | null, _stopSequence: string | null): void {
    this.#chunk('{}', stopReasonToOpenai(reason ?? 'end_turn'));
  }

  usage(usage: TokenUsage): void {
    this.#usage = usage;
  }

  done(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#includeUsage && this.#usage !== null) {
      this.out += `${this.#head}],"usage":${JSON.stringify(usageToOpenai(this.#usage))}}\n\n`;
    }
    this.out += 'data: [DONE]\n\n';
  }

  error(status: number, message: string, code: string | null = null): void {
    if (this.#ended) return;
    this.#ended = true;
    this.out += `data: ${JSON.stringify({ error: { message, type: openaiErrorType(status, code), param: null, code } })}\n\n`;
  }
}
