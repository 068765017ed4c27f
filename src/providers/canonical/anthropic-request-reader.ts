import { droppedList, effortOfBudget, NOTHING_DROPPED, ruleFor } from './policy.js';
import type {
  CanonicalMessage,
  CanonicalRequest,
  CanonicalTool,
  ContentPart,
  ImagePart,
  Reasoning,
  ResponseFormat,
  TextPart,
  ToolChoice,
  Translation,
} from './types.js';
import { attempt, refuse } from './types.js';
import { cached, num, onlyKeys, positiveInteger, present, record, text } from './wire-fields.js';

// Anthropic Messages requests -> the canonical form. As for OpenAI, each field's fate is the
// table in policy.ts: read here when mapped, named in `dropped` when dropped, refused when
// unable or unnamed (server tools, documents, the MCP connector...).

/** Fields dropped while reading, named as the policy names them, each once. */
type Dropped = Set<string>;

function textBlock(block: Record<string, unknown>, path: string, dropped: Dropped): TextPart {
  onlyKeys(block, path, ['type', 'text', 'cache_control', 'citations']);
  if (present(block.citations)) dropped.add('messages.content.citations');
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

function blocks(content: unknown, path: string, role: 'user' | 'assistant', dropped: Dropped): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) refuse('invalid', path, `${path} must be a string or an array of content blocks`);
  const out: ContentPart[] = [];
  content.forEach((raw, j) => {
    const part = contentBlock(record(raw, `${path}[${j}]`), `${path}[${j}]`, role, dropped);
    if (part !== null) out.push(part);
  });
  return out;
}

