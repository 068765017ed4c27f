import type { TokenUsage } from '../metering.js';
import type { CanonicalResponse, StopReason, ToolCallPart } from './types.js';
import { isRecord } from './types.js';
import { usageToResponses } from './usage.js';

// The canonical answer as an OpenAI Responses API `Response` object: what a Responses client
// gets back from a provider of another protocol, whole or as the last event of its stream
// (responses-stream.ts builds it from the same pieces, so both give the same object). The
// request's settings are echoed as the API does, with its defaults for those not given.

/** What a Response says beyond the answer: the gateway's ids and clock, and the request's echo. */
export interface ResponsesShape {
  readonly id: string;
  /** Unix seconds. */
  readonly createdAt: number;
  /** The model the client named; the upstream's answer names its own when this is ''. */
  readonly model: string;
  /** The request's settings as the Response echoes them (responsesEcho). */
  readonly echo: Record<string, unknown>;
  newItemId(prefix: 'msg' | 'fc' | 'rs'): string;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

function given(parsed: Record<string, unknown>, key: string, fallback: unknown): unknown {
  const value = parsed[key];
  return value === undefined || value === null ? fallback : value;
}

/** The request fields a Response echoes, each with the API's default when the request left it out. */
export function responsesEcho(parsed: Record<string, unknown>): Record<string, unknown> {
  const reasoning = isRecord(parsed.reasoning) ? parsed.reasoning : {};
  const text = isRecord(parsed.text) ? parsed.text : {};
  const conversation = parsed.conversation;
  const echo: Record<string, unknown> = {
    instructions: given(parsed, 'instructions', null),
    max_output_tokens: given(parsed, 'max_output_tokens', null),
    max_tool_calls: given(parsed, 'max_tool_calls', null),
    metadata: given(parsed, 'metadata', {}),
    parallel_tool_calls: given(parsed, 'parallel_tool_calls', true),
    previous_response_id: given(parsed, 'previous_response_id', null),
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    store: given(parsed, 'store', true),
    temperature: given(parsed, 'temperature', 1),
    text: { format: text.format ?? { type: 'text' }, verbosity: text.verbosity ?? 'medium' },
    tool_choice: given(parsed, 'tool_choice', 'auto'),
    tools: given(parsed, 'tools', []),
    top_p: given(parsed, 'top_p', 1),
    top_logprobs: given(parsed, 'top_logprobs', 0),
    truncation: given(parsed, 'truncation', 'disabled'),
    background: given(parsed, 'background', false),
    service_tier: given(parsed, 'service_tier', 'auto'),
    safety_identifier: given(parsed, 'safety_identifier', null),
    prompt_cache_key: given(parsed, 'prompt_cache_key', null),
    conversation: typeof conversation === 'string' ? { id: conversation } : isRecord(conversation) ? { id: conversation.id } : null,
  };
  // `user` is a plain string in the schema, never null: echoed only when given.
  if (typeof parsed.user === 'string') echo.user = parsed.user;
  return echo;
}

/** How a stop reason ends a Response: complete, or incomplete and why. */
export function endOf(reason: StopReason | null): { status: 'completed' | 'incomplete'; reason: string | null } {
  if (reason === 'max_tokens') return { status: 'incomplete', reason: 'max_output_tokens' };
  if (reason === 'content_filter') return { status: 'incomplete', reason: 'content_filter' };
  return { status: 'completed', reason: null };
}

export function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

export function messageItem(id: string, status: string, texts: readonly string[]): Record<string, unknown> {
  return { id, type: 'message', status, role: 'assistant', content: texts.map(outputText) };
}

export function reasoningItem(id: string, summaries: readonly string[]): Record<string, unknown> {
  return { id, type: 'reasoning', summary: summaries.map((text) => ({ type: 'summary_text', text })) };
}

export function functionCallItem(id: string, callId: string, name: string, args: string, status: string): Record<string, unknown> {
  return { id, type: 'function_call', status, call_id: callId, name, arguments: args };
}

export interface ResponseEnd {
  readonly status: ResponseStatus;
  readonly incompleteReason?: string | null;
  readonly usage?: TokenUsage | null;
  readonly error?: { readonly code: string; readonly message: string } | null;
  /** Unix seconds; a completed Response says when it completed. */
  readonly completedAt?: number | null;
  /** The upstream's model, named when the shape names none. */
  readonly model?: string;
}

/** A Response object around its output items. */
export function responseObject(shape: ResponsesShape, output: readonly unknown[], end: ResponseEnd): Record<string, unknown> {
  const response: Record<string, unknown> = {
    id: shape.id,
    object: 'response',
    created_at: shape.createdAt,
    status: end.status,
    completed_at: end.status === 'completed' ? (end.completedAt ?? shape.createdAt) : null,
    error: end.error ?? null,
    incomplete_details: end.incompleteReason == null ? null : { reason: end.incompleteReason },
    model: shape.model === '' ? (end.model ?? '') : shape.model,
    output,
    ...shape.echo,
  };
  // The schema's `usage` is an object, never null: left out until there is one.
  if (end.usage != null) response.usage = usageToResponses(end.usage);
  return response;
}

/**
 * The canonical answer as a Response object: thinking as a `reasoning` item (its text as the
 * summary; there is no encrypted content to give), text as one `message` item per run of
 * text, each tool call as a `function_call` item whose `call_id` is the upstream's call id.
 */
export function canonicalToResponsesObject(
  res: CanonicalResponse,
  shape: ResponsesShape,
  completedAt = Math.floor(Date.now() / 1000),
): Record<string, unknown> {
  const end = endOf(res.stopReason);
  const itemStatus = end.status === 'completed' ? 'completed' : 'incomplete';
  // Runs of text or of thinking, each one item; a tool call is an item of its own.
  const runs: ({ kind: 'text' | 'thinking'; parts: string[] } | { kind: 'tool'; call: ToolCallPart })[] = [];
  for (const part of res.content) {
    const last = runs[runs.length - 1];
    if (part.type === 'tool_call') runs.push({ kind: 'tool', call: part });
    else if (last !== undefined && last.kind === part.type) last.parts.push(part.text);
    else runs.push({ kind: part.type, parts: [part.text] });
  }
  // An answer cut short leaves its last item incomplete; what came before it was whole.
  const items = runs.map((run, i) => {
    if (run.kind === 'tool') {
      const call = run.call;
      return functionCallItem(shape.newItemId('fc'), call.id, call.name, JSON.stringify(call.input), 'completed');
    }
    const text = run.parts.join('');
    return run.kind === 'text'
      ? messageItem(shape.newItemId('msg'), i === runs.length - 1 ? itemStatus : 'completed', [text])
      : reasoningItem(shape.newItemId('rs'), [text]);
  });
  return responseObject(shape, items, {
    status: end.status,
    incompleteReason: end.reason,
    usage: res.usage,
    completedAt,
    model: res.model,
  });
}
