// What the mock answers, decided the same way for both protocols so a conversation gives the
// same turns through either: a tool call when tools are offered and the user asks for one,
// a final text after tool results, the provider's greeting otherwise. Deterministic, so
// tests and demos can drive a whole tool-use round trip (docs/mock-provider.md).

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
}

export type Turn =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'tool'; readonly name: string; readonly input: Record<string, unknown> };

const TOOL_WORD = /\btools?\b/i;
const resultPreviewChars = 200;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Placeholder arguments that satisfy a simple object schema: strings "mock", numbers 1, booleans true. */
function placeholderInput(schema: unknown): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {};
  for (const [key, prop] of Object.entries(properties)) {
    const type = isRecord(prop) ? prop.type : undefined;
    input[key] =
      type === 'number' || type === 'integer' ? 1 : type === 'boolean' ? true : type === 'array' ? [] : type === 'object' ? {} : 'mock';
  }
  return input;
}

/**
 * The trigger: tool results in the last user turn always get a final text. Otherwise a tool
 * is called when tools are offered and tool_choice is not `none`, and either tool_choice
 * forces one or the user's last message contains the word "tool". The tool is the forced
 * one, else the first whose name the message mentions, else the first offered.
 */
export function decideTurn(reply: string, tail: ConversationTail): Turn {
  if (tail.toolResults.length > 0) {
    const said = tail.toolResults.join(' ').slice(0, resultPreviewChars);
    return { kind: 'text', text: `${reply} The tool said: ${said}` };
  }
  const choice = tail.toolChoice;
  if (tail.tools.length === 0 || choice === 'none') return { kind: 'text', text: reply };
  const text = tail.lastUserText ?? '';
  const forced = choice !== 'auto';
  if (!forced && (tail.lastUserText === null || !TOOL_WORD.test(text))) return { kind: 'text', text: reply };
  const named = typeof choice === 'object' ? tail.tools.find((t) => t.name === choice.name) : undefined;
  const tool = named ?? tail.tools.find((t) => text.includes(t.name)) ?? (tail.tools[0] as MockTool);
  return { kind: 'tool', name: tool.name, input: placeholderInput(tool.schema) };
}
