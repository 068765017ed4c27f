import { cachedPrefixUsage, type PromptUsage } from './anthropic-prompt.js';
import type { ConversationTail, MockTool, MockToolChoice, OutputFormat } from './conversation.js';
import { isRecord } from './conversation.js';

// Reading a Bedrock Converse request the way the mock needs it: whether Bedrock would take
// it, its token count and how much of it a prompt cache covers, and its last turn.

/** What the mock bills an image at, whatever its size (Claude's cost of a ~1.15 megapixel image). */
export const IMAGE_TOKENS = 1600;

/** Past this many prompt tokens the request is refused, as a model's context window refuses it. */
export const MAX_INPUT_TOKENS = 200_000;

/** Input tokens as Bedrock reports them: `inputTokens` excludes the cached prefix, which is a read or a write (as Anthropic's). */
export type ConverseUsage = PromptUsage;

interface Segment {
  readonly tokens: number;
  readonly key: string;
}

/** A block's tokens, and the text that stands for it in the cache key (an image counts none of its characters). */
function blockKey(block: Record<string, unknown>): Segment {
  if (typeof block.text === 'string') return textSegment(block.text);
  if (isRecord(block.image)) return { key: `\0image${JSON.stringify(block.image)}`, tokens: IMAGE_TOKENS };
  if (isRecord(block.toolUse)) return textSegment(JSON.stringify(block.toolUse.input ?? {}));
  if (isRecord(block.toolResult)) return textSegment(toolResultText(block.toolResult));
  return textSegment('');
}

/** Text counts a quarter token a character; the sum is rounded up once, for the whole prompt. */
function textSegment(text: string): Segment {
  return { key: text, tokens: text.length / 4 };
}

/** A tool result's content as text: its text blocks, its JSON blocks serialized. */
export function toolResultText(result: Record<string, unknown>): string {
  const content = Array.isArray(result.content) ? result.content : [];
  return content
    .map((c) => (isRecord(c) ? (typeof c.text === 'string' ? c.text : c.json !== undefined ? JSON.stringify(c.json) : '') : ''))
    .join('');
}

/**
 * The prompt in Bedrock's cache order (tools, system, messages), one segment per block, and
 * where the last cachePoint falls: the prefix before it is what the cache covers.
 */
function segments(payload: Record<string, unknown>): { all: Segment[]; cachedUpTo: number } {
  const all: Segment[] = [];
  let cachedUpTo = 0;
  const visit = (block: unknown, segment: (b: Record<string, unknown>) => Segment): void => {
    if (!isRecord(block)) return;
    if (isRecord(block.cachePoint)) {
      cachedUpTo = all.length;
      return;
    }
    all.push(segment(block));
  };
  const tools = isRecord(payload.toolConfig) && Array.isArray(payload.toolConfig.tools) ? payload.toolConfig.tools : [];
  for (const tool of tools) visit(tool, (t) => textSegment(JSON.stringify(t.toolSpec ?? {})));
  for (const block of Array.isArray(payload.system) ? payload.system : []) visit(block, blockKey);
  for (const message of payload.messages as unknown[]) {
    if (isRecord(message) && Array.isArray(message.content)) for (const block of message.content) visit(block, blockKey);
  }
  return { all, cachedUpTo };
}

function tokensOf(segments: readonly Segment[]): number {
  return Math.ceil(segments.reduce((n, s) => n + s.tokens, 0));
}

/**
 * Counts the prompt: characters / 4, plus IMAGE_TOKENS per image. The prefix up to the last
 * cachePoint is written to the mock's cache the first time it is seen and read from it after
 * (a model's minimum cacheable length is not modelled).
 */
export function converseUsage(payload: Record<string, unknown>, cache: Set<string>): ConverseUsage {
  const { all, cachedUpTo } = segments(payload);
  const totalTokens = Math.max(1, tokensOf(all));
  if (cachedUpTo === 0) return { totalTokens, inputTokens: totalTokens, cacheReadTokens: 0, cacheWriteTokens: 0 };
  const prefix = all.slice(0, cachedUpTo);
  const cachedTokens = Math.min(totalTokens, tokensOf(prefix));
  return cachedPrefixUsage(cache, 'bedrock\0', prefix, totalTokens, cachedTokens);
}

/** Bedrock's own checks on a Converse body, with its wording; null when it would take it. */
export function converseProblem(payload: unknown): string | null {
  if (!isRecord(payload))
    return 'Malformed input request: the request body must be a JSON object, please reformat your input and try again.';
  if (!Array.isArray(payload.messages) || payload.messages.length === 0)
    return 'The model returned the following errors: messages: at least one message is required';
  for (const [i, m] of payload.messages.entries()) {
    if (!isRecord(m) || (m.role !== 'user' && m.role !== 'assistant'))
      return `1 validation error detected: Value at 'messages.${i + 1}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`;
    if (!Array.isArray(m.content) || m.content.length === 0)
      return `The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`;
  }
  if ((payload.messages[0] as Record<string, unknown>).role !== 'user')
    return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
  if (payload.system !== undefined && !Array.isArray(payload.system))
    return 'Malformed input request: system must be a list of SystemContentBlock.';
  const config = payload.inferenceConfig;
  if (config !== undefined && !isRecord(config)) return 'Malformed input request: inferenceConfig must be an object.';
  const maxTokens = isRecord(config) ? config.maxTokens : undefined;
  if (maxTokens !== undefined && !(Number.isSafeInteger(maxTokens) && (maxTokens as number) >= 1))
    return "1 validation error detected: Value at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1";
  return null;
}

function outputFormat(payload: Record<string, unknown>): OutputFormat | null {
  const format = isRecord(payload.outputConfig) ? payload.outputConfig.textFormat : undefined;
  if (!isRecord(format) || format.type !== 'json_schema' || !isRecord(format.structure)) return null;
  const definition = format.structure.jsonSchema;
  if (!isRecord(definition) || typeof definition.schema !== 'string') return null;
  try {
    return { kind: 'json_schema', schema: JSON.parse(definition.schema) };
  } catch {
    return null;
  }
}

/** The tools offered, the last turn and the output format, read from a checked Converse request. */
export function converseTail(payload: Record<string, unknown>): ConversationTail {
  const config = isRecord(payload.toolConfig) ? payload.toolConfig : {};
  const tools: MockTool[] = [];
  for (const t of Array.isArray(config.tools) ? config.tools : []) {
    const spec = isRecord(t) ? t.toolSpec : undefined;
    if (isRecord(spec) && typeof spec.name === 'string') {
      tools.push({ name: spec.name, schema: isRecord(spec.inputSchema) ? spec.inputSchema.json : undefined });
    }
  }
  const choice = isRecord(config.toolChoice) ? config.toolChoice : {};
  let toolChoice: MockToolChoice = 'auto';
  if (isRecord(choice.any)) toolChoice = 'any';
  else if (isRecord(choice.tool) && typeof choice.tool.name === 'string') toolChoice = { name: choice.tool.name };
  const format = outputFormat(payload);
  const last = (payload.messages as Record<string, unknown>[]).at(-1) as Record<string, unknown>;
  if (last.role !== 'user') return { tools, toolChoice, lastUserText: null, toolResults: [], format };
  const blocks = (last.content as unknown[]).filter(isRecord);
  const toolResults = blocks.filter((b) => isRecord(b.toolResult)).map((b) => toolResultText(b.toolResult as Record<string, unknown>));
  const said = blocks.flatMap((b) => (typeof b.text === 'string' ? [b.text] : [])).join('\n');
  return { tools, toolChoice, lastUserText: toolResults.length === 0 ? said : null, toolResults, format };
}