/** One content block; null for an earlier turn's thinking, which OpenAI cannot take back. */
function contentBlock(block: Record<string, unknown>, at: string, role: 'user' | 'assistant', dropped: Dropped): ContentPart | null {
  switch (block.type) {
    case 'text':
      return textBlock(block, at, dropped);
    case 'image':
      return imageBlock(block, at);
    case 'thinking':
    case 'redacted_thinking':
      if (role !== 'assistant') break;
      dropped.add('messages.content.thinking');
      return null;
    case 'tool_use':
      if (role !== 'assistant') break;
      onlyKeys(block, at, ['type', 'id', 'name', 'input', 'cache_control']);
      return cached<ContentPart>(
        { type: 'tool_call', id: text(block.id, `${at}.id`), name: text(block.name, `${at}.name`), input: block.input ?? {} },
        block,
        at,
      );
    case 'tool_result': {
      if (role !== 'user') break;
      onlyKeys(block, at, ['type', 'tool_use_id', 'content', 'is_error', 'cache_control']);
      const inner = present(block.content) ? blocks(block.content, `${at}.content`, 'user', dropped) : [];
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
}

function message(raw: unknown, i: number, dropped: Dropped): CanonicalMessage {
  const path = `messages[${i}]`;
  const m = record(raw, path);
  onlyKeys(m, path, ['role', 'content']);
  if (m.role !== 'user' && m.role !== 'assistant')
    return refuse('unsupported', `${path}.role`, `message role ${JSON.stringify(m.role)} is not supported`);
  return { role: m.role, content: blocks(m.content, `${path}.content`, m.role, dropped) };
}

/** Tool fields that only steer how Anthropic itself serves the tool. */
const TOOL_HINTS = ['eager_input_streaming', 'defer_loading', 'input_examples', 'allowed_callers'] as const;

function tools(raw: unknown, dropped: Dropped): CanonicalTool[] {
  if (!Array.isArray(raw)) refuse('invalid', 'tools', 'tools must be an array');
  return raw.map((value, i) => {
    const at = `tools[${i}]`;
    const tool = record(value, at);
    // Anthropic's server tools (web search, code execution...) carry a versioned type.
    if (present(tool.type) && tool.type !== 'custom')
      refuse('unsupported', `${at}.type`, `server tool ${JSON.stringify(tool.type)} cannot be translated`);
    onlyKeys(tool, at, ['type', 'name', 'description', 'input_schema', 'cache_control', 'strict', ...TOOL_HINTS]);
    // `false` is each hint's default: only a hint that asks for something is listed.
    for (const hint of TOOL_HINTS) if (present(tool[hint]) && tool[hint] !== false) dropped.add(`tools.${hint}`);
    const name = text(tool.name, `${at}.name`);
    const inputSchema = record(tool.input_schema, `${at}.input_schema`);
    const base: { -readonly [K in keyof CanonicalTool]: CanonicalTool[K] } = { name, inputSchema };
    if (present(tool.description)) base.description = text(tool.description, `${at}.description`);
    if (tool.strict === true) base.strict = true;
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

function system(raw: unknown, dropped: Dropped): TextPart[] {
  if (typeof raw === 'string') return [{ type: 'text', text: raw }];
  if (!Array.isArray(raw)) refuse('invalid', 'system', 'system must be a string or an array of text blocks');
  return raw.map((value, i) => {
    const block = record(value, `system[${i}]`);
    if (block.type !== 'text') refuse('unsupported', `system[${i}].type`, 'system blocks must be text');
    return textBlock(block, `system[${i}]`, dropped);
  });
}

/** A JSON schema output format (`output_config.format`, or the beta's `output_format`). */
function outputFormat(raw: unknown, path: string): ResponseFormat {
  const format = record(raw, path);
  onlyKeys(format, path, ['type', 'schema']);
  if (format.type !== 'json_schema') return refuse('unsupported', `${path}.type`, `${path}.type must be json_schema`);
  return { type: 'json_schema', name: 'response', schema: record(format.schema, `${path}.schema`), strict: true };
}

const EFFORTS: Readonly<Record<string, Reasoning['effort']>> = { low: 'low', medium: 'medium', high: 'high', xhigh: 'high', max: 'high' };

/** `thinking`: a budget, adaptive thinking, or none (disabled). */
function thinking(raw: unknown, dropped: Dropped): Reasoning | undefined {
  const t = record(raw, 'thinking');
  onlyKeys(t, 'thinking', ['type', 'budget_tokens', 'display']);
  if (present(t.display)) dropped.add('thinking.display');
  switch (t.type) {
    case 'disabled':
      return undefined;
    case 'adaptive':
      return { effort: 'medium', budgetTokens: null };
    case 'enabled': {
      const budget = positiveInteger(t.budget_tokens, 'thinking.budget_tokens');
      return { effort: effortOfBudget(budget), budgetTokens: budget };
    }
  }
  return refuse('unsupported', 'thinking.type', `thinking type ${JSON.stringify(t.type)} cannot be translated`);
}

/** A top-level field the mapped code below does not read: dropped, or refused, as the policy says. */
function unmapped(key: string, dropped: Dropped): void {
  const rule = ruleFor('anthropic', key);
  if (rule?.outcome === 'mapped') return;
  if (rule?.outcome === 'dropped') dropped.add(key);
  else refuse('unsupported', key, `${key} cannot be translated to the target protocol`);
}

/** An Anthropic Messages request body (parsed JSON) in the canonical form. */
export function anthropicRequestToCanonical(body: unknown): Translation<CanonicalRequest> {
  return attempt(() => {
    const b = record(body, '');
    const dropped: Dropped = new Set();
    for (const key of Object.keys(b)) if (present(b[key])) unmapped(key, dropped);
    if (!Array.isArray(b.messages)) return refuse('invalid', 'messages', 'messages must be an array');
    const maxTokens = positiveInteger(b.max_tokens, 'max_tokens');
    const out: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = {
      model: text(b.model, 'model'),
      system: present(b.system) ? system(b.system, dropped) : [],
      messages: b.messages.map((m, i) => message(m, i, dropped)),
      maxOutputTokens: maxTokens,
      stream: b.stream === true,
      dropped: NOTHING_DROPPED,
    };
    if (present(b.temperature)) out.temperature = num(b.temperature, 'temperature');
    if (present(b.top_p)) out.topP = num(b.top_p, 'top_p');
    if (present(b.stop_sequences)) {
      if (!Array.isArray(b.stop_sequences)) return refuse('invalid', 'stop_sequences', 'stop_sequences must be an array');
      out.stopSequences = b.stop_sequences.map((s, i) => text(s, `stop_sequences[${i}]`));
    }
    if (present(b.tools)) out.tools = tools(b.tools, dropped);
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
    if (present(b.thinking)) {
      const reasoning = thinking(b.thinking, dropped);
      if (reasoning !== undefined) out.reasoning = reasoning;
    }
    if (present(b.output_config)) {
      const config = record(b.output_config, 'output_config');
      onlyKeys(config, 'output_config', ['format', 'effort']);
      if (present(config.format)) out.responseFormat = outputFormat(config.format, 'output_config.format');
      if (present(config.effort) && out.reasoning === undefined) {
        const effort = typeof config.effort === 'string' ? EFFORTS[config.effort] : undefined;
        if (effort === undefined || !Object.hasOwn(EFFORTS, config.effort as string)) {
          return refuse('invalid', 'output_config.effort', 'output_config.effort must be low, medium, high, xhigh or max');
        }
        out.reasoning = { effort, budgetTokens: null };
      }
    }
    if (present(b.output_format) && out.responseFormat === undefined) out.responseFormat = outputFormat(b.output_format, 'output_format');
    if (dropped.has('top_k') && typeof b.top_k === 'number') out.sampling = { topK: b.top_k };
    out.dropped = droppedList(dropped);
    return out;
  });
}
