import { MIN_THINKING_BUDGET, THINKING_BUDGETS } from './policy.js';
import type {
  CacheControl,
  CanonicalMessage,
  CanonicalRequest,
  ClientProtocol,
  ContentPart,
  FilePart,
  TextPart,
  Translation,
  WrittenRequest,
} from './types.js';
import { attempt, refuse } from './types.js';

export interface AnthropicRequestOptions {
  /** Anthropic requires `max_tokens`; used when the client (OpenAI's is optional) set none. Default 4096. */
  readonly defaultMaxTokens?: number;
  /** The client's protocol, naming a dropped reasoning setting as the client sent it; default an OpenAI chat client. */
  readonly client?: ClientProtocol;
}

export const DEFAULT_MAX_TOKENS = 4096;

function withCache(block: Record<string, unknown>, cc: CacheControl | undefined): Record<string, unknown> {
  if (cc !== undefined) block.cache_control = cc.ttl === undefined ? { type: cc.type } : { type: cc.type, ttl: cc.ttl };
  return block;
}

function textBlock(part: TextPart): Record<string, unknown> {
  return withCache({ type: 'text', text: part.text }, part.cacheControl);
}

/** Anthropic reads PDFs as documents, by URL or inline (base64); plain text inline only, as a text source. */
function documentBlock(part: FilePart, path: string): Record<string, unknown> {
  const s = part.source;
  let source: Record<string, unknown>;
  if (s.kind === 'url') source = { type: 'url', url: s.url };
  else if (s.mediaType === 'application/pdf') source = { type: 'base64', media_type: s.mediaType, data: s.data };
  else if (s.mediaType === 'text/plain')
    source = { type: 'text', media_type: s.mediaType, data: Buffer.from(s.data, 'base64').toString('utf8') };
  else return refuse('unsupported', path, `Anthropic takes PDF and plain text documents, not ${s.mediaType}`);
  const doc: Record<string, unknown> = { type: 'document', source };
  if (part.filename !== undefined) doc.title = part.filename;
  return doc;
}

function block(part: ContentPart, path: string): Record<string, unknown> {
  switch (part.type) {
    case 'text':
      return textBlock(part);
    case 'image': {
      const s = part.source;
      const source = s.kind === 'url' ? { type: 'url', url: s.url } : { type: 'base64', media_type: s.mediaType, data: s.data };
      return withCache({ type: 'image', source }, part.cacheControl);
    }
    case 'file':
      return withCache(documentBlock(part, path), part.cacheControl);
    case 'tool_call':
      return withCache({ type: 'tool_use', id: part.id, name: part.name, input: part.input }, part.cacheControl);
    case 'tool_result': {
      const result: Record<string, unknown> = {
        type: 'tool_result',
        tool_use_id: part.toolCallId,
        content: part.content.map((c, k) => block(c, `${path}.content[${k}]`)),
      };
      if (part.isError) result.is_error = true;
      return withCache(result, part.cacheControl);
    }
  }
}

/**
 * Adjacent turns of one role become one message: Anthropic wants every tool result of a
 * turn in the single user message after it, where OpenAI sends one `tool` message each.
 */
function messages(list: readonly CanonicalMessage[]): Record<string, unknown>[] {
  const out: { role: string; content: Record<string, unknown>[] }[] = [];
  list.forEach((m, i) => {
    const last = out[out.length - 1];
    const content = m.content.map((part, j) => block(part, `messages[${i}].content[${j}]`));
    if (last !== undefined && last.role === m.role) last.content.push(...content);
    else out.push({ role: m.role, content });
  });
  return out;
}

/** The lowest `top_p` Anthropic accepts with extended thinking on. */
export const THINKING_MIN_TOP_P = 0.95;

