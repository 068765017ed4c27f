import { streamCompletion } from './completion-stream.js';
import type { Exchange } from './exchange.js';
import { drop, pause, replyInvalid, replyJson, sever } from './exchange.js';
import type { ActiveFault } from './fault-queue.js';
import type { MockContext } from './provider-context.js';
import { estimateTokens } from './provider-context.js';

interface ChatPlan {
  readonly model: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly promptTokens: number;
  readonly chunks: number;
  readonly chunkDelayMs: number;
}

const maxChunks = 100_000;
const maxChunkDelayMs = 60_000;

let completionSeq = 0;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Characters of every message's text, counting both string content and text parts. */
function promptChars(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let chars = 0;
  for (const message of messages) {
    if (!isRecord(message)) continue;
    const content = message.content;
    if (typeof content === 'string') {
      chars += content.length;
    } else if (Array.isArray(content)) {
      for (const part of content) {
        if (isRecord(part) && typeof part.text === 'string') chars += part.text.length;
      }
    }
  }
  return chars;
}

/** An override header as a whole number up to `max`; `undefined` when it is malformed. */
function headerNumber(value: string | string[] | undefined, fallback: number, max: number): number | undefined {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return n <= max ? n : undefined;
}

function planChat(ctx: MockContext, ex: Exchange): ChatPlan | string {
  let payload: unknown;
  try {
    payload = JSON.parse(ex.body);
  } catch {
    return 'The request body is not valid JSON.';
  }
  if (!isRecord(payload)) return 'The request body must be a JSON object.';
  const model = payload.model;
  if (typeof model !== 'string' || model === '') return 'You must provide a model parameter.';
  const headers = ex.req.headers;
  const chunks = headerNumber(headers['x-mock-chunks'], ctx.streamChunks, maxChunks);
  if (chunks === undefined) return `x-mock-chunks must be a whole number from 0 to ${maxChunks}.`;
  const chunkDelayMs = headerNumber(headers['x-mock-chunk-delay-ms'], ctx.streamChunkDelayMs, maxChunkDelayMs);
  if (chunkDelayMs === undefined) {
    return `x-mock-chunk-delay-ms must be a whole number from 0 to ${maxChunkDelayMs}.`;
  }
  const options = payload.stream_options;
  return {
    model,
    stream: payload.stream === true,
    includeUsage: isRecord(options) && options.include_usage === true,
    promptTokens: estimateTokens(promptChars(payload.messages)),
    chunks,
    chunkDelayMs,
  };
}

function answer(ctx: MockContext, ex: Exchange, fault: ActiveFault | undefined): void {
  if (fault?.mode === 'status') return replyJson(ex, fault.status, fault.bodyText);
  if (fault?.mode === 'close') return drop(ex);
  if (fault?.mode === 'hang') return;

  const plan = planChat(ctx, ex);
  if (typeof plan === 'string') return replyInvalid(ex, 400, plan);
  const id = `chatcmpl-mock${(++completionSeq).toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  const cutAfter = fault?.mode === 'cut_stream' ? fault.afterChunks : -1;

  if (plan.stream) {
    streamCompletion(ctx, ex, { ...plan, id, created, cutAfter }).catch(() => ex.res.destroy());
    return;
  }
  const text = JSON.stringify({
    id,
    object: 'chat.completion',
    created,
    model: plan.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: ctx.reply, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: {
      prompt_tokens: plan.promptTokens,
      completion_tokens: ctx.completionTokens,
      total_tokens: plan.promptTokens + ctx.completionTokens,
    },
    system_fingerprint: null,
  });
  if (cutAfter < 0) return replyJson(ex, 200, text);
  // A non-streaming request hit by cut_stream gets a truncated body: the declared length
  // promises more than arrives, which is how a cut shows up to a client reading JSON.
  ex.res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-mock-provider': ex.name,
  });
  ex.res.write(text.slice(0, text.length >> 1));
  sever(ex);
}

/**
 * `POST /v1/chat/completions`. The fault is taken on arrival, so queued faults meet requests in
 * arrival order even when latency then delays the answer.
 */
export function handleChatCompletion(ctx: MockContext, ex: Exchange): void {
  const fault = ctx.faults.take();
  const delayMs = fault?.mode === 'latency' ? ctx.latencyMs + fault.latencyMs : ctx.latencyMs;
  if (delayMs <= 0) return answer(ctx, ex, fault);
  void pause(ex, delayMs).then(() => {
    if (!ex.closed) answer(ctx, ex, fault);
  });
}
