import { randomBytes } from 'node:crypto';
import { streamShapeOf } from './chat-completion.js';
import type { Turn } from './conversation.js';
import { decideTurn, reasoningText } from './conversation.js';
import { writeEventStream } from './event-stream.js';
import type { Exchange } from './exchange.js';
import { openAiError, readModelRequest, replyInvalid, replyJson, replyTruncated } from './exchange.js';
import { serveModelRequest } from './model-request.js';
import { cutText, outputLimitOf } from './output-limit.js';
import type { MockContext, StoredResponse, StreamPieces } from './provider-context.js';
import { estimateTokens, splitReply, textPieces } from './provider-context.js';
import { echoedReasoning, echoedText, echoedTools, inputChars, reasoningOf, responsesTail } from './responses-request.js';

// OpenAI's Responses API, statefully, as the real one: `POST /v1/responses` answers the same
// turns as the chat endpoint (the greeting, a function call when the trigger fires, the
// final text after `function_call_output` items, JSON under `text.format`), with a reasoning
// item first when `reasoning.effort` is set, cut short as `incomplete` past
// `max_output_tokens`. It keeps the response (unless `store: false`) so
// `previous_response_id`, `GET /v1/responses/{id}` and `DELETE` find it, on this mock only. A
// continuation's input counts the whole conversation so far, and reports that part as
// cached, as OpenAI's prompt cache would. Bodies and events follow OpenAI's published
// schema (test/mock/responses-schema.test.ts checks them against it).

/** Most responses kept; beyond it the oldest go first. */
const maxStoredResponses = 1000;

type Item = Record<string, unknown>;

/** The answer decided before anything is written: its items, deltas and usage. */
interface AnswerPlan {
  readonly turn: Turn;
  /** The reasoning item (completed), when the request asked for reasoning. */
  readonly reasoning: Item | null;
  /** The message or function_call item, completed (or incomplete when cut at max_output_tokens). */
  readonly item: Item;
  /** The text or argument deltas, as streamed; they concatenate to the item's text or arguments. */
  readonly deltas: readonly string[];
  readonly incomplete: boolean;
  readonly outputTokens: number;
  readonly reasoningTokens: number;
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

function store(ctx: MockContext, stored: StoredResponse): void {
  if (ctx.responses.size >= maxStoredResponses) ctx.responses.delete(ctx.responses.keys().next().value as string);
  ctx.responses.set(stored.response.id as string, stored);
}

function parsed(pieces: StreamPieces): string[] {
  return pieces.deltas.map((d) => JSON.parse(d) as string);
}

function planAnswer(ctx: MockContext, payload: Record<string, unknown>, chunks: number, limit: number | null): AnswerPlan {
  const turn = decideTurn(ctx.reply, responsesTail(payload));
  const asked = reasoningOf(payload);
  const reasoning =
    asked === null
      ? null
      : { id: newId('rs'), type: 'reasoning', summary: asked.summarized ? [{ type: 'summary_text', text: reasoningText }] : [] };
  const reasoningTokens = reasoning === null ? 0 : estimateTokens(reasoningText.length);
  if (turn.kind === 'tool') {
    const args = JSON.stringify(turn.input);
    const item = { id: newId('fc'), type: 'function_call', status: 'completed', arguments: args, call_id: newId('call'), name: turn.name };
    const deltas = parsed(splitReply(args, Math.min(chunks, args.length)));
    return {
      turn,
      reasoning,
      item,
      deltas,
      incomplete: false,
      outputTokens: estimateTokens(turn.name.length + args.length),
      reasoningTokens,
    };
  }
  // Past max_output_tokens, or the model's own limit (x-mock-max-tokens), the text stops, 4
  // characters a token; reasoning spends from the same budget first.
  const requested = typeof payload.max_output_tokens === 'number' ? payload.max_output_tokens : Number.POSITIVE_INFINITY;
  const max = Math.min(requested, limit ?? Number.POSITIVE_INFINITY);
  const budget = Math.max(0, max - reasoningTokens);
  const incomplete = estimateTokens(turn.text.length) > budget;
  const deltas = parsed(textPieces(ctx, incomplete ? cutText(turn, budget * 4) : turn, chunks));
  const text = deltas.join('');
  const part = { type: 'output_text', annotations: [], logprobs: [], text };
  const item = { id: newId('msg'), type: 'message', status: incomplete ? 'incomplete' : 'completed', role: 'assistant', content: [part] };
  const outputTokens = incomplete ? budget : text === ctx.reply ? ctx.completionTokens : estimateTokens(text.length);
  return { turn, reasoning, item, deltas, incomplete, outputTokens, reasoningTokens };
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
  const limit = outputLimitOf(ex);
  if (typeof limit === 'string') return replyInvalid(ex, 400, limit);
  const plan = planAnswer(ctx, payload, stream ? shape.chunks : 1, limit);
  const cached = previous?.contextTokens ?? 0;
  const inputTokens = cached + estimateTokens(inputChars(payload));
  const outputTokens = plan.outputTokens + plan.reasoningTokens;
  const createdAt = Math.floor(Date.now() / 1000);
  const started = {
    id: newId('resp'),
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    background: false,
    completed_at: null,
    error: null,
    incomplete_details: null,
    instructions: typeof payload.instructions === 'string' ? payload.instructions : null,
    max_output_tokens: typeof payload.max_output_tokens === 'number' ? payload.max_output_tokens : null,
    max_tool_calls: null,
    model,
    output: [] as unknown[],
    parallel_tool_calls: payload.parallel_tool_calls !== false,
    previous_response_id: previousId,
    prompt_cache_key: null,
    reasoning: echoedReasoning(payload),
    safety_identifier: null,
    service_tier: 'default',
    store: payload.store !== false,
    temperature: typeof payload.temperature === 'number' ? payload.temperature : 1,
    text: echoedText(payload),
    tool_choice: payload.tool_choice ?? 'auto',
    tools: echoedTools(payload),
    top_logprobs: 0,
    top_p: typeof payload.top_p === 'number' ? payload.top_p : 1,
    truncation: 'disabled',
    metadata: payload.metadata ?? {},
  };
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: cached, cache_write_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: plan.reasoningTokens },
    total_tokens: inputTokens + outputTokens,
  };
  const final = {
    ...started,
    status: plan.incomplete ? 'incomplete' : 'completed',
    completed_at: plan.incomplete ? null : createdAt,
    incomplete_details: plan.incomplete ? { reason: 'max_output_tokens' } : null,
    output: plan.reasoning === null ? [plan.item] : [plan.reasoning, plan.item],
    usage,
  };
  const stored = { response: final, contextTokens: inputTokens + outputTokens };

  if (stream) {
    const events = streamEvents(started, final, plan);
    writeEventStream(ex, { ...events, chunkDelayMs: shape.chunkDelayMs, cutAfter }).then(
      (whole) => {
        if (whole && final.store) store(ctx, stored);
      },
      () => ex.res.destroy(),
    );
    return;
  }
  if (final.store) store(ctx, stored);
  const body = JSON.stringify(final);
  if (cutAfter < 0) return replyJson(ex, 200, body);
  replyTruncated(ex, body);
}

