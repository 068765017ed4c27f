import { createHash } from 'node:crypto';
import { anthropicTail, type PromptUsage, promptUsage } from './anthropic-prompt.js';
import type { Turn } from './conversation.js';
import { decideTurn, isRecord, reasoningText } from './conversation.js';
import type { Exchange } from './exchange.js';
import { drained, pause, replyAnthropicInvalid, replyJson, replyTruncated, sever } from './exchange.js';
import { serveModelRequest } from './model-request.js';
import { outputLimitOf, stopAtLimit } from './output-limit.js';
import type { MockContext } from './provider-context.js';
import { estimateTokens, splitReply, textPieces } from './provider-context.js';

// Anthropic's Messages API: `POST /v1/messages` (plain and streamed) and
// `POST /v1/messages/count_tokens`, answering the same turns as the chat endpoint. With
// extended thinking asked for, a thinking block comes first, as it does from Claude.

interface MessagesPlan {
  readonly id: string;
  readonly model: string;
  readonly turn: Turn;
  /** The text stopped at the output limit (`x-mock-max-tokens`): stop_reason `max_tokens`. */
  readonly cut: boolean;
  /** The thinking block's text and signature, when the request turned thinking on. */
  readonly thinking: { readonly text: string; readonly signature: string } | null;
  readonly usage: PromptUsage;
  readonly stream: boolean;
  readonly chunks: number;
  readonly chunkDelayMs: number;
}

const maxChunks = 100_000;
const maxChunkDelayMs = 60_000;
let messageSeq = 0;

function headerNumber(value: string | string[] | undefined, fallback: number, max: number): number | undefined {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return n <= max ? n : undefined;
}

/** `pathModel`: the model named by the path (Vertex AI's rawPredict), not the body. */
function parseBody(ex: Exchange, pathModel?: string): Record<string, unknown> | string {
  let payload: unknown;
  try {
    payload = JSON.parse(ex.body);
  } catch {
    return 'The request body is not valid JSON.';
  }
  if (!isRecord(payload)) return 'The request body must be a JSON object.';
  if (pathModel === undefined && (typeof payload.model !== 'string' || payload.model === '')) return 'model: Field required';
  if (!Array.isArray(payload.messages)) return 'messages: Field required';
  return payload;
}

/** `enabled` (with a budget) and `adaptive` both think; `disabled` or no field does not. */
function thinkingFor(ctx: MockContext, payload: Record<string, unknown>): MessagesPlan['thinking'] {
  const thinking = payload.thinking;
  if (!isRecord(thinking) || (thinking.type !== 'enabled' && thinking.type !== 'adaptive')) return null;
  // Claude's signature is opaque to the client, which only hands it back on the next turn.
  const signature = createHash('sha256').update(`${ctx.name}\0${reasoningText}`).digest('base64');
  return { text: reasoningText, signature };
}

function plan(ctx: MockContext, ex: Exchange, pathModel?: string): MessagesPlan | string {
  const payload = parseBody(ex, pathModel);
  if (typeof payload === 'string') return payload;
  const maxTokens = payload.max_tokens;
  if (!Number.isSafeInteger(maxTokens) || (maxTokens as number) < 1) return 'max_tokens: Field required (a positive integer)';
  const headers = ex.req.headers;
  const chunks = headerNumber(headers['x-mock-chunks'], ctx.streamChunks, maxChunks);
  if (chunks === undefined) return `x-mock-chunks must be a whole number from 0 to ${maxChunks}.`;
  const chunkDelayMs = headerNumber(headers['x-mock-chunk-delay-ms'], ctx.streamChunkDelayMs, maxChunkDelayMs);
  if (chunkDelayMs === undefined) return `x-mock-chunk-delay-ms must be a whole number from 0 to ${maxChunkDelayMs}.`;
  const limit = outputLimitOf(ex);
  if (typeof limit === 'string') return limit;
  return {
    id: `msg_mock${(++messageSeq).toString(36)}`,
    model: pathModel ?? (payload.model as string),
    ...stopAtLimit(decideTurn(ctx.reply, anthropicTail(payload)), limit),
    thinking: thinkingFor(ctx, payload),
    usage: promptUsage(payload, ctx.promptCache),
    stream: payload.stream === true,
    chunks,
    chunkDelayMs,
  };
}

function usageBody(usage: PromptUsage, outputTokens: number): Record<string, number> {
  return {
    input_tokens: usage.inputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cacheReadTokens,
    output_tokens: outputTokens,
  };
}

/** The turn's output: the text, or the tool call's input JSON, and its token estimate (thinking included). */
function output(p: MessagesPlan): { text: string; outputTokens: number } {
  const text = p.turn.kind === 'text' ? p.turn.text : JSON.stringify(p.turn.input);
  const chars = text.length + (p.turn.kind === 'tool' ? p.turn.name.length : 0) + (p.thinking?.text.length ?? 0);
  return { text, outputTokens: estimateTokens(chars) };
}

