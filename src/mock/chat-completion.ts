import { SYSTEM_FINGERPRINT, streamCompletion } from './completion-stream.js';
import type { ConversationTail, MockToolChoice, OutputFormat, Turn } from './conversation.js';
import { decideTurn, isRecord, reasoningText, saidTurn } from './conversation.js';
import type { Exchange } from './exchange.js';
import { replyInvalid, replyJson, replyTruncated } from './exchange.js';
import { serveModelRequest } from './model-request.js';
import { outputLimitOf, stopAtLimit } from './output-limit.js';
import type { MockContext } from './provider-context.js';
import { estimateTokens } from './provider-context.js';

interface ChatPlan {
  readonly model: string;
  readonly turn: Turn;
  /** The text stopped at the output limit (`x-mock-max-tokens`): finish_reason `length`. */
  readonly cut: boolean;
  /** `reasoning_content`, sent the way vLLM and DeepSeek send it, when the request set a reasoning effort. */
  readonly reasoning: string | null;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly promptTokens: number;
  readonly chunks: number;
  readonly chunkDelayMs: number;
}

const maxChunks = 100_000;
const maxChunkDelayMs = 60_000;

let completionSeq = 0;

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

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

function outputFormat(payload: Record<string, unknown>): OutputFormat | null {
  const format = payload.response_format;
  if (!isRecord(format)) return null;
  if (format.type === 'json_object') return { kind: 'json_object' };
  if (format.type !== 'json_schema') return null;
  return { kind: 'json_schema', schema: isRecord(format.json_schema) ? format.json_schema.schema : undefined };
}

/** The tools offered, the last turn and the output format, read from an OpenAI chat request. */
function conversationTail(payload: Record<string, unknown>): ConversationTail {
  const tools = Array.isArray(payload.tools)
    ? payload.tools.flatMap((t) =>
        isRecord(t) && isRecord(t.function) && typeof t.function.name === 'string'
          ? [{ name: t.function.name, schema: t.function.parameters }]
          : [],
      )
    : [];
  const tc = payload.tool_choice;
  const toolChoice: MockToolChoice =
    tc === 'none'
      ? 'none'
      : tc === 'required'
        ? 'any'
        : isRecord(tc) && isRecord(tc.function) && typeof tc.function.name === 'string'
          ? { name: tc.function.name }
          : 'auto';
  const messages = Array.isArray(payload.messages) ? payload.messages.filter(isRecord) : [];
  const toolResults: string[] = [];
  let i = messages.length - 1;
  for (; i >= 0 && messages[i]?.role === 'tool'; i--) toolResults.unshift(textOf(messages[i]?.content));
  const last = messages.at(-1);
  const lastUserText = last?.role === 'user' ? textOf(last.content) : null;
  return { tools, toolChoice, lastUserText, toolResults, format: outputFormat(payload), ...askedOf(messages) };
}

/** The last user message with text, and the tool calls the assistant made after it. */
function askedOf(messages: readonly Record<string, unknown>[]): { asked?: { text: string; calls: number } } {
  let calls = 0;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i] as Record<string, unknown>;
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) calls += m.tool_calls.length;
    else if (m.role === 'user') {
      const text = textOf(m.content);
      if (text !== '') return { asked: { text, calls } };
    }
  }
  return {};
}

/**
 * No tools offered, no structured output, no tool results to answer and no `say:`: the
 * greeting, decided without reading the rest of the conversation, since the benchmark's
 * "direct" baseline runs through here.
 */
