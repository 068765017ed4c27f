import type { CacheControl, CanonicalMessage, CanonicalRequest, ContentPart, TextPart, Translation } from './types.js';
import { attempt, refuse } from './types.js';

export interface AnthropicRequestOptions {
  /** Anthropic requires `max_tokens`; used when the client (OpenAI's is optional) set none. Default 4096. */
  readonly defaultMaxTokens?: number;
}

export const DEFAULT_MAX_TOKENS = 4096;

function withCache(block: Record<string, unknown>, cc: CacheControl | undefined): Record<string, unknown> {
  if (cc !== undefined) block.cache_control = cc.ttl === undefined ? { type: cc.type } : { type: cc.type, ttl: cc.ttl };
  return block;
}

function textBlock(part: TextPart): Record<string, unknown> {
  return withCache({ type: 'text', text: part.text }, part.cacheControl);
}

function block(part: ContentPart): Record<string, unknown> {
  switch (part.type) {
    case 'text':
      return textBlock(part);
    case 'image': {
      const s = part.source;
      const source = s.kind === 'url' ? { type: 'url', url: s.url } : { type: 'base64', media_type: s.mediaType, data: s.data };
      return withCache({ type: 'image', source }, part.cacheControl);
    }
    case 'tool_call':
      return withCache({ type: 'tool_use', id: part.id, name: part.name, input: part.input }, part.cacheControl);
    case 'tool_result': {
      const result: Record<string, unknown> = { type: 'tool_result', tool_use_id: part.toolCallId, content: part.content.map(block) };
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
  for (const m of list) {
    const last = out[out.length - 1];
    const content = m.content.map(block);
    if (last !== undefined && last.role === m.role) last.content.push(...content);
    else out.push({ role: m.role, content });
  }
  return out;
}

/** The canonical request as an Anthropic Messages body. */
export function canonicalToAnthropicRequest(
  req: CanonicalRequest,
  options: AnthropicRequestOptions = {},
): Translation<Record<string, unknown>> {
  return attempt(() => {
    const body: Record<string, unknown> = {
      model: req.model,
      max_tokens: req.maxOutputTokens ?? options.defaultMaxTokens ?? DEFAULT_MAX_TOKENS,
      messages: messages(req.messages),
    };
    if (req.system.length > 0) {
      const only = req.system[0] as TextPart;
      body.system = req.system.length === 1 && only.cacheControl === undefined ? only.text : req.system.map(textBlock);
    }
    if (req.temperature !== undefined) {
      // OpenAI takes 0-2, Anthropic 0-1; rescaling would change what the client asked for.
      if (req.temperature > 1) refuse('unsupported', 'temperature', 'temperature above 1 cannot be translated (Anthropic accepts 0 to 1)');
      body.temperature = req.temperature;
    }
    if (req.topP !== undefined) body.top_p = req.topP;
    if (req.stopSequences !== undefined) body.stop_sequences = [...req.stopSequences];
    if (req.tools !== undefined) {
      body.tools = req.tools.map((t) => {
        const tool: Record<string, unknown> = { name: t.name };
        if (t.description !== undefined) tool.description = t.description;
        tool.input_schema = t.inputSchema;
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
    if (req.stream) body.stream = true;
    return body;
  });
}
