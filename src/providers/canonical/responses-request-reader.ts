import { droppedList, NOTHING_DROPPED, ruleFor } from './policy.js';
import { type Dropped, readItems } from './responses-input.js';
import type { CanonicalRequest, CanonicalTool, ReasoningEffort, ResponseFormat, ToolChoice, Translation } from './types.js';
import { attempt, isRecord, refuse } from './types.js';
import { num, onlyKeys, positiveInteger, present, record, text } from './wire-fields.js';

// OpenAI Responses API requests -> the canonical form, so a Responses client can be served
// by any provider protocol. The input is not read from the body: the caller hands over the
// whole conversation as items (its stored history first), since only the gateway knows it.
// Every other field's fate is the policy table's `responses` rows, as for the chat readers.

/** Values that ask for nothing (each field's default): such a field is neither dropped nor refused. */
const NEUTRAL: Readonly<Record<string, (v: unknown) => boolean>> = {
  background: (v) => v === false,
  top_logprobs: (v) => v === 0,
};

const EFFORTS: readonly ReasoningEffort[] = ['minimal', 'low', 'medium', 'high', 'xhigh'];

/** A top-level field the mapped code below does not read: dropped, or refused, as the policy says. */
function unmapped(key: string, value: unknown, dropped: Dropped): void {
  const rule = ruleFor('responses', key);
  if (rule?.outcome === 'mapped') return;
  if (NEUTRAL[key]?.(value) === true) return;
  if (rule?.outcome === 'dropped') dropped.add(key);
  else refuse('unsupported', key, `${key} cannot be translated to the target protocol`);
}

function tools(raw: unknown): CanonicalTool[] {
  if (!Array.isArray(raw)) return refuse('invalid', 'tools', 'tools must be an array');
  return raw.map((tool, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(tool)) return refuse('invalid', at, `${at} must be an object`);
    if (tool.type !== 'function')
      return refuse('unsupported', `${at}.type`, `tools of type ${JSON.stringify(tool.type)} are not supported`);
    onlyKeys(tool, at, ['type', 'name', 'description', 'parameters', 'strict']);
    const out: { -readonly [K in keyof CanonicalTool]: CanonicalTool[K] } = {
      name: text(tool.name, `${at}.name`),
      inputSchema: isRecord(tool.parameters) ? tool.parameters : { type: 'object', properties: {} },
    };
    if (present(tool.description)) out.description = text(tool.description, `${at}.description`);
    if (tool.strict === true) out.strict = true;
    return out;
  });
}

function toolChoice(raw: unknown): ToolChoice {
  if (raw === 'auto' || raw === 'none') return { type: raw };
  if (raw === 'required') return { type: 'any' };
  if (isRecord(raw) && raw.type === 'function') return { type: 'tool', name: text(raw.name, 'tool_choice.name') };
  return refuse('unsupported', 'tool_choice', 'tool_choice must be auto, none, required or a function');
}

/** `text.format`: a JSON schema is structured output; `text` asks for nothing; `json_object` has no schema to translate. */
function textFormat(raw: unknown, dropped: Dropped): ResponseFormat | undefined {
  const options = record(raw, 'text');
  onlyKeys(options, 'text', ['format', 'verbosity']);
  if (present(options.verbosity)) dropped.add('text.verbosity');
  if (!present(options.format)) return undefined;
  const format = record(options.format, 'text.format');
  if (format.type === 'text') return undefined;
  if (format.type !== 'json_schema') {
    return refuse(
      'unsupported',
      'text.format.type',
      `text.format ${JSON.stringify(format.type)} has no counterpart in the target protocol`,
    );
  }
  onlyKeys(format, 'text.format', ['type', 'name', 'description', 'schema', 'strict']);
  const out: { -readonly [K in keyof ResponseFormat]: ResponseFormat[K] } = {
    type: 'json_schema',
    name: text(format.name, 'text.format.name'),
    schema: present(format.schema) ? record(format.schema, 'text.format.schema') : { type: 'object' },
  };
  if (present(format.description)) out.description = text(format.description, 'text.format.description');
  if (format.strict === true) out.strict = true;
  return out;
}