/**
 * Extended thinking for the request, when Anthropic can take it: a budget below
 * `max_tokens` (which counts the thinking) and at least the minimum; no forced tool
 * (Anthropic refuses one with thinking); and not in the middle of a tool loop, where
 * Anthropic wants the earlier turn's signed thinking block back, which a client of another
 * protocol never had. Null when it cannot, so the caller lists the effort as dropped.
 */
export function thinkingBudget(req: CanonicalRequest, maxTokens: number): number | null {
  const reasoning = req.reasoning;
  if (reasoning === undefined) return null;
  const budget = Math.min(reasoning.budgetTokens ?? THINKING_BUDGETS[reasoning.effort], maxTokens - 1);
  if (budget < MIN_THINKING_BUDGET) return null;
  if (req.toolChoice?.type === 'any' || req.toolChoice?.type === 'tool') return null;
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i] as CanonicalMessage;
    if (m.role === 'assistant') {
      if (m.content.some((p) => p.type === 'tool_call')) return null;
      break;
    }
  }
  return budget;
}

/** The canonical request as an Anthropic Messages body, and what had to be dropped or clamped. */
export function canonicalToAnthropicRequest(req: CanonicalRequest, options: AnthropicRequestOptions = {}): Translation<WrittenRequest> {
  return attempt(() => {
    const dropped: string[] = [];
    const maxTokens = req.maxOutputTokens ?? options.defaultMaxTokens ?? DEFAULT_MAX_TOKENS;
    const body: Record<string, unknown> = {
      model: req.model,
      max_tokens: maxTokens,
      messages: messages(req.messages),
    };
    if (req.system.length > 0) {
      const only = req.system[0] as TextPart;
      body.system = req.system.length === 1 && only.cacheControl === undefined ? only.text : req.system.map(textBlock);
    }
    if (req.temperature !== undefined) {
      // OpenAI takes 0-2, Anthropic 0-1: a higher value is the most random Anthropic allows.
      if (req.temperature > 1) dropped.push('temperature');
      body.temperature = Math.min(req.temperature, 1);
    }
    if (req.topP !== undefined) body.top_p = req.topP;
    if (req.stopSequences !== undefined) body.stop_sequences = [...req.stopSequences];
    if (req.tools !== undefined) {
      body.tools = req.tools.map((t) => {
        const tool: Record<string, unknown> = { name: t.name };
        if (t.description !== undefined) tool.description = t.description;
        tool.input_schema = t.inputSchema;
        if (t.strict === true) tool.strict = true;
        return withCache(tool, t.cacheControl);
      });
    }
    const choice = req.toolChoice;
    if (choice !== undefined || req.parallelToolCalls === false) {
      const tc: Record<string, unknown> = choice?.type === 'tool' ? { type: 'tool', name: choice.name } : { type: choice?.type ?? 'auto' };
      // Anthropic has no parallel flag with `none`: nothing is called, so nothing runs in parallel.
      if (req.parallelToolCalls !== undefined && tc.type !== 'none') tc.disable_parallel_tool_use = !req.parallelToolCalls;
      body.tool_choice = tc;
    }
    if (req.user !== undefined) body.metadata = { user_id: req.user };
    if (req.responseFormat !== undefined) body.output_config = { format: { type: 'json_schema', schema: req.responseFormat.schema } };
    if (req.reasoning !== undefined) {
      const budget = thinkingBudget(req, maxTokens);
      if (budget === null) dropped.push(options.client === 'responses' ? 'reasoning' : 'reasoning_effort');
      else {
        body.thinking = { type: 'enabled', budget_tokens: budget };
        // With thinking on, Anthropic takes no temperature and a top_p of at least 0.95 only.
        if (body.temperature !== undefined) {
          delete body.temperature;
          if (!dropped.includes('temperature')) dropped.push('temperature');
        }
        if (req.topP !== undefined && req.topP < THINKING_MIN_TOP_P) {
          delete body.top_p;
          dropped.push('top_p');
        }
      }
    }
    if (req.stream) body.stream = true;
    return { body, dropped };
  });
}
