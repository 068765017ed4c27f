import { SwitchyardError } from '../errors.js';
import { firstMember, withFirstMember, withNestedMember, withTopLevelMember } from './json-splice.js';
import type { TokenUsage } from './metering.js';

// The OpenAI-compatible protocol's request body and usage (the provider types that speak it,
// openai/ and azure_openai/, address and authenticate the call). Same protocol in and out, so
// the body passes through untouched except for the model name when the candidate's upstream
// model differs, and a stream's request for its usage.

export const CHAT_COMPLETIONS_PATH = '/chat/completions';

/**
 * The request body sent upstream. When the model is unchanged, the client's bytes go out
 * as they came in; otherwise only the bytes of the `model` value are replaced. Never
 * re-serialised from the parsed body: JSON.parse rounds integers beyond 2^53 (a `seed`).
 */
export function chatBodyFor(rawBody: Buffer, parsed: Record<string, unknown>, upstreamModel: string): Buffer {
  if (parsed.model === upstreamModel) return rawBody;
  return withTopLevelMember(rawBody, 'model', JSON.stringify(upstreamModel)) ?? notAnObject();
}

/**
 * A streamed request's body for `upstreamModel` with `stream_options.include_usage: true`,
 * so that the stream reports its usage in a last event and can be billed. `body` is the
 * client's. Spliced as bytes either way: inserted at the start of the object when the client
 * sent no stream_options (the usual case), or into the stream_options it sent.
 */
export function withStreamUsage(body: Buffer, parsed: Record<string, unknown>, upstreamModel: string): Buffer {
  const renamed = chatBodyFor(body, parsed, upstreamModel);
  if (parsed.stream_options === undefined) return withFirstMember(renamed, STREAM_USAGE) ?? notAnObject();
  // Spliced even when the parsed options already say true: a nested duplicate
  // (`"include_usage":false,"include_usage":true`) would leave a first-key reader unbilled.
  return withNestedMember(renamed, 'stream_options', 'include_usage', 'true') ?? notAnObject();
}

const STREAM_USAGE = firstMember('stream_options', '{"include_usage":true}');

/** The body was parsed as an object at the edge; a splice that finds none is a gateway bug. */
function notAnObject(): never {
  throw new SwitchyardError('internal_error', 'the request body to rewrite is not a JSON object');
}

function usageOf(value: unknown): TokenUsage | null {
  if (value === null || typeof value !== 'object') return null;
  const usage = (value as { usage?: unknown }).usage;
  if (usage === null || typeof usage !== 'object') return null;
  const u = usage as { prompt_tokens?: unknown; completion_tokens?: unknown };
  if (typeof u.prompt_tokens !== 'number' || typeof u.completion_tokens !== 'number') return null;
  return { inputTokens: u.prompt_tokens, outputTokens: u.completion_tokens };
}

const USAGE_KEY = Buffer.from('"usage"');
const PROMPT_TOKENS_KEY = Buffer.from('"prompt_tokens"');
const COMPLETION_TOKENS_KEY = Buffer.from('"completion_tokens"');

/**
 * Usage from a whole non-streamed chat completion body. It reads the `usage` object's
 * counts from the bytes rather than parsing the body a second time: inside a JSON string a
 * quote is escaped, so `"prompt_tokens":` can only be a key, and the last `"usage"` key of
 * the body is the response's own.
 */
export function usageFromJson(body: Buffer): TokenUsage | null {
  const at = body.lastIndexOf(USAGE_KEY);
  if (at === -1) return null;
  const input = countAfter(body, PROMPT_TOKENS_KEY, at);
  if (input === null) return null;
  const output = countAfter(body, COMPLETION_TOKENS_KEY, at);
  if (output === null) return null;
  return { inputTokens: input, outputTokens: output };
}

/** The digits after the first `key` (from `from` on) that a `:` follows, JSON whitespace allowed around it; null when none. */
function countAfter(body: Buffer, key: Buffer, from: number): number | null {
  for (let k = body.indexOf(key, from); k !== -1; k = body.indexOf(key, k + 1)) {
    let i = skipSpace(body, k + key.length);
    if (body[i] !== 0x3a) continue;
    i = skipSpace(body, i + 1);
    let n = 0;
    const first = i;
    for (let d = body[i]; d !== undefined && d >= 0x30 && d <= 0x39; d = body[++i]) n = n * 10 + (d - 0x30);
    if (i > first) return n;
  }
  return null;
}

function skipSpace(body: Buffer, i: number): number {
  for (let c = body[i]; c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = body[++i]);
  return i;
}

/**
 * Usage from the tail of an SSE stream: OpenAI sends it in the last data event before
 * `[DONE]` when the client asked for `stream_options.include_usage`.
 */
export function usageFromSseTail(tail: string): TokenUsage | null {
  const lines = tail.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] as string;
    if (!line.startsWith('data:') || !line.includes('"usage"')) continue;
    try {
      const usage = usageOf(JSON.parse(line.slice(5)));
      if (usage !== null) return usage;
    } catch {
      // A cut-off first line of the tail: keep looking further up.
    }
  }
  return null;
}
