import { createHash } from 'node:crypto';
import type { ConversationTail, MockTool, MockToolChoice, OutputFormat } from './conversation.js';
import { isRecord } from './conversation.js';
import { estimateTokens } from './provider-context.js';

// Reading an Anthropic Messages request the way the mock needs it: its token count, how
// much of it a prompt cache would cover, and its last turn (for the tool trigger).

/** Input tokens as Anthropic reports them: `input` excludes the cached prefix, which is a read or a write. */
export interface PromptUsage {
  readonly totalTokens: number;
  readonly inputTokens: number;
  readonly cacheReadTokens: number;
  readonly cacheWriteTokens: number;
}

interface Segment {
  readonly chars: number;
  readonly cached: boolean;
  readonly key: string;
}

function blockText(block: unknown): string {
  if (typeof block === 'string') return block;
  if (!isRecord(block)) return '';
  if (typeof block.text === 'string') return block.text;
  if (block.type === 'tool_use') return JSON.stringify(block.input ?? {});
  if (block.type === 'tool_result') return contentText(block.content);
  return '';
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map(blockText).join('') : '';
}

function blocksOf(content: unknown): unknown[] {
  return Array.isArray(content) ? content : [content];
}

/** The prompt in Anthropic's cache order, tools then system then messages, one segment per block. */
function segments(payload: Record<string, unknown>): Segment[] {
  const out: Segment[] = [];
  const add = (block: unknown, text: string): void => {
    out.push({ chars: text.length, cached: isRecord(block) && isRecord(block.cache_control), key: text });
  };
  if (Array.isArray(payload.tools)) {
    for (const tool of payload.tools) {
      if (isRecord(tool)) add(tool, `${String(tool.name)}${String(tool.description ?? '')}${JSON.stringify(tool.input_schema ?? {})}`);
    }
  }
  if (payload.system !== undefined) for (const block of blocksOf(payload.system)) add(block, blockText(block));
  if (Array.isArray(payload.messages)) {
    for (const message of payload.messages) {
      if (isRecord(message)) for (const block of blocksOf(message.content)) add(block, blockText(block));
    }
  }
  return out;
}

/**
 * Counts the prompt, characters / 4. The prefix up to the last block with cache_control is
 * written to the mock's cache the first time it is seen and read from it afterwards
 * (Anthropic's 1024-token minimum is not modelled).
 */
export function promptUsage(payload: Record<string, unknown>, cache: Set<string> | null): PromptUsage {
  const all = segments(payload);
  const totalTokens = estimateTokens(all.reduce((n, s) => n + s.chars, 0));
  let last = -1;
  for (let i = 0; i < all.length; i++) if (all[i]?.cached === true) last = i;
  if (last === -1 || cache === null) return { totalTokens, inputTokens: totalTokens, cacheReadTokens: 0, cacheWriteTokens: 0 };
  const prefix = all.slice(0, last + 1);
  const cachedTokens = Math.min(totalTokens, Math.ceil(prefix.reduce((n, s) => n + s.chars, 0) / 4));
  return cachedPrefixUsage(cache, '', prefix, totalTokens, cachedTokens);
}

/**
 * The usage of a prompt whose cached prefix (its segments' keys, under `salt`) is written
 * the first time the mock sees it and read on every repeat, as a provider's prompt cache is.
 */
export function cachedPrefixUsage(
  cache: Set<string>,
  salt: string,
  prefix: readonly { readonly key: string }[],
  totalTokens: number,
  cachedTokens: number,
): PromptUsage {
  const hash = createHash('sha256');
  if (salt !== '') hash.update(salt);
  for (const s of prefix) hash.update(s.key).update('\0');
  const key = hash.digest('hex');
  const hit = cache.has(key);
  cache.add(key);
  return {
    totalTokens,
    inputTokens: totalTokens - cachedTokens,
    cacheReadTokens: hit ? cachedTokens : 0,
    cacheWriteTokens: hit ? 0 : cachedTokens,
  };
}

/**
 * `output_config.format`, the GA field, or `output_format`, the structured-outputs beta's
 * name for the same thing, which older SDKs still send.
 */
function outputFormat(payload: Record<string, unknown>): OutputFormat | null {
  const config = isRecord(payload.output_config) ? payload.output_config.format : undefined;
  const format = isRecord(config) ? config : payload.output_format;
  return isRecord(format) && format.type === 'json_schema' ? { kind: 'json_schema', schema: format.schema } : null;
}

/** The tools offered, the last turn and the output format, read from an Anthropic request. */
export function anthropicTail(payload: Record<string, unknown>): ConversationTail {
  const tools: MockTool[] = Array.isArray(payload.tools)
    ? payload.tools.flatMap((t) => (isRecord(t) && typeof t.name === 'string' ? [{ name: t.name, schema: t.input_schema }] : []))
    : [];
  const tc = isRecord(payload.tool_choice) ? payload.tool_choice : {};
  const toolChoice: MockToolChoice =
    tc.type === 'none'
      ? 'none'
      : tc.type === 'any'
        ? 'any'
        : tc.type === 'tool' && typeof tc.name === 'string'
          ? { name: tc.name }
          : 'auto';
  const format = outputFormat(payload);
  const messages = Array.isArray(payload.messages) ? payload.messages : [];
  const last = messages.at(-1);
  if (!isRecord(last) || last.role !== 'user') return { tools, toolChoice, lastUserText: null, toolResults: [], format };
  const blocks = blocksOf(last.content);
  const toolResults = blocks.filter((b) => isRecord(b) && b.type === 'tool_result').map(blockText);
  const lastUserText = blocks
    .filter((b) => !(isRecord(b) && b.type === 'tool_result'))
    .map(blockText)
    .join('');
  return { tools, toolChoice, lastUserText, toolResults, format, ...askedOf(messages) };
}

/** The last user turn with text, and the tool_use blocks the assistant wrote after it. */
function askedOf(messages: readonly unknown[]): { asked?: { text: string; calls: number } } {
  let calls = 0;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i];
    if (!isRecord(m)) continue;
    const blocks = blocksOf(m.content);
    if (m.role === 'assistant') calls += blocks.filter((b) => isRecord(b) && b.type === 'tool_use').length;
    else if (m.role === 'user') {
      const text = blocks
        .filter((b) => !(isRecord(b) && b.type === 'tool_result'))
        .map(blockText)
        .join('');
      if (text !== '') return { asked: { text, calls } };
    }
  }
  return {};
}