function plainChat(payload: Record<string, unknown>): boolean {
  if (Array.isArray(payload.tools) && payload.tools.length > 0) return false;
  if (payload.response_format !== undefined && payload.response_format !== null) return false;
  const messages = payload.messages;
  const last = Array.isArray(messages) ? messages[messages.length - 1] : undefined;
  if (!isRecord(last)) return true;
  return last.role !== 'tool' && !(last.role === 'user' && saidTurn(textOf(last.content)) !== null);
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
  const shape = streamShapeOf(ctx, ex);
  if (typeof shape === 'string') return shape;
  const limit = outputLimitOf(ex);
  if (typeof limit === 'string') return limit;
  const options = payload.stream_options;
  const decided = plainChat(payload) ? ctx.greeting : decideTurn(ctx.reply, conversationTail(payload));
  return {
    model,
    ...stopAtLimit(decided, limit),
    reasoning: typeof payload.reasoning_effort === 'string' && payload.reasoning_effort !== 'none' ? reasoningText : null,
    stream: payload.stream === true,
    includeUsage: isRecord(options) && options.include_usage === true,
    promptTokens: estimateTokens(promptChars(payload.messages)),
    ...shape,
  };
}

/** A stream's chunk count and the wait between chunks: the provider's, or the request's override headers. */
export function streamShapeOf(ctx: MockContext, ex: Exchange): { chunks: number; chunkDelayMs: number } | string {
  const headers = ex.req.headers;
  const chunks = headerNumber(headers['x-mock-chunks'], ctx.streamChunks, maxChunks);
  if (chunks === undefined) return `x-mock-chunks must be a whole number from 0 to ${maxChunks}.`;
  const chunkDelayMs = headerNumber(headers['x-mock-chunk-delay-ms'], ctx.streamChunkDelayMs, maxChunkDelayMs);
  if (chunkDelayMs === undefined) {
    return `x-mock-chunk-delay-ms must be a whole number from 0 to ${maxChunkDelayMs}.`;
  }
  return { chunks, chunkDelayMs };
}

function answer(ctx: MockContext, ex: Exchange, cutAfter: number): void {
  const plan = planChat(ctx, ex);
  if (typeof plan === 'string') return replyInvalid(ex, 400, plan);
  const id = `chatcmpl-mock${(++completionSeq).toString(36)}`;
  const created = Math.floor(Date.now() / 1000);

  if (plan.stream) {
    streamCompletion(ctx, ex, { ...plan, id, created, cutAfter }).catch(() => ex.res.destroy());
    return;
  }
  const turn = plan.turn;
  let message: Record<string, unknown>;
  let completionTokens: number;
  if (turn.kind === 'text') {
    message = { role: 'assistant', content: turn.text, refusal: null };
    completionTokens = turn.text === ctx.reply ? ctx.completionTokens : estimateTokens(turn.text.length);
  } else {
    const args = JSON.stringify(turn.input);
    const call = { id: `call_mock${completionSeq.toString(36)}`, type: 'function', function: { name: turn.name, arguments: args } };
    message = { role: 'assistant', content: null, refusal: null, tool_calls: [call] };
    completionTokens = estimateTokens(turn.name.length + args.length);
  }
  // As OpenAI counts them, reasoning tokens are part of completion_tokens.
  const reasoningTokens = plan.reasoning === null ? 0 : estimateTokens(plan.reasoning.length);
  if (plan.reasoning !== null) message.reasoning_content = plan.reasoning;
  completionTokens += reasoningTokens;
  const text = JSON.stringify({
    id,
    object: 'chat.completion',
    created,
    model: plan.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: turn.kind === 'tool' ? 'tool_calls' : plan.cut ? 'length' : 'stop' }],
    usage: {
      prompt_tokens: plan.promptTokens,
      completion_tokens: completionTokens,
      total_tokens: plan.promptTokens + completionTokens,
      ...(plan.reasoning === null ? {} : { completion_tokens_details: { reasoning_tokens: reasoningTokens } }),
    },
    system_fingerprint: SYSTEM_FINGERPRINT,
  });
  if (cutAfter < 0) return replyJson(ex, 200, text);
  replyTruncated(ex, text);
}

/** `POST /v1/chat/completions`. */
export function handleChatCompletion(ctx: MockContext, ex: Exchange): void {
  serveModelRequest(ctx, ex, 'openai', answer);
}
