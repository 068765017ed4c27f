import { droppedList, NOTHING_DROPPED, ruleFor } from './policy.js';
import type {
  CanonicalMessage,
  CanonicalRequest,
  CanonicalTool,
  ContentPart,
  ImagePart,
  ReasoningEffort,
  ResponseFormat,
  Sampling,
  TextPart,
  ToolChoice,
  Translation,
} from './types.js';
import { attempt, isRecord, parseToolArguments, refuse } from './types.js';
import { cached, num, onlyKeys, positiveInteger, present, record, text } from './wire-fields.js';

// OpenAI chat completion requests -> the canonical form. Every field's fate is the table
// in policy.ts: a mapped field is read here, a dropped one is named in the canonical
// request's `dropped`, and an unable one (or one the table does not name) is refused, so
// nothing a client asked for is lost in silence.

/** How a tool_result with `is_error` reads in OpenAI, which has no such flag (ADR-0011). */
export const TOOL_ERROR_PREFIX = '[tool error] ';

/** Values that ask for nothing (each field's default): such a field is neither dropped nor refused. */
const NEUTRAL: Readonly<Record<string, (v: unknown) => boolean>> = {
  n: (v) => v === 1,
  logprobs: (v) => v === false,
  top_logprobs: (v) => v === 0,
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  logit_bias: (v) => isRecord(v) && Object.keys(v).length === 0,
  store: (v) => v === false,
  service_tier: (v) => v === 'auto',
  modalities: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
};

const EFFORTS: readonly ReasoningEffort[] = ['minimal', 'low', 'medium', 'high', 'xhigh'];

/** Fields dropped while reading, named as the policy names them, each once. */
type Dropped = Set<string>;

const DATA_URL = /^data:([^;,]+);base64,/;

function imagePart(part: Record<string, unknown>, path: string, dropped: Dropped): ImagePart {
  const image = part.image_url;
  if (!isRecord(image)) refuse('invalid', `${path}.image_url`, `${path}.image_url must be an object`);
  onlyKeys(image, `${path}.image_url`, ['url', 'detail']);
  // A resolution hint Anthropic has no counterpart for; `auto` is OpenAI's default, so it means nothing.
  if (present(image.detail) && image.detail !== 'auto') dropped.add('messages.content.image_url.detail');
  const url = text(image.url, `${path}.image_url.url`);
  const data = DATA_URL.exec(url);
  const source: ImagePart['source'] =
    data === null ? { kind: 'url', url } : { kind: 'base64', mediaType: data[1] as string, data: url.slice(data[0].length) };
  return cached({ type: 'image', source }, part, path);
}

function contentParts(content: unknown, path: string, allowImages: boolean, dropped: Dropped): (TextPart | ImagePart)[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) refuse('invalid', path, `${path} must be a string or an array of content parts`);
  return content.map((part, i): TextPart | ImagePart => {
    const at = `${path}[${i}]`;
    if (!isRecord(part)) refuse('invalid', at, `${at} must be an object`);
    if (part.type === 'text') {
      onlyKeys(part, at, ['type', 'text', 'cache_control']);
      return cached({ type: 'text', text: text(part.text, `${at}.text`) }, part, at);
    }
    if (part.type === 'image_url' && allowImages) {
      onlyKeys(part, at, ['type', 'image_url', 'cache_control']);
      return imagePart(part, at, dropped);
    }
    return refuse('unsupported', `${at}.type`, `content part type ${JSON.stringify(part.type)} is not supported here`);
  });
}

function toolCalls(calls: unknown, path: string): ContentPart[] {
  if (!Array.isArray(calls)) refuse('invalid', path, `${path} must be an array`);
  return calls.map((call, j) => {
    const at = `${path}[${j}]`;
    if (!isRecord(call) || call.type !== 'function' || !isRecord(call.function)) {
      return refuse('unsupported', at, `${at} must be a function tool call`);
    }
    const input = parseToolArguments(text(call.function.arguments, `${at}.function.arguments`), `${at}.function.arguments`);
    return { type: 'tool_call', id: text(call.id, `${at}.id`), name: text(call.function.name, `${at}.function.name`), input };
  });
}