/**
 * The stream OpenAI sends, numbered from 0 in the order written: created, in_progress, the
 * reasoning item (its summary part and text when summarized), then the answer's item:
 * a message's content part and output_text deltas, or a function call's argument deltas;
 * the item done, and `response.completed` (or `response.incomplete`). The deltas are the
 * content events a `cut_stream` fault counts.
 */
function streamEvents(started: Item, final: Item, plan: AnswerPlan): { head: string; content: string[]; tail: string } {
  let seq = 0;
  const event = (type: string, data: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
  let head = event('response.created', { response: started }) + event('response.in_progress', { response: started });
  let index = 0;
  if (plan.reasoning !== null) {
    const at = { item_id: plan.reasoning.id, output_index: 0 };
    head += event('response.output_item.added', { output_index: 0, item: { ...plan.reasoning, summary: [] } });
    for (const [i, part] of (plan.reasoning.summary as { text: string }[]).entries()) {
      const s = { ...at, summary_index: i };
      head +=
        event('response.reasoning_summary_part.added', { ...s, part: { type: 'summary_text', text: '' } }) +
        event('response.reasoning_summary_text.delta', { ...s, delta: part.text }) +
        event('response.reasoning_summary_text.done', { ...s, text: part.text }) +
        event('response.reasoning_summary_part.done', { ...s, part });
    }
    head += event('response.output_item.done', { output_index: 0, item: plan.reasoning });
    index = 1;
  }
  const item = plan.item;
  // Built last, so their sequence numbers follow every other event's.
  const done = (): string =>
    event('response.output_item.done', { output_index: index, item }) +
    event(plan.incomplete ? 'response.incomplete' : 'response.completed', { response: final });
  if (plan.turn.kind === 'tool') {
    const at = { item_id: item.id, output_index: index };
    head += event('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } });
    const content = plan.deltas.map((delta) => event('response.function_call_arguments.delta', { ...at, delta }));
    const args = event('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.arguments });
    return { head, content, tail: args + done() };
  }
  const part = (item.content as Item[])[0] as Item;
  const at = { item_id: item.id, output_index: index, content_index: 0 };
  head +=
    event('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } }) +
    event('response.content_part.added', { ...at, part: { ...part, text: '' } });
  const content = plan.deltas.map((delta) => event('response.output_text.delta', { ...at, delta, logprobs: [] }));
  const tail =
    event('response.output_text.done', { ...at, text: part.text, logprobs: [] }) + event('response.content_part.done', { ...at, part });
  return { head, content, tail: tail + done() };
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
