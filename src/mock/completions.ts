import { streamShapeOf } from './chat-completion.js';
import { isRecord, saidTurn } from './conversation.js';
import { writeEventStream } from './event-stream.js';
import type { Exchange } from './exchange.js';
import { readModelRequest, replyInvalid, replyJson, replyTruncated } from './exchange.js';
import { serveModelRequest } from './model-request.js';
import type { MockContext } from './provider-context.js';
import { estimateTokens, textPieces } from './provider-context.js';

// `POST /v1/completions`, OpenAI's legacy text completions: the greeting as the completion
// of any prompt (or the text a string prompt dictates with `say:`), plain or streamed
// (`text_completion` chunks, then `data: [DONE]`), with a usage-only last chunk when
// `stream_options.include_usage` asks for one.

let completionSeq = 0;

/** Prompt tokens: a string or strings count characters / 4, token arrays their length. */
function promptTokens(prompt: unknown): number | string {
  const list = typeof prompt === 'string' || (Array.isArray(prompt) && prompt.every((n) => typeof n === 'number')) ? [prompt] : prompt;
  if (!Array.isArray(list) || list.length === 0) return 'prompt must be a string, an array of strings, or token arrays';
  let tokens = 0;
  for (const item of list) {
    if (typeof item === 'string') tokens += estimateTokens(item.length);
    else if (Array.isArray(item) && item.every((n) => Number.isInteger(n))) tokens += item.length;
    else return 'prompt items must be strings or arrays of integers';
  }
  return tokens;
}

function answer(ctx: MockContext, ex: Exchange, cutAfter: number): void {
  const request = readModelRequest(ex);
  if (request === null) return;
  const { payload, model } = request;
  const prompt = promptTokens(payload.prompt);
  if (typeof prompt === 'string') return replyInvalid(ex, 400, prompt);
  const id = `cmpl-mock${(++completionSeq).toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  const usage = (completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
  const turn = (typeof payload.prompt === 'string' ? saidTurn(payload.prompt) : null) ?? ctx.greeting;

  if (payload.stream === true) {
    const shape = streamShapeOf(ctx, ex);
    if (typeof shape === 'string') return replyInvalid(ex, 400, shape);
    const pieces = textPieces(ctx, turn, shape.chunks);
    const event = (text: string, finish: string | null): string =>
      `data: ${JSON.stringify({ id, object: 'text_completion', created, model, choices: [{ text, index: 0, logprobs: null, finish_reason: finish }] })}\n\n`;
    const options = payload.stream_options;
    const usageEvent =
      isRecord(options) && options.include_usage === true
        ? `data: ${JSON.stringify({ id, object: 'text_completion', created, model, choices: [], usage: usage(pieces.completionTokens) })}\n\n`
        : '';
    const plan = {
      head: '',
      content: pieces.deltas.map((delta) => event(JSON.parse(delta) as string, null)),
      tail: `${event('', 'stop')}${usageEvent}data: [DONE]\n\n`,
      chunkDelayMs: shape.chunkDelayMs,
      cutAfter,
    };
    writeEventStream(ex, plan).catch(() => ex.res.destroy());
    return;
  }
  const text = JSON.stringify({
    id,
    object: 'text_completion',
    created,
    model,
    choices: [{ text: turn.text, index: 0, logprobs: null, finish_reason: 'stop' }],
    usage: usage(turn.text === ctx.reply ? ctx.completionTokens : estimateTokens(turn.text.length)),
  });
  if (cutAfter < 0) return replyJson(ex, 200, text);
  replyTruncated(ex, text);
}

/** `POST /v1/completions`. */
export function handleCompletions(ctx: MockContext, ex: Exchange): void {
  serveModelRequest(ctx, ex, 'openai', answer);
}