function message(raw: unknown, i: number, dropped: Dropped): CanonicalMessage | TextPart[] {
  const path = `messages[${i}]`;
  if (!isRecord(raw)) refuse('invalid', path, `${path} must be an object`);
  const role = raw.role;
  if (present(raw.name)) dropped.add('messages.name');
  if (role === 'system' || role === 'developer') {
    onlyKeys(raw, path, ['role', 'content', 'name']);
    return contentParts(raw.content, `${path}.content`, false, dropped) as TextPart[];
  }
  if (role === 'user') {
    onlyKeys(raw, path, ['role', 'content', 'name']);
    return { role: 'user', content: contentParts(raw.content, `${path}.content`, true, dropped) };
  }
  if (role === 'assistant') {
    onlyKeys(raw, path, ['role', 'content', 'tool_calls', 'refusal', 'name', 'reasoning_content']);
    if (present(raw.reasoning_content)) dropped.add('messages.reasoning_content');
    const content: ContentPart[] = [];
    if (present(raw.content)) {
      // An assistant turn that only calls tools often carries `content: ""`; Anthropic refuses empty text blocks.
      for (const part of contentParts(raw.content, `${path}.content`, false, dropped))
        if (part.type !== 'text' || part.text !== '') content.push(part);
    }
    if (present(raw.refusal)) content.push({ type: 'text', text: text(raw.refusal, `${path}.refusal`) });
    if (present(raw.tool_calls)) content.push(...toolCalls(raw.tool_calls, `${path}.tool_calls`));
    return { role: 'assistant', content };
  }
  if (role === 'tool') {
    onlyKeys(raw, path, ['role', 'content', 'tool_call_id']);
    const parts = contentParts(raw.content, `${path}.content`, false, dropped) as TextPart[];
    const first = parts[0];
    const isError = first?.text.startsWith(TOOL_ERROR_PREFIX) === true;
    const content =
      isError && first !== undefined
        ? [{ type: 'text' as const, text: first.text.slice(TOOL_ERROR_PREFIX.length) }, ...parts.slice(1)]
        : parts;
    const toolCallId = text(raw.tool_call_id, `${path}.tool_call_id`);
    return { role: 'user', content: [{ type: 'tool_result', toolCallId, content, isError }] };
  }
  return refuse('unsupported', `${path}.role`, `message role ${JSON.stringify(role)} is not supported`);
}

function tools(raw: unknown): CanonicalTool[] {
  if (!Array.isArray(raw)) refuse('invalid', 'tools', 'tools must be an array');
  return raw.map((tool, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(tool.function)) {
      return refuse('unsupported', `${at}.type`, 'only function tools are supported');
    }
    const fn = tool.function;
    onlyKeys(fn, `${at}.function`, ['name', 'description', 'parameters', 'strict']);
    const inputSchema = isRecord(fn.parameters) ? fn.parameters : { type: 'object', properties: {} };
    const name = text(fn.name, `${at}.function.name`);
    const out: { -readonly [K in keyof CanonicalTool]: CanonicalTool[K] } = { name, inputSchema };
    if (present(fn.description)) out.description = text(fn.description, `${at}.function.description`);
    if (fn.strict === true) out.strict = true;
    return out;
  });
}

function toolChoice(raw: unknown): ToolChoice {
  if (raw === 'auto' || raw === 'none') return { type: raw };
  if (raw === 'required') return { type: 'any' };
  if (isRecord(raw) && raw.type === 'function' && isRecord(raw.function)) {
    return { type: 'tool', name: text(raw.function.name, 'tool_choice.function.name') };
  }
  return refuse('unsupported', 'tool_choice', 'tool_choice must be auto, none, required or a function');
}

/** `response_format`: a JSON schema is structured output; `text` asks for nothing; `json_object` has no schema to translate. */
function responseFormat(raw: unknown): ResponseFormat | undefined {
  const rf = record(raw, 'response_format');
  if (rf.type === 'text') return undefined;
  if (rf.type !== 'json_schema') {
    return refuse(
      'unsupported',
      'response_format.type',
      `response_format ${JSON.stringify(rf.type)} has no counterpart in the target protocol`,
    );
  }
  onlyKeys(rf, 'response_format', ['type', 'json_schema']);
  const js = record(rf.json_schema, 'response_format.json_schema');
  onlyKeys(js, 'response_format.json_schema', ['name', 'description', 'schema', 'strict']);
  const format: { -readonly [K in keyof ResponseFormat]: ResponseFormat[K] } = {
    type: 'json_schema',
    name: text(js.name, 'response_format.json_schema.name'),
    schema: present(js.schema) ? record(js.schema, 'response_format.json_schema.schema') : { type: 'object' },
  };
  if (present(js.description)) format.description = text(js.description, 'response_format.json_schema.description');
  if (js.strict === true) format.strict = true;
  return format;
}

/** A top-level field the mapped code below does not read: dropped, or refused, as the policy says. */
function unmapped(key: string, value: unknown, dropped: Dropped): void {
  const rule = ruleFor('openai', key);
  if (rule?.outcome === 'mapped') return;
  if (NEUTRAL[key]?.(value) === true) return;
  if (rule?.outcome === 'dropped') dropped.add(key);
  else refuse('unsupported', key, `${key} cannot be translated to the target protocol`);
}

