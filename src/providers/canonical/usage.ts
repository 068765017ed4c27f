import type { TokenUsage } from '../metering.js';
import { isRecord } from './types.js';

// Usage between the wire shapes and TokenUsage, whose `inputTokens` counts every prompt
// token (metering.ts). OpenAI's `prompt_tokens` already includes its cached tokens;
// Anthropic's `input_tokens` excludes both cache reads and cache writes, so they are added
// in on the way in and taken out on the way out. Cache counts are present only when
// non-zero, so every count survives a round trip through either protocol exactly.
//
// Every count is passed on as the upstream reported it, a negative or fractional one too:
// whether usage can be billed is decided in one place, where the request is settled
// (governance.checkUsage, which bills insane usage as missing and counts it). A count
// clamped or dropped here would hide the fault from that check, and a null would be read as
// "no usage" (zero, in a translated body). An absent or non-numeric output or cache count
// is zero; an absent input count means no usage at all.
//
// OpenAI has no field for cache writes. They travel as `prompt_tokens_details
// .cache_write_tokens`, an extension that OpenAI SDKs pass through untouched; without it an
// Anthropic upstream's cache writes would vanish on the way to an OpenAI client.

export interface OpenaiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number; cache_write_tokens?: number };
}

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

function count(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}

function withCache(inputTokens: number, outputTokens: number, read: number, write: number): TokenUsage {
  if (read === 0 && write === 0) return { inputTokens, outputTokens };
  if (write === 0) return { inputTokens, outputTokens, cacheReadTokens: read };
  if (read === 0) return { inputTokens, outputTokens, cacheWriteTokens: write };
  return { inputTokens, outputTokens, cacheReadTokens: read, cacheWriteTokens: write };
}

/** OpenAI `usage` -> TokenUsage; null when it has no token counts. */
export function usageFromOpenai(usage: unknown): TokenUsage | null {
  if (!isRecord(usage) || typeof usage.prompt_tokens !== 'number') return null;
  const details = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  return withCache(usage.prompt_tokens, count(usage.completion_tokens), count(details.cached_tokens), count(details.cache_write_tokens));
}

/**
 * OpenAI Responses API `usage` (`input_tokens`, `output_tokens`, cache counts in
 * `input_tokens_details`) -> TokenUsage; its `input_tokens` already includes cached tokens,
 * as `prompt_tokens` does. Null when it has no input count.
 */
export function usageFromResponses(usage: unknown): TokenUsage | null {
  if (!isRecord(usage) || typeof usage.input_tokens !== 'number') return null;
  const details = isRecord(usage.input_tokens_details) ? usage.input_tokens_details : {};
  return withCache(usage.input_tokens, count(usage.output_tokens), count(details.cached_tokens), count(details.cache_write_tokens));
}

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/**
 * TokenUsage as a Responses API `usage`. The canonical usage does not count reasoning
 * apart from the rest of the output, so `reasoning_tokens` is 0; the output count holds them.
 */
export function usageToResponses(usage: TokenUsage): ResponsesUsage {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens ?? 0, cache_write_tokens: usage.cacheWriteTokens ?? 0 },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

export function usageToOpenai(usage: TokenUsage): OpenaiUsage {
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  const out: OpenaiUsage = {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: write === 0 ? { cached_tokens: read } : { cached_tokens: read, cache_write_tokens: write },
  };
  return out;
}

/** Anthropic `usage` (a message's, or message_start's) -> TokenUsage; null when it has no input count. */
export function usageFromAnthropic(usage: unknown): TokenUsage | null {
  if (!isRecord(usage) || typeof usage.input_tokens !== 'number') return null;
  const read = count(usage.cache_read_input_tokens);
  const write = count(usage.cache_creation_input_tokens);
  return withCache(usage.input_tokens + read + write, count(usage.output_tokens), read, write);
}

/**
 * Bedrock Converse `usage` -> TokenUsage; null when it has no input count. Like
 * Anthropic's, Bedrock's `inputTokens` excludes `cacheReadInputTokens` and
 * `cacheWriteInputTokens` (AWS's prompt-caching guide), so both are added in.
 */
export function usageFromBedrock(usage: unknown): TokenUsage | null {
  if (!isRecord(usage) || typeof usage.inputTokens !== 'number') return null;
  const read = count(usage.cacheReadInputTokens);
  const write = count(usage.cacheWriteInputTokens);
  return withCache(usage.inputTokens + read + write, count(usage.outputTokens), read, write);
}

export function usageToAnthropic(usage: TokenUsage): AnthropicUsage {
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  return {
    // Never negative, even for an upstream whose cache counts exceed its prompt count.
    input_tokens: Math.max(0, usage.inputTokens - read - write),
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
  };
}
