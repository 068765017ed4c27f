// What the mock answers, decided the same way for both protocols so a conversation gives the
// same turns through either: a tool call when tools are offered and the user asks for one,
// a final text after tool results, the text the user dictated after `say:`, the provider's
// greeting otherwise; JSON for that schema in place of the text when the request asks for
// structured output. Deterministic, so tests and demos can drive a whole tool-use round trip
// (docs/mock-provider.md).

import { placeholderObjectFor, placeholderValue } from './schema-placeholder.js';

export interface MockTool {
  readonly name: string;
  /** JSON Schema of the input; the mock fills its properties with placeholder values. */
  readonly schema: unknown;
}

/** Anthropic's `any` is OpenAI's `required`; a string names the one tool to call. */
export type MockToolChoice = 'auto' | 'none' | 'any' | { readonly name: string };

export interface ConversationTail {
  readonly tools: readonly MockTool[];
  readonly toolChoice: MockToolChoice;
  /** Text of the last message when it is the user's (tool results aside); null otherwise. */
  readonly lastUserText: string | null;
  /** Text of the tool results in the last user turn, in order. */
  readonly toolResults: readonly string[];
  /** Structured output asked for: a JSON Schema, or `json_object` for any JSON object; null for prose. */
  readonly format: OutputFormat | null;
  /**
   * The user's last words (the last user turn with text), and how many tool calls the model
   * has made since: a request that names several tools gets them called one per turn, in
   * the order named. Absent where a protocol's reader does not tell it.
   */
  readonly asked?: { readonly text: string; readonly calls: number };
}

export type OutputFormat = { readonly kind: 'json_schema'; readonly schema: unknown } | { readonly kind: 'json_object' };

export type Turn = TextTurn | { readonly kind: 'tool'; readonly name: string; readonly input: Record<string, unknown> };

export interface TextTurn {
  readonly kind: 'text';
  readonly text: string;
  /**
   * The text must stream exactly, never repeated to fill its chunks: structured output, a
   * text cut at its output limit, or a text dictated with `say:`.
   */
  readonly json?: true;
  /** The stream's chunks exactly as `say:` marked them, whatever the chunk count; they join to `text`. */
  readonly pieces?: readonly string[];
}

const TOOL_WORD = /\btools?\b/i;
const SAY_PREFIX = 'say:';
/** U+241F SYMBOL FOR UNIT SEPARATOR: visible in a test's source, and no model would write it. */
const CHUNK_MARK = '\u241f';
const resultPreviewChars = 200;

/** What a reasoning model "thinks" before answering, the same every time. */
export const reasoningText = 'Thinking about it.';

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The trigger: tool results in the last user turn always get a final text. Otherwise a tool
 * is called when tools are offered and tool_choice is not `none`, and either tool_choice
 * forces one or the user's last message contains the word "tool". The tool is the forced
 * one, else the first whose name the message mentions, else the first offered. A last
 * message starting `say:` is answered with its text (see `saidTurn`) unless a call is forced.
 */
export function decideTurn(reply: string, tail: ConversationTail): Turn {
  if (tail.toolResults.length > 0) {
    const next = nextNamedTool(tail);
    if (next !== undefined) return { kind: 'tool', name: next.name, input: placeholderObjectFor(next.schema) };
    const said = tail.toolResults.join(' ').slice(0, resultPreviewChars);
    return textTurn(`${reply} The tool said: ${said}`, tail.format);
  }
  const choice = tail.toolChoice;
  const offered = tail.tools.length > 0 && choice !== 'none';
  const forced = offered && choice !== 'auto';
  const said = forced ? null : saidTurn(tail.lastUserText);
  if (said !== null) return said;
  if (!offered) return textTurn(reply, tail.format);
  const text = tail.lastUserText ?? '';
  if (!forced && (tail.lastUserText === null || !TOOL_WORD.test(text))) return textTurn(reply, tail.format);
  const named = typeof choice === 'object' ? tail.tools.find((t) => t.name === choice.name) : undefined;
  const tool = named ?? tail.tools.find((t) => text.includes(t.name)) ?? (tail.tools[0] as MockTool);
  return { kind: 'tool', name: tool.name, input: placeholderObjectFor(tool.schema) };
}

/**
 * `say: <text>` makes the model say exactly `<text>` (one space after the colon dropped),
 * so a test can put any text in the answer; each U+241F in it ends a stream chunk and is
 * removed, so `say: ab\u241fcd` streams `ab` then `cd`. Structured output does not apply: the
 * text is said as written. Null when the message does not start with `say:`.
 */
export function saidTurn(userText: string | null): TextTurn | null {
  if (userText === null || !userText.startsWith(SAY_PREFIX)) return null;
  const rest = userText.slice(SAY_PREFIX.length);
  const said = rest.startsWith(' ') ? rest.slice(1) : rest;
  if (!said.includes(CHUNK_MARK)) return { kind: 'text', text: said, json: true };
  const pieces = said.split(CHUNK_MARK);
  return { kind: 'text', text: pieces.join(''), json: true, pieces };
}

/**
 * When the user's last words asked for tools and named two or more of the offered ones,
 * the one to call next (in the order named), until each has been called once.
 */
function nextNamedTool(tail: ConversationTail): MockTool | undefined {
  const asked = tail.asked;
  if (asked === undefined || !TOOL_WORD.test(asked.text)) return undefined;
  const named = tail.tools
    .filter((t) => asked.text.includes(t.name))
    .sort((a, b) => asked.text.indexOf(a.name) - asked.text.indexOf(b.name));
  return named.length > 1 ? named[asked.calls] : undefined;
}

/**
 * The final text, or under structured output the JSON that stands in for it: a placeholder
 * valid against the schema, or for `json_object` an object holding the text.
 */
function textTurn(text: string, format: OutputFormat | null): Turn {
  if (format === null) return { kind: 'text', text };
  const value = format.kind === 'json_schema' ? placeholderValue(format.schema) : { text };
  return { kind: 'text', text: JSON.stringify(value), json: true };
}