/** An OpenAI chat completion request body (parsed JSON) in the canonical form. */
export function openaiRequestToCanonical(body: unknown): Translation<CanonicalRequest> {
  return attempt(() => {
    if (!isRecord(body)) return refuse('invalid', '', 'the request body must be a JSON object');
    const dropped: Dropped = new Set();
    for (const key of Object.keys(body)) if (present(body[key])) unmapped(key, body[key], dropped);
    const model = text(body.model, 'model');
    if (!Array.isArray(body.messages)) return refuse('invalid', 'messages', 'messages must be an array');
    const system: TextPart[] = [];
    const messages: CanonicalMessage[] = [];
    body.messages.forEach((raw, i) => {
      const read = message(raw, i, dropped);
      if (!Array.isArray(read)) messages.push(read);
      // Anthropic has one system prompt, before the conversation: a later system message has no place there.
      else if (messages.length === 0) system.push(...read);
      else refuse('unsupported', `messages[${i}].role`, 'a system message after the conversation has started cannot be translated');
    });
    const out: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = {
      model,
      system,
      messages,
      stream: body.stream === true,
      dropped: NOTHING_DROPPED,
    };
    const max = present(body.max_completion_tokens) ? 'max_completion_tokens' : present(body.max_tokens) ? 'max_tokens' : null;
    if (max !== null) out.maxOutputTokens = positiveInteger(body[max], max);
    if (present(body.temperature)) out.temperature = num(body.temperature, 'temperature');
    if (present(body.top_p)) out.topP = num(body.top_p, 'top_p');
    if (present(body.stop)) {
      const stop = body.stop;
      out.stopSequences =
        typeof stop === 'string'
          ? [stop]
          : Array.isArray(stop)
            ? stop.map((s, i) => text(s, `stop[${i}]`))
            : refuse('invalid', 'stop', 'stop must be a string or an array');
    }
    if (present(body.stream_options)) {
      const options = body.stream_options;
      if (!isRecord(options)) return refuse('invalid', 'stream_options', 'stream_options must be an object');
      onlyKeys(options, 'stream_options', ['include_usage']);
      if (options.include_usage === true) out.streamUsage = true;
    }
    if (present(body.tools)) out.tools = tools(body.tools);
    if (present(body.tool_choice)) out.toolChoice = toolChoice(body.tool_choice);
    if (present(body.parallel_tool_calls)) out.parallelToolCalls = body.parallel_tool_calls === true;
    // `safety_identifier` is OpenAI's newer name for the end-user id that `user` carried.
    const user = present(body.safety_identifier) ? 'safety_identifier' : present(body.user) ? 'user' : null;
    if (user !== null) out.user = text(body[user], user);
    if (user === 'safety_identifier' && present(body.user) && body.user !== body.safety_identifier) {
      refuse('unsupported', 'user', 'user and safety_identifier name different end users; the target protocol has one');
    }
    if (present(body.metadata)) {
      const metadata = record(body.metadata, 'metadata');
      for (const key of Object.keys(metadata)) {
        if (key !== 'user_id') dropped.add('metadata');
        else if (out.user === undefined) out.user = text(metadata.user_id, 'metadata.user_id');
      }
    }
    if (present(body.response_format)) {
      const format = responseFormat(body.response_format);
      if (format !== undefined) out.responseFormat = format;
    }
    if (present(body.reasoning_effort) && body.reasoning_effort !== 'none') {
      const effort = body.reasoning_effort;
      if (!EFFORTS.includes(effort as ReasoningEffort)) {
        return refuse('invalid', 'reasoning_effort', `reasoning_effort must be one of none, ${EFFORTS.join(', ')}`);
      }
      out.reasoning = { effort: effort as ReasoningEffort, budgetTokens: null };
    }
    const sampling = samplingOf(body, dropped);
    if (sampling !== undefined) out.sampling = sampling;
    out.dropped = droppedList(dropped);
    return out;
  });
}

/** The seed and penalties, when the request asked for them (they are in `dropped`) with numbers. */
function samplingOf(body: Record<string, unknown>, dropped: Dropped): Sampling | undefined {
  const sampling: { -readonly [K in keyof Sampling]: Sampling[K] } = {};
  if (dropped.has('seed') && typeof body.seed === 'number') sampling.seed = body.seed;
  if (dropped.has('frequency_penalty') && typeof body.frequency_penalty === 'number') sampling.frequencyPenalty = body.frequency_penalty;
  if (dropped.has('presence_penalty') && typeof body.presence_penalty === 'number') sampling.presencePenalty = body.presence_penalty;
  return Object.keys(sampling).length === 0 ? undefined : sampling;
}
