import type {
  CacheControl,
  CanonicalMessage,
  CanonicalRequest,
  CanonicalTool,
  ContentPart,
  ImagePart,
  TextPart,
  ToolChoice,
  Translation,
} from './types.js';
import { attempt, isRecord, refuse } from './types.js';
import { num, onlyKeys, positiveInteger, present, record, text } from './wire-fields.js';

// Anthropic Messages requests -> the canonical form. As for OpenAI, a field that is not
// handled here is refused, never dropped: `top_k`, extended `thinking`, server tools,
// documents and citations have no OpenAI counterpart (ADR-0011).

const HANDLED = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'temperature',
  'top_p',
  'stop_sequences',
  'stream',
  'tools',
  'tool_choice',
  'metadata',
]);

function cacheControl(value: unknown, path: string): CacheControl | undefined {
  if (!present(value)) return undefined;
  const cc = record(value, path);
  if (cc.type !== 'ephemeral') refuse('unsupported', `${path}.type`, 'only ephemeral cache_control is supported');
  return typeof cc.ttl === 'string' ? { type: 'ephemeral', ttl: cc.ttl } : { type: 'ephemeral' };
}

/** Adds `cacheControl` only when the block has one, so canonical values compare without undefined keys. */
function cached<T extends object>(part: T, block: Record<string, unknown>, path: string): T {
  const cc = cacheControl(block.cache_control, `${path}.cache_control`);
  return cc === undefined ? part : { ...part, cacheControl: cc };
}

function textBlock(block: Record<string, unknown>, path: string): TextPart {
  onlyKeys(block, path, ['type', 'text', 'cache_control']);
  return cached({ type: 'text', text: text(block.text, `${path}.text`) }, block, path);
}

function imageBlock(block: Record<string, unknown>, path: string): ImagePart {
  onlyKeys(block, path, ['type', 'source', 'cache_control']);
  const source = record(block.source, `${path}.source`);
  if (source.type === 'base64') {
    const image: ImagePart = {
      type: 'image',
      source: {
        kind: 'base64',
        mediaType: text(source.media_type, `${path}.source.media_type`),
        data: text(source.data, `${path}.source.data`),
      },
    };
    return cached(image, block, path);
  }
  if (source.type === 'url')
    return cached({ type: 'image', source: { kind: 'url', url: text(source.url, `${path}.source.url`) } }, block, path);
  return refuse('unsupported', `${path}.source.type`, `image source ${JSON.stringify(source.type)} cannot be translated`);
}

function blocks(content: unknown, path: string, role: 'user' | 'assistant'): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) refuse('invalid', path, `${path} must be a string or an array of content blocks`);
  return content.map((raw, j): ContentPart => {
    const at = `${path}[${j}]`;
    const block = record(raw, at);
    switch (block.type) {
      case 'text':
        return textBlock(block, at);
      case 'image':
        return imageBlock(block, at);
      case 'tool_use':
        if (role !== 'assistant') break;
        onlyKeys(block, at, ['type', 'id', 'name', 'input', 'cache_control']);
        return cached(
          { type: 'tool_call', id: text(block.id, `${at}.id`), name: text(block.name, `${at}.name`), input: block.input ?? {} },
          block,
          at,
        );
      case 'tool_result': {
        if (role !== 'user') break;
        onlyKeys(block, at, ['type', 'tool_use_id', 'content', 'is_error', 'cache_control']);
        const inner = present(block.content) ? blocks(block.content, `${at}.content`, 'user') : [];
        const content = inner.map((part, k) => {
          if (part.type !== 'text' && part.type !== 'image')
            refuse('unsupported', `${at}.content[${k}]`, 'a tool result may hold only text and images');
          return part;
        });
        const part = {
          type: 'tool_result' as const,
          toolCallId: text(block.tool_use_id, `${at}.tool_use_id`),
          content,
          isError: block.is_error === true,
        };
        return cached(part, block, at);
      }
    }
    return refuse('unsupported', `${at}.type`, `content block ${JSON.stringify(block.type)} cannot be translated`);
  });
}

function message(raw: unknown, i: number): CanonicalMessage {
  const path = `messages[${i}]`;
  const m = record(raw, path);
  onlyKeys(m, path, ['role', 'content']);
  if (m.role !== 'user' && m.role !== 'assistant')
    return refuse('unsupported', `${path}.role`, `message role ${JSON.stringify(m.role)} is not supported`);
  return { role: m.role, content: blocks(m.content, `${path}.content`, m.role) };
}

