import type { TokenUsage } from '../metering.js';
import type { StopReason } from './types.js';
import { isRecord } from './types.js';

// What the Gemini API's answers and errors say, read into the gateway's terms: usage,
// why generation stopped, the ids a tool call is known by, and an error's reason.

function count(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}

/**
 * Gemini `usageMetadata` -> TokenUsage. `promptTokenCount` already includes
 * `cachedContentTokenCount` (the cache-read subset) but not `toolUsePromptTokenCount`; the
 * output is the answer's tokens and its thinking's, which Gemini counts apart and bills
 * alike. Null when it has no prompt count.
 */
export function usageFromGemini(usage: unknown): TokenUsage | null {
  if (!isRecord(usage) || typeof usage.promptTokenCount !== 'number') return null;
  const inputTokens = usage.promptTokenCount + count(usage.toolUsePromptTokenCount);
  const outputTokens = count(usage.candidatesTokenCount) + count(usage.thoughtsTokenCount);
  const read = count(usage.cachedContentTokenCount);
  return read === 0 ? { inputTokens, outputTokens } : { inputTokens, outputTokens, cacheReadTokens: read };
}

/** Gemini's finish reasons that say its filters withheld or cut the answer. */
const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY']);

/** A candidate's `finishReason`; a turn that called a function stopped for it, whatever Gemini says (it says STOP). */
export function stopReasonFromGemini(reason: unknown, calledTool: boolean): StopReason | null {
  if (typeof reason !== 'string' || reason === '' || reason === 'FINISH_REASON_UNSPECIFIED') return calledTool ? 'tool_use' : null;
  if (calledTool) return 'tool_use';
  if (reason === 'MAX_TOKENS') return 'max_tokens';
  if (FILTERED.has(reason)) return 'content_filter';
  return 'end_turn';
}

/**
 * Gemini calls functions by name and gives a call no id; clients of both protocols need
 * one to answer it. The id made here also carries the call's `thoughtSignature` (base64url,
 * so the id stays within Anthropic's `[A-Za-z0-9_-]`), which Gemini wants back with the call
 * when the conversation continues: the client returns the id, and the signature with it.
 */
export function toolCallId(turn: string, index: number, signature: unknown): string {
  const base = `call_${turn}${index}`;
  if (typeof signature !== 'string' || signature === '') return base;
  return `${base}_s${Buffer.from(signature, 'base64').toString('base64url')}`;
}

/** The thoughtSignature an id from toolCallId carries, as Gemini's base64; null when it carries none. */
export function signatureOfToolCallId(id: string): string | null {
  const at = /^call_[A-Za-z0-9]*_s([A-Za-z0-9_-]+)$/.exec(id);
  return at === null ? null : Buffer.from(at[1] as string, 'base64url').toString('base64');
}

/** A short per-answer tag for tool call ids: calls of different turns must not share ids. */
export function turnTag(responseId: unknown): string {
  const source = typeof responseId === 'string' && responseId !== '' ? responseId : Math.random().toString(36);
  return source.replace(/[^A-Za-z0-9]/g, '').slice(-8) || 'g';
}

/** What a Gemini error body says beyond its status: its reason (ErrorInfo) and retry delay (RetryInfo). */
export interface GeminiErrorDetails {
  readonly status: string | null;
  readonly reason: string | null;
  /** RetryInfo's `retryDelay` ("7s", "0.5s"), in whole seconds rounded up; null without one. */
  readonly retryDelaySeconds: number | null;
}

export function geminiErrorDetails(body: string): GeminiErrorDetails {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { status: null, reason: null, retryDelaySeconds: null };
  }
  // An error of a streamed call may come as a one-element array (Gemini's JSON stream shape).
  const top = Array.isArray(parsed) ? parsed[0] : parsed;
  const error = isRecord(top) && isRecord(top.error) ? top.error : {};
  let reason: string | null = null;
  let retryDelaySeconds: number | null = null;
  for (const d of Array.isArray(error.details) ? error.details : []) {
    if (!isRecord(d)) continue;
    if (typeof d.reason === 'string' && reason === null) reason = d.reason;
    if (typeof d.retryDelay === 'string') {
      const at = /^(\d{1,6}(?:\.\d+)?)s$/.exec(d.retryDelay.trim());
      if (at !== null) retryDelaySeconds = Math.ceil(Number(at[1]));
    }
  }
  return { status: typeof error.status === 'string' ? error.status : null, reason, retryDelaySeconds };
}

/** Gemini's reasons for a 400 that mean the gateway's key was refused, not the request. */
export const GEMINI_KEY_REASONS: ReadonlySet<string> = new Set(['API_KEY_INVALID', 'API_KEY_SERVICE_BLOCKED']);