/** Deltas of JSON (tool input, structured output) stop at its length rather than repeat it. */
function deltasFor(ctx: MockContext, p: MessagesPlan, text: string): readonly string[] {
  if (p.turn.kind === 'text') return textPieces(ctx, p.turn, p.chunks).deltas;
  return splitReply(text, Math.min(p.chunks, text.length)).deltas;
}

/** The thinking block streamed whole before the answer: start, its text in pieces, the signature, stop. */
function thinkingEvents(p: MessagesPlan): string {
  if (p.thinking === null) return '';
  const { text, signature } = p.thinking;
  let out = event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } });
  for (const piece of splitReply(text, Math.max(1, Math.min(p.chunks, text.length))).deltas) {
    out += event('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: JSON.parse(piece) as string } });
  }
  return (
    out +
    event('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature } }) +
    event('content_block_stop', { index: 0 })
  );
}

function contentBlock(p: MessagesPlan, input: unknown): Record<string, unknown> {
  return p.turn.kind === 'text'
    ? { type: 'text', text: input }
    : { type: 'tool_use', id: `toolu_${p.id.slice(4)}`, name: p.turn.name, input };
}

function stopReasonOf(p: MessagesPlan): string {
  if (p.turn.kind === 'tool') return 'tool_use';
  return p.cut ? 'max_tokens' : 'end_turn';
}

function event(type: string, payload: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
}

/**
 * message_start, the thinking block when asked for, the content block (start, ping,
 * `chunks` deltas, stop), message_delta with the stop reason and output tokens,
 * message_stop. `cutAfter` content deltas, then the connection drops.
 */
async function stream(ctx: MockContext, ex: Exchange, p: MessagesPlan, cutAfter: number): Promise<void> {
  const { res } = ex;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-mock-provider': ex.name });
  res.flushHeaders();
  const { text, outputTokens } = output(p);
  const isText = p.turn.kind === 'text';
  const message = { id: p.id, type: 'message', role: 'assistant', model: p.model, content: [], stop_reason: null, stop_sequence: null };
  const index = p.thinking === null ? 0 : 1;
  let more = res.write(
    event('message_start', { message: { ...message, usage: usageBody(p.usage, 1) } }) +
      thinkingEvents(p) +
      event('content_block_start', { index, content_block: contentBlock(p, isText ? '' : {}) }) +
      event('ping', {}),
  );
  const deltas = deltasFor(ctx, p, text);
  const open = isText
    ? `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":`
    : `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"input_json_delta","partial_json":`;
  const cutAt = cutAfter < 0 ? -1 : Math.min(cutAfter, deltas.length);
  for (let i = 0; ; i++) {
    if (!more) await drained(ex);
    if (ex.closed) return;
    if (i === cutAt) return sever(ex);
    if (p.chunkDelayMs > 0) {
      await pause(ex, p.chunkDelayMs);
      if (ex.closed) return;
    }
    if (i === deltas.length) break;
    more = res.write(`${open}${deltas[i]}}}\n\n`);
  }
  const stopReason = stopReasonOf(p);
  res.end(
    event('content_block_stop', { index }) +
      event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } }) +
      event('message_stop', {}),
  );
}

function answer(ctx: MockContext, ex: Exchange, cutAfter: number, pathModel?: string): void {
  const p = plan(ctx, ex, pathModel);
  if (typeof p === 'string') return replyAnthropicInvalid(ex, p);
  if (p.stream) {
    stream(ctx, ex, p, cutAfter).catch(() => ex.res.destroy());
    return;
  }
  const { outputTokens } = output(p);
  const body = JSON.stringify({
    id: p.id,
    type: 'message',
    role: 'assistant',
    model: p.model,
    content: [
      ...(p.thinking === null ? [] : [{ type: 'thinking', thinking: p.thinking.text, signature: p.thinking.signature }]),
      contentBlock(p, p.turn.kind === 'text' ? p.turn.text : p.turn.input),
    ],
    stop_reason: stopReasonOf(p),
    stop_sequence: null,
    usage: usageBody(p.usage, outputTokens),
  });
  if (cutAfter < 0) return replyJson(ex, 200, body);
  replyTruncated(ex, body);
}

/** `POST /v1/messages`; with `pathModel`, Vertex AI's rawPredict, whose body names no model. */
export function handleMessages(ctx: MockContext, ex: Exchange, pathModel?: string): void {
  serveModelRequest(ctx, ex, 'anthropic', (c, e, cutAfter) => answer(c, e, cutAfter, pathModel));
}

/** `POST /v1/messages/count_tokens`: the prompt's whole count, caching aside (as Anthropic counts it). */
export function handleCountTokens(ctx: MockContext, ex: Exchange): void {
  serveModelRequest(ctx, ex, 'anthropic', (_ctx, exchange, cutAfter) => {
    const payload = parseBody(exchange);
    if (typeof payload === 'string') return replyAnthropicInvalid(exchange, payload);
    const body = JSON.stringify({ input_tokens: promptUsage(payload, null).totalTokens });
    if (cutAfter < 0) return replyJson(exchange, 200, body);
    replyTruncated(exchange, body);
  });
}