function tools(raw: unknown): CanonicalTool[] {
  if (!Array.isArray(raw)) refuse('invalid', 'tools', 'tools must be an array');
  return raw.map((value, i) => {
    const at = `tools[${i}]`;
    const tool = record(value, at);
    // Anthropic's server tools (web search, code execution...) carry a versioned type.
    if (present(tool.type) && tool.type !== 'custom')
      refuse('unsupported', `${at}.type`, `server tool ${JSON.stringify(tool.type)} cannot be translated`);
    onlyKeys(tool, at, ['type', 'name', 'description', 'input_schema', 'cache_control']);
    const name = text(tool.name, `${at}.name`);
    const inputSchema = record(tool.input_schema, `${at}.input_schema`);
    const base: CanonicalTool = present(tool.description)
      ? { name, description: text(tool.description, `${at}.description`), inputSchema }
      : { name, inputSchema };
    return cached(base, tool, at);
  });
}

function toolChoice(raw: unknown): { choice: ToolChoice; parallel: boolean | undefined } {
  const tc = record(raw, 'tool_choice');
  onlyKeys(tc, 'tool_choice', ['type', 'name', 'disable_parallel_tool_use']);
  const parallel = present(tc.disable_parallel_tool_use) ? tc.disable_parallel_tool_use !== true : undefined;
  switch (tc.type) {
    case 'auto':
    case 'any':
    case 'none':
      return { choice: { type: tc.type }, parallel };
    case 'tool':
      return { choice: { type: 'tool', name: text(tc.name, 'tool_choice.name') }, parallel };
  }
  return refuse('invalid', 'tool_choice.type', 'tool_choice.type must be auto, any, tool or none');
}

function system(raw: unknown): TextPart[] {
  if (typeof raw === 'string') return [{ type: 'text', text: raw }];
  if (!Array.isArray(raw)) refuse('invalid', 'system', 'system must be a string or an array of text blocks');
  return raw.map((value, i) => {
    const block = record(value, `system[${i}]`);
    if (block.type !== 'text') refuse('unsupported', `system[${i}].type`, 'system blocks must be text');
    return textBlock(block, `system[${i}]`);
  });
}

/** An Anthropic Messages request body (parsed JSON) in the canonical form. */
export function anthropicRequestToCanonical(body: unknown): Translation<CanonicalRequest> {
  return attempt(() => {
    const b = record(body, '');
    for (const key of Object.keys(b)) {
      if (HANDLED.has(key) || !present(b[key])) continue;
      // Extended thinking switched off asks for nothing.
      if (key === 'thinking' && isRecord(b.thinking) && b.thinking.type === 'disabled') continue;
      refuse('unsupported', key, `${key} cannot be translated to the target protocol`);
    }
    if (!Array.isArray(b.messages)) return refuse('invalid', 'messages', 'messages must be an array');
    const maxTokens = positiveInteger(b.max_tokens, 'max_tokens');
    const out: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = {
      model: text(b.model, 'model'),
      system: present(b.system) ? system(b.system) : [],
      messages: b.messages.map(message),
      maxOutputTokens: maxTokens,
      stream: b.stream === true,
    };
    if (present(b.temperature)) out.temperature = num(b.temperature, 'temperature');
    if (present(b.top_p)) out.topP = num(b.top_p, 'top_p');
    if (present(b.stop_sequences)) {
      if (!Array.isArray(b.stop_sequences)) return refuse('invalid', 'stop_sequences', 'stop_sequences must be an array');
      out.stopSequences = b.stop_sequences.map((s, i) => text(s, `stop_sequences[${i}]`));
    }
    if (present(b.tools)) out.tools = tools(b.tools);
    if (present(b.tool_choice)) {
      const { choice, parallel } = toolChoice(b.tool_choice);
      out.toolChoice = choice;
      if (parallel !== undefined) out.parallelToolCalls = parallel;
    }
    if (present(b.metadata)) {
      const metadata = record(b.metadata, 'metadata');
      onlyKeys(metadata, 'metadata', ['user_id']);
      if (present(metadata.user_id)) out.user = text(metadata.user_id, 'metadata.user_id');
    }
    return out;
  });
}
