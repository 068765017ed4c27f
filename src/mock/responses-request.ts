import type { ConversationTail, MockTool, MockToolChoice, OutputFormat } from './conversation.js';
import { isRecord } from './conversation.js';

// Reading a Responses API request the way the mock needs it: the tools offered and the last
// turn (for the tool trigger), the output format, whether to reason, and what the response
// echoes back (OpenAI echoes the request's tools, tool_choice, text and reasoning settings).

/** Characters of text in `input` (a string, or items with string or part content) and `instructions`. */
export function inputChars(payload: Record<string, unknown>): number {
  let chars = typeof payload.instructions === 'string' ? payload.instructions.length : 0;
  const input = payload.input;
  if (typeof input === 'string') return chars + input.length;
  if (!Array.isArray(input)) return chars;
  for (const item of input) {
    if (!isRecord(item)) continue;
    if (typeof item.output === 'string') chars += item.output.length;
    chars += contentText(item.content).length;
  }
  return chars;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

function functionTools(payload: Record<string, unknown>): MockTool[] {
  if (!Array.isArray(payload.tools)) return [];
  return payload.tools.flatMap((t) =>
    isRecord(t) && t.type === 'function' && typeof t.name === 'string' ? [{ name: t.name, schema: t.parameters }] : [],
  );
}

function toolChoiceOf(payload: Record<string, unknown>): MockToolChoice {
  const tc = payload.tool_choice;
  if (tc === 'none') return 'none';
  if (tc === 'required') return 'any';
  if (isRecord(tc) && tc.type === 'function' && typeof tc.name === 'string') return { name: tc.name };
  return 'auto';
}

/** `text.format`: a JSON schema (`{type: 'json_schema', name, schema, strict}`), any JSON object, or prose. */
export function outputFormatOf(payload: Record<string, unknown>): OutputFormat | null {
  const format = isRecord(payload.text) ? payload.text.format : undefined;
  if (!isRecord(format)) return null;
  if (format.type === 'json_schema') return { kind: 'json_schema', schema: format.schema };
  return format.type === 'json_object' ? { kind: 'json_object' } : null;
}

/**
 * The tools, the last turn and the format. Trailing `function_call_output` items are the
 * tool results of the last turn; otherwise the last item, when it is the user's message (a
 * bare string `input` is one), is what the trigger reads.
 */
export function responsesTail(payload: Record<string, unknown>): ConversationTail {
  const base = { tools: functionTools(payload), toolChoice: toolChoiceOf(payload), format: outputFormatOf(payload) };
  const input = payload.input;
  if (typeof input === 'string') return { ...base, lastUserText: input, toolResults: [] };
  const items = Array.isArray(input) ? input.filter(isRecord) : [];
  const toolResults: string[] = [];
  for (let i = items.length - 1; i >= 0 && items[i]?.type === 'function_call_output'; i--) {
    const output = items[i]?.output;
    toolResults.unshift(typeof output === 'string' ? output : contentText(output));
  }
  const last = items.at(-1);
  const userSaid = last !== undefined && last.role === 'user' && (last.type === undefined || last.type === 'message');
  return { ...base, lastUserText: userSaid ? contentText(last.content) : null, toolResults };
}

/** `reasoning.effort` other than `none` makes the answer start with a reasoning item; `summary` set gives it a summary. */
export function reasoningOf(payload: Record<string, unknown>): { readonly summarized: boolean } | null {
  const reasoning = payload.reasoning;
  if (!isRecord(reasoning) || typeof reasoning.effort !== 'string' || reasoning.effort === 'none') return null;
  return { summarized: typeof reasoning.summary === 'string' && reasoning.summary !== 'none' };
}

/** The request's tools as the response lists them: a function tool with its defaults filled in (strict defaults to true). */
export function echoedTools(payload: Record<string, unknown>): unknown[] {
  if (!Array.isArray(payload.tools)) return [];
  return payload.tools.map((t) =>
    isRecord(t) && t.type === 'function'
      ? { type: 'function', name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? true }
      : t,
  );
}

/** The response's `text`: the request's format (prose by default) and verbosity. */
export function echoedText(payload: Record<string, unknown>): Record<string, unknown> {
  const text = isRecord(payload.text) ? payload.text : {};
  return {
    format: isRecord(text.format) ? text.format : { type: 'text' },
    verbosity: typeof text.verbosity === 'string' ? text.verbosity : 'medium',
  };
}

/** The response's `reasoning`: what was asked for, nulls otherwise. */
export function echoedReasoning(payload: Record<string, unknown>): Record<string, unknown> {
  const reasoning = isRecord(payload.reasoning) ? payload.reasoning : {};
  return { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null };
}
