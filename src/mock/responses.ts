import { randomBytes } from 'node:crypto';
import { streamShapeOf } from './chat-completion.js';
import { isRecord } from './conversation.js';
import { writeEventStream } from './event-stream.js';
import type { Exchange } from './exchange.js';
import { openAiError, readModelRequest, replyInvalid, replyJson, replyTruncated } from './exchange.js';
import { serveModelRequest } from './model-request.js';
import type { MockContext, StoredResponse } from './provider-context.js';
import { estimateTokens } from './provider-context.js';

// OpenAI's Responses API, statefully, as the real one: `POST /v1/responses` answers with the
// greeting and keeps the response (unless `store: false`) so `previous_response_id`,
// `GET /v1/responses/{id}` and `DELETE` find it, on this mock only. A continuation's
// input counts the whole conversation so far, and reports that part as cached, as
// OpenAI's prompt cache would.

/** Most responses kept; beyond it the oldest go first. */
const maxStoredResponses = 1000;

/** Characters of text in `input` (a string, or items with string or part content) and `instructions`. */
function inputChars(payload: Record<string, unknown>): number {
  let chars = typeof payload.instructions === 'string' ? payload.instructions.length : 0;
  const input = payload.input;
  if (typeof input === 'string') return chars + input.length;
  if (!Array.isArray(input)) return chars;
  for (const item of input) {
    if (!isRecord(item)) continue;
    if (typeof item.output === 'string') chars += item.output.length;
    const content = item.content;
    if (typeof content === 'string') chars += content.length;
    else if (Array.isArray(content))
      for (const part of content) if (isRecord(part) && typeof part.text === 'string') chars += part.text.length;
  }
  return chars;
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

function store(ctx: MockContext, stored: StoredResponse): void {
  if (ctx.responses.size >= maxStoredResponses) ctx.responses.delete(ctx.responses.keys().next().value as string);
  ctx.responses.set(stored.response.id as string, stored);
}

function answer(ctx: MockContext, ex: Exchange, cutAfter: number): void {
  const request = readModelRequest(ex);
  if (request === null) return;
  const { payload, model } = request;
  const previousId = typeof payload.previous_response_id === 'string' ? payload.previous_response_id : null;
  const previous = previousId === null ? undefined : ctx.responses.get(previousId);
  if (previousId !== null && previous === undefined) {
    const message = `Previous response with id '${previousId}' not found.`;
    return replyJson(ex, 400, openAiError(message, 'invalid_request_error', 'previous_response_not_found', 'previous_response_id'));
  }
  const shape = streamShapeOf(ctx, ex);
  if (typeof shape === 'string') return replyInvalid(ex, 400, shape);
  const stream = payload.stream === true;
  const pieces = stream ? ctx.piecesFor(shape.chunks) : null;
  const cached = previous?.contextTokens ?? 0;
  const inputTokens = cached + estimateTokens(inputChars(payload));
  const outputTokens = pieces?.completionTokens ?? ctx.completionTokens;
  const text = pieces === null ? ctx.reply : pieces.deltas.map((d) => JSON.parse(d) as string).join('');
  const messageId = newId('msg');
  const part = { type: 'output_text', annotations: [], logprobs: [], text };
  const message = { id: messageId, type: 'message', status: 'completed', role: 'assistant', content: [part] };
  const base = {
    id: newId('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: typeof payload.instructions === 'string' ? payload.instructions : null,
    max_output_tokens: typeof payload.max_output_tokens === 'number' ? payload.max_output_tokens : null,
    model,
    output: [message] as unknown[],
    parallel_tool_calls: true,
    previous_response_id: previousId,
    store: payload.store !== false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    } as unknown,
    user: null,
    metadata: {},
  };
  const stored = { response: base, contextTokens: inputTokens + outputTokens };

  if (pieces !== null) {
    let seq = 0;
    const event = (type: string, data: Record<string, unknown>): string =>
      `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
    const started = { ...base, status: 'in_progress', output: [], usage: null };
    const at = { item_id: messageId, output_index: 0, content_index: 0 };
    const head =
      event('response.created', { response: started }) +
      event('response.in_progress', { response: started }) +
      event('response.output_item.added', { output_index: 0, item: { ...message, status: 'in_progress', content: [] } }) +
      event('response.content_part.added', { ...at, part: { ...part, text: '' } });
    const content = pieces.deltas.map((d) => event('response.output_text.delta', { ...at, delta: JSON.parse(d) as string, logprobs: [] }));
    const tail =
      event('response.output_text.done', { ...at, text, logprobs: [] }) +
      event('response.content_part.done', { ...at, part }) +
      event('response.output_item.done', { output_index: 0, item: message }) +
      event('response.completed', { response: base });
    writeEventStream(ex, { head, content, tail, chunkDelayMs: shape.chunkDelayMs, cutAfter }).then(
      (whole) => {
        if (whole && base.store) store(ctx, stored);
      },
      () => ex.res.destroy(),
    );
    return;
  }
  if (base.store) store(ctx, stored);
  const body = JSON.stringify(base);
  if (cutAfter < 0) return replyJson(ex, 200, body);
  replyTruncated(ex, body);
}

/** `POST /v1/responses`. */
export function handleResponses(ctx: MockContext, ex: Exchange): void {
  serveModelRequest(ctx, ex, 'openai', answer);
}

/** `GET` and `DELETE /v1/responses/{id}`: a kept response, or 404. Faults do not apply. */
export function handleStoredResponse(ctx: MockContext, ex: Exchange, id: string): void {
  const stored = ctx.responses.get(id);
  if (stored === undefined) return replyInvalid(ex, 404, `Response with id '${id}' not found.`);
  if (ex.req.method === 'DELETE') {
    ctx.responses.delete(id);
    return replyJson(ex, 200, JSON.stringify({ id, object: 'response', deleted: true }));
  }
  replyJson(ex, 200, JSON.stringify(stored.response));
}
