import { TOOL_ERROR_PREFIX } from './openai-request-reader.js';
import type {
  CanonicalRequest,
  ContentPart,
  FilePart,
  ImagePart,
  TextPart,
  ToolChoice,
  ToolResultPart,
  Translation,
  WrittenRequest,
} from './types.js';
import { attempt, refuse } from './types.js';

/** Which OpenAI field carries the output limit: `max_tokens` is understood by every OpenAI-compatible server. */
export interface OpenaiRequestOptions {
  readonly maxTokensField?: 'max_tokens' | 'max_completion_tokens';
}

type OpenaiPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }
  | { type: 'file'; file: { file_data: string; filename?: string } };

function openaiPart(part: TextPart | ImagePart | FilePart): OpenaiPart {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.type === 'file') {
    // Chat completions take a file inline or by an OpenAI file id, never by URL.
    if (part.source.kind === 'url') return refuse('unsupported', 'file', 'OpenAI chat completions take files inline, not by URL');
    const file: { file_data: string; filename?: string } = { file_data: `data:${part.source.mediaType};base64,${part.source.data}` };
    if (part.filename !== undefined) file.filename = part.filename;
    return { type: 'file', file };
  }
  const source = part.source;
  const url = source.kind === 'url' ? source.url : `data:${source.mediaType};base64,${source.data}`;
  return { type: 'image_url', image_url: { url } };
}

/** A single text part is sent as a plain string, the form every OpenAI-compatible server takes. */
function openaiContent(parts: readonly (TextPart | ImagePart | FilePart)[]): string | OpenaiPart[] {
  const only = parts[0];
  if (parts.length === 1 && only?.type === 'text') return only.text;
  return parts.map(openaiPart);
}

function toolMessage(part: ToolResultPart, path: string): Record<string, unknown> {
  const texts: TextPart[] = [];
  part.content.forEach((c, k) => {
    if (c.type !== 'text') refuse('unsupported', `${path}.content[${k}]`, 'an OpenAI tool message cannot carry an image');
    texts.push(c);
  });
  // OpenAI has no error flag on a tool message: the text says so instead (ADR-0011).
  if (part.isError) {
    const first = texts[0];
    texts[0] = { type: 'text', text: `${TOOL_ERROR_PREFIX}${first?.text ?? ''}` };
  }
  return { role: 'tool', tool_call_id: part.toolCallId, content: texts.length === 1 ? (texts[0] as TextPart).text : texts.map(openaiPart) };
}

function toolChoice(choice: ToolChoice): unknown {
  switch (choice.type) {
    case 'auto':
    case 'none':
      return choice.type;
    case 'any':
      return 'required';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
  }
}

function messages(req: CanonicalRequest): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (req.system.length > 0) out.push({ role: 'system', content: openaiContent(req.system) });
  req.messages.forEach((message, i) => {
    const path = `messages[${i}]`;
    if (message.role === 'assistant') {
      const texts: TextPart[] = [];
      const calls: unknown[] = [];
      message.content.forEach((part: ContentPart, j) => {
        if (part.type === 'text') texts.push(part);
        else if (part.type === 'tool_call') {
          calls.push({ id: part.id, type: 'function', function: { name: part.name, arguments: JSON.stringify(part.input) } });
        } else refuse('unsupported', `${path}.content[${j}]`, `an OpenAI assistant message cannot carry ${part.type}`);
      });
      const assistant: Record<string, unknown> = { role: 'assistant', content: texts.length === 0 ? null : openaiContent(texts) };
      if (calls.length > 0) assistant.tool_calls = calls;
      out.push(assistant);
      return;
    }
    // Tool results become `tool` messages, which must directly follow the assistant turn
    // that called the tools; the rest of the user turn follows them.
    const rest: (TextPart | ImagePart | FilePart)[] = [];
    message.content.forEach((part, j) => {
      if (part.type === 'tool_result') out.push(toolMessage(part, `${path}.content[${j}]`));
      else if (part.type === 'tool_call') refuse('unsupported', `${path}.content[${j}]`, 'a user message cannot carry a tool call');
      else rest.push(part);
    });
    if (rest.length > 0 || message.content.length === 0) out.push({ role: 'user', content: openaiContent(rest) });
  });
  return out;
}

/** Whether any part of the request carries Anthropic's cache marker, which OpenAI has no field for. */
function hasCacheControl(req: CanonicalRequest): boolean {
  if (req.system.some((p) => p.cacheControl !== undefined)) return true;
  if (req.tools?.some((t) => t.cacheControl !== undefined) === true) return true;
  return req.messages.some((m) =>
    m.content.some(
      (p) => p.cacheControl !== undefined || (p.type === 'tool_result' && p.content.some((c) => c.cacheControl !== undefined)),
    ),
  );
}

/**
 * The canonical request as an OpenAI chat completion body, and what had to be dropped.
 * Anthropic's cache_control markers are not sent: OpenAI caches prompt prefixes by itself
 * and has no such field. A stream always asks for usage, which the gateway needs to bill it.
 */
export function canonicalToOpenaiRequest(req: CanonicalRequest, options: OpenaiRequestOptions = {}): Translation<WrittenRequest> {
  return attempt(() => {
    const dropped: string[] = [];
    const body: Record<string, unknown> = { model: req.model, messages: messages(req) };
    if (req.maxOutputTokens !== undefined) body[options.maxTokensField ?? 'max_tokens'] = req.maxOutputTokens;
    if (req.temperature !== undefined) body.temperature = req.temperature;
    if (req.topP !== undefined) body.top_p = req.topP;
    if (req.stopSequences !== undefined) body.stop = [...req.stopSequences];
    if (req.tools !== undefined) {
      body.tools = req.tools.map((t) => {
        const fn: Record<string, unknown> = { name: t.name };
        if (t.description !== undefined) fn.description = t.description;
        fn.parameters = t.inputSchema;
        if (t.strict === true) fn.strict = true;
        return { type: 'function', function: fn };
      });
    }
    if (req.toolChoice !== undefined) body.tool_choice = toolChoice(req.toolChoice);
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
    if (req.user !== undefined) body.user = req.user;
    const format = req.responseFormat;
    if (format !== undefined) {
      const schema: Record<string, unknown> = { name: format.name, schema: format.schema };
      if (format.description !== undefined) schema.description = format.description;
      if (format.strict === true) schema.strict = true;
      body.response_format = { type: 'json_schema', json_schema: schema };
    }
    if (req.reasoning !== undefined) body.reasoning_effort = req.reasoning.effort;
    if (hasCacheControl(req)) dropped.push('cache_control');
    if (req.stream) {
      body.stream = true;
      body.stream_options = { include_usage: true };
    }
    return { body, dropped };
  });
}