function reasoningEffort(raw: unknown): ReasoningEffort | null {
  const reasoning = record(raw, 'reasoning');
  // The summary's level is OpenAI's: any reasoning that comes back is given whole as the summary.
  onlyKeys(reasoning, 'reasoning', ['effort', 'summary', 'generate_summary']);
  const effort = reasoning.effort;
  if (!present(effort) || effort === 'none') return null;
  if (!EFFORTS.includes(effort as ReasoningEffort)) {
    return refuse('invalid', 'reasoning.effort', `reasoning.effort must be one of none, ${EFFORTS.join(', ')}`);
  }
  return effort as ReasoningEffort;
}

function include(raw: unknown, dropped: Dropped): void {
  if (!Array.isArray(raw)) return refuse('invalid', 'include', 'include must be an array');
  raw.forEach((value, i) => {
    // Other values name what OpenAI's own tools produce, or encrypted reasoning: nothing comes back to include.
    if (text(value, `include[${i}]`) === 'message.output_text.logprobs') dropped.add('include.message.output_text.logprobs');
  });
}

/**
 * A Responses API request (`parsed`, the client's body) with its whole input (`items`: the
 * history and this turn's input, a string input as a user message, references resolved) in
 * the canonical form. `parsed.input` is not read.
 */
export function responsesRequestToCanonical(
  parsed: Record<string, unknown>,
  items: readonly Record<string, unknown>[],
): Translation<CanonicalRequest> {
  return attempt(() => {
    const dropped: Dropped = new Set();
    if (parsed.background === true) refuse('unsupported', 'background', 'a response run in the background cannot be translated');
    if (present(parsed.prompt)) refuse('unsupported', 'prompt', "OpenAI's stored prompts cannot be sent to another provider");
    for (const key of Object.keys(parsed)) if (present(parsed[key])) unmapped(key, parsed[key], dropped);
    const read = readItems(items, dropped);
    const system = present(parsed.instructions) ? [{ type: 'text' as const, text: text(parsed.instructions, 'instructions') }] : [];
    system.push(...read.system);
    const out: { -readonly [K in keyof CanonicalRequest]: CanonicalRequest[K] } = {
      model: text(parsed.model, 'model'),
      system,
      messages: read.messages,
      stream: parsed.stream === true,
      dropped: NOTHING_DROPPED,
    };
    if (present(parsed.max_output_tokens)) out.maxOutputTokens = positiveInteger(parsed.max_output_tokens, 'max_output_tokens');
    if (present(parsed.temperature)) out.temperature = num(parsed.temperature, 'temperature');
    if (present(parsed.top_p)) out.topP = num(parsed.top_p, 'top_p');
    if (present(parsed.tools)) out.tools = tools(parsed.tools);
    if (present(parsed.tool_choice)) out.toolChoice = toolChoice(parsed.tool_choice);
    if (present(parsed.parallel_tool_calls)) out.parallelToolCalls = parsed.parallel_tool_calls === true;
    // `safety_identifier` is OpenAI's newer name for the end-user id that `user` carried.
    const user = present(parsed.safety_identifier) ? 'safety_identifier' : present(parsed.user) ? 'user' : null;
    if (user !== null) out.user = text(parsed[user], user);
    if (user === 'safety_identifier' && present(parsed.user) && parsed.user !== parsed.safety_identifier) {
      refuse('unsupported', 'user', 'user and safety_identifier name different end users; the target protocol has one');
    }
    if (present(parsed.text)) {
      const format = textFormat(parsed.text, dropped);
      if (format !== undefined) out.responseFormat = format;
    }
    if (present(parsed.reasoning)) {
      const effort = reasoningEffort(parsed.reasoning);
      if (effort !== null) out.reasoning = { effort, budgetTokens: null };
    }
    if (present(parsed.include)) include(parsed.include, dropped);
    out.dropped = droppedList(dropped);
    return out;
  });
}
