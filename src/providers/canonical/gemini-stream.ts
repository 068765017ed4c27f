import { geminiParts } from './gemini-response.js';
import { stopReasonFromGemini, turnTag, usageFromGemini } from './gemini-wire.js';
import type { StreamSink } from './stream-sink.js';
import type { StopReason } from './types.js';
import { isRecord, jsonRecord } from './types.js';

// Gemini's `streamGenerateContent?alt=sse`: each event's data is a whole
// GenerateContentResponse holding the next parts of the answer. Text and thoughts come in
// pieces; a function call comes whole, in one part. The usage so far rides on every chunk
// and is whole in the last, which also has the finish reason. There is no end marker: the
// stream ends after the chunk with a finishReason.

export class GeminiChunkDecoder {
  readonly #sink: StreamSink;
  #started = false;
  #finished = false;
  #turn = '';
  #tools = 0;

  constructor(sink: StreamSink) {
    this.#sink = sink;
  }

  /** A finishReason arrived: the answer is whole when the stream ends. */
  get finished(): boolean {
    return this.#finished;
  }

  data(data: string): void {
    const chunk = jsonRecord(data);
    if (chunk === null) return;
    const sink = this.#sink;
    if (isRecord(chunk.error)) {
      const e = chunk.error;
      return sink.error(
        typeof e.code === 'number' ? e.code : 500,
        typeof e.message === 'string' ? e.message : 'the provider reported an error',
      );
    }
    if (!this.#started) {
      this.#started = true;
      this.#turn = turnTag(chunk.responseId);
      sink.start(
        typeof chunk.responseId === 'string' ? chunk.responseId : '',
        typeof chunk.modelVersion === 'string' ? chunk.modelVersion : '',
      );
    }
    const candidate = Array.isArray(chunk.candidates) ? chunk.candidates[0] : undefined;
    let reason: StopReason | null = null;
    if (isRecord(candidate)) {
      for (const p of geminiParts(isRecord(candidate.content) ? candidate.content.parts : undefined, this.#turn, this.#tools)) {
        if (p.type === 'text') sink.text(p.text);
        else if (p.type === 'thinking') sink.thinking(p.text);
        else {
          const tool = this.#tools++;
          sink.toolStart(tool, p.id, p.name);
          sink.toolArguments(tool, JSON.stringify(p.input));
        }
      }
      if (typeof candidate.finishReason === 'string') reason = stopReasonFromGemini(candidate.finishReason, this.#tools > 0);
    } else if (isRecord(chunk.promptFeedback) && typeof chunk.promptFeedback.blockReason === 'string') {
      reason = 'content_filter';
    }
    // The usage first: an encoder writes its last event on the finish.
    const usage = usageFromGemini(chunk.usageMetadata);
    if (usage !== null) sink.usage(usage);
    if (reason !== null && !this.#finished) {
      this.#finished = true;
      sink.finish(reason, null);
    }
  }
}
