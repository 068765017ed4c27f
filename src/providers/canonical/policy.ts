import { BEDROCK_RULES } from './bedrock-policy.js';
import { GEMINI_RULES } from './gemini-policy.js';
import { RESPONSES_RULES } from './responses-policy.js';
import { type ClientProtocol, type ProviderProtocol, type ReasoningEffort, ruleMaker, type TranslationRule } from './types.js';

// What becomes of each request field when a request crosses from a client's protocol to a
// provider's, in one table: the readers and writers consult it, `docs/providers.md` prints
// it, and a doc test keeps the two equal. A reader reads for every target alike, by the
// rules towards the other client protocol; a Gemini or Bedrock row says what such a provider
// then receives (gemini-policy.ts, bedrock-policy.ts). Three outcomes:
//
// - mapped: the other protocol has an equivalent, and it is used;
// - dropped: a hint with no equivalent that does not change the answer's shape; it is left
//   out (or a value out of the target's range is clamped), and listed in the response's
//   `x-switchyard-dropped` header and the access line's `dropped`;
// - unable: a feature that changes what the client gets back; the candidate cannot take the
//   request and is skipped (a 400 naming the field only when no candidate could).
//
// Fields are named by their path without indices (`tools.eager_input_streaming`), which is
// also how a dropped field is listed. A field the table does not name is unable, so a field
// a protocol adds later is never lost in silence.

export type { TranslationOutcome, TranslationRule } from './types.js';

/** `reasoning_effort` as an Anthropic thinking budget, in tokens. */
export const THINKING_BUDGETS: Readonly<Record<ReasoningEffort, number>> = Object.freeze({
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
});

/** The smallest thinking budget Anthropic accepts. */
export const MIN_THINKING_BUDGET = 1024;

/** An Anthropic thinking budget as the OpenAI effort that spends about as much. */
export function effortOfBudget(budget: number): 'low' | 'medium' | 'high' {
  if (budget <= THINKING_BUDGETS.low) return 'low';
  if (budget <= THINKING_BUDGETS.medium) return 'medium';
  return 'high';
}

const o = ruleMaker('openai', 'anthropic');
const a = ruleMaker('anthropic', 'openai');

const budgets = `minimal ${THINKING_BUDGETS.minimal}, low ${THINKING_BUDGETS.low}, medium ${THINKING_BUDGETS.medium}, high ${THINKING_BUDGETS.high}, xhigh ${THINKING_BUDGETS.xhigh}`;

export const TRANSLATION_POLICY: readonly TranslationRule[] = Object.freeze([
  // OpenAI chat completions -> Anthropic Messages.
  o('model', 'mapped', "`model`: the candidate's upstream model"),
  o('messages', 'mapped', '`messages`; leading `system`/`developer` messages become `system`; `tool` messages become `tool_result` blocks'),
  o(
    'max_tokens',
    'mapped',
    "`max_tokens` (`max_completion_tokens` first); without one, the model's `max_output_tokens`, else `default_max_tokens`",
  ),
  o('max_completion_tokens', 'mapped', '`max_tokens`'),
  o('temperature', 'mapped', '`temperature`; above 1 it is clamped to 1 (Anthropic takes 0 to 1) and listed as dropped'),
  o('top_p', 'mapped', '`top_p`'),
  o('stop', 'mapped', '`stop_sequences`'),
  o('stream', 'mapped', '`stream`'),
  o('stream_options', 'mapped', '`include_usage` gives the client its usage chunk'),
  o('tools', 'mapped', "`tools`: a function's `parameters` become `input_schema`, `strict` stays `strict`"),
  o('tool_choice', 'mapped', '`tool_choice`: `auto`, `none`, `required` as `any`, a function as `tool`'),
  o('parallel_tool_calls', 'mapped', '`tool_choice.disable_parallel_tool_use`'),
  o('user', 'mapped', '`metadata.user_id`'),
  o('safety_identifier', 'mapped', '`metadata.user_id`'),
  o('metadata', 'mapped', 'its `user_id` becomes `metadata.user_id`; any other key is dropped (listed as `metadata`)'),
  o(
    'response_format',
    'mapped',
    '`json_schema` becomes `output_config.format` (`{type: json_schema, schema}`); `text` is the default; `json_object` is unable (no schema to hold the answer to)',
  ),
  o(
    'reasoning_effort',
    'mapped',
    `\`thinking: {type: enabled, budget_tokens}\` with ${budgets}, kept below \`max_tokens\` (dropped when that leaves less than ${MIN_THINKING_BUDGET}, or when a tool is forced); \`none\` asks for nothing. Thinking blocks come back as \`reasoning_content\``,
  ),
  o('messages.content.cache_control', 'mapped', "the block's `cache_control`"),
  o('messages.content.image_url.detail', 'dropped', 'Anthropic sizes images itself; `auto` is not listed'),
  o('messages.reasoning_content', 'dropped', "an earlier turn's reasoning: Anthropic takes back only signed thinking blocks"),
  o('messages.name', 'dropped', 'Anthropic messages carry no participant name'),
  o('seed', 'dropped', 'Anthropic has no seed'),
  o('frequency_penalty', 'dropped', 'no penalties in Anthropic; 0 is not listed'),
  o('presence_penalty', 'dropped', 'no penalties in Anthropic; 0 is not listed'),
  o('logit_bias', 'dropped', 'no token biases in Anthropic; `{}` is not listed'),
  o('store', 'dropped', "OpenAI's stored completions; `false` is not listed"),
  o('prediction', 'dropped', 'a latency hint'),
  o('service_tier', 'dropped', "OpenAI's tiers; `auto` is not listed"),
  o('prompt_cache_key', 'dropped', "OpenAI's cache routing hint"),
  o('prompt_cache_retention', 'dropped', "OpenAI's cache retention hint"),
  o('verbosity', 'dropped', 'a length hint'),
  o('n', 'unable', 'several choices; `1` is the default'),
  o('logprobs', 'unable', 'token log probabilities; `false` is the default'),
  o('top_logprobs', 'unable', 'token log probabilities; `0` is the default'),
  o('modalities', 'unable', 'audio output; `["text"]` is the default'),
  o('audio', 'unable', 'audio output'),
  o('web_search_options', 'unable', "OpenAI's built-in web search"),
  o('functions', 'unable', 'the legacy function calling (use `tools`)'),
  o('function_call', 'unable', 'the legacy function calling (use `tool_choice`)'),
  o('messages.content.type', 'unable', 'audio and file parts'),
  o('tools.type', 'unable', 'tools other than `function`'),

  // Anthropic Messages -> OpenAI chat completions.
  a('model', 'mapped', "`model`: the candidate's upstream model"),
  a('messages', 'mapped', '`messages`; `tool_result` blocks become `tool` messages (`is_error` as a `[tool error] ` prefix)'),
  a('system', 'mapped', 'a leading `system` message'),
  a('max_tokens', 'mapped', '`max_tokens`'),
  a('temperature', 'mapped', "`temperature` (0 to 1 fits OpenAI's 0 to 2)"),
  a('top_p', 'mapped', '`top_p`'),
  a('stop_sequences', 'mapped', '`stop`'),
  a('stream', 'mapped', '`stream`, with `stream_options.include_usage` (the gateway bills from it)'),
  a('tools', 'mapped', '`tools` of type `function`: `input_schema` becomes `parameters`, `strict` stays `strict`'),
  a(
    'tool_choice',
    'mapped',
    '`tool_choice`: `auto`, `none`, `any` as `required`, `tool` as a function; `disable_parallel_tool_use` as `parallel_tool_calls`',
  ),
  a('metadata', 'mapped', '`metadata.user_id` becomes `user`'),
  a(
    'thinking',
    'mapped',
    `\`reasoning_effort\`: a \`budget_tokens\` up to ${THINKING_BUDGETS.low} is \`low\`, up to ${THINKING_BUDGETS.medium} \`medium\`, above that \`high\`; \`adaptive\` is \`medium\`; \`disabled\` asks for nothing. A \`reasoning_content\` in the answer (vLLM, DeepSeek) comes back as a thinking block`,
  ),
  a(
    'output_config',
    'mapped',
    '`format` (`json_schema`) becomes `response_format: {type: json_schema, json_schema: {name: "response", schema, strict: true}}`; `effort` becomes `reasoning_effort` (`xhigh` and `max` as `high`)',
  ),
  a('output_format', 'mapped', "the structured-outputs beta's name for `output_config.format`: the same"),
  a('cache_control', 'dropped', 'on the request, a block, a tool or a system block: OpenAI caches prompt prefixes by itself'),
  a('top_k', 'dropped', 'OpenAI has no top-k sampling'),
  a('service_tier', 'dropped', "Anthropic's tiers"),
  a('inference_geo', 'dropped', "Anthropic's inference region"),
  a('speed', 'dropped', "Anthropic's speed tier"),
  a('thinking.display', 'dropped', 'how Anthropic shows thinking'),
  a('tools.eager_input_streaming', 'dropped', "how Anthropic streams a tool's input; OpenAI streams arguments anyway"),
  a('tools.defer_loading', 'dropped', "Anthropic's tool search hint"),
  a('tools.input_examples', 'dropped', "Anthropic's tool use examples"),
  a('tools.allowed_callers', 'dropped', "Anthropic's code execution callers"),
  a('messages.content.thinking', 'dropped', "an earlier turn's thinking and redacted thinking blocks: OpenAI takes no reasoning back"),
  a('messages.content.citations', 'dropped', 'citations on a text block'),
  a('tools.type', 'unable', "Anthropic's server tools (web search, code execution, ...)"),
  a('messages.content.type', 'unable', 'documents, search results and other blocks OpenAI cannot carry'),
  a('container', 'unable', "Anthropic's code execution container"),
  a('mcp_servers', 'unable', "Anthropic's MCP connector"),
  a('context_management', 'unable', "Anthropic's context editing changes what the model sees"),

  ...GEMINI_RULES,
  ...BEDROCK_RULES,
  ...RESPONSES_RULES,
]);

/**
 * By protocol, then field, towards the other client protocol (a Responses client's: towards
 * OpenAI's chat protocol), which is what a reader consults: read
 * for every top-level field of every translated request, so no key is built per lookup.
 */
const rulesOf = (from: ClientProtocol, to: ProviderProtocol): ReadonlyMap<string, TranslationRule> =>
  new Map(TRANSLATION_POLICY.filter((r) => r.from === from && r.to === to).map((r) => [r.field, r]));
const byField: Readonly<Record<ClientProtocol, ReadonlyMap<string, TranslationRule>>> = {
  openai: rulesOf('openai', 'anthropic'),
  anthropic: rulesOf('anthropic', 'openai'),
  responses: rulesOf('responses', 'openai'),
};

/** The reader's rule for a field of a `from` request; undefined = unnamed, which is unable. */
export function ruleFor(from: ClientProtocol, field: string): TranslationRule | undefined {
  return byField[from].get(field);
}

/** The `dropped` of a request that dropped nothing: one shared value, not an array per request. */
export const NOTHING_DROPPED: readonly string[] = Object.freeze([]);

/** A reader's dropped fields as the canonical request carries them. */
export function droppedList(dropped: ReadonlySet<string>): readonly string[] {
  return dropped.size === 0 ? NOTHING_DROPPED : [...dropped];
}

/** The policy as the Markdown tables `docs/providers.md` prints, one per direction. */
export function translationPolicyMarkdown(): string {
  const table = (from: ClientProtocol, to: ProviderProtocol, title: string): string => {
    const rows = TRANSLATION_POLICY.filter((r) => r.from === from && r.to === to).map(
      (r) => `| \`${r.field}\` | ${r.outcome} | ${r.effect} |`,
    );
    return [`**${title}**`, '', '| field | outcome | what happens |', '|---|---|---|', ...rows].join('\n');
  };
  return [
    table('openai', 'anthropic', "An OpenAI client's request to an Anthropic provider"),
    table('anthropic', 'openai', "An Anthropic client's request to an OpenAI provider"),
    table('openai', 'gemini', "An OpenAI client's request to a Gemini provider"),
    table('anthropic', 'gemini', "An Anthropic client's request to a Gemini provider"),
    table('openai', 'bedrock', "An OpenAI client's request to a Bedrock provider (Converse)"),
    table('anthropic', 'bedrock', "An Anthropic client's request to a Bedrock provider (Converse)"),
    table('responses', 'openai', "An OpenAI Responses API client's request to an OpenAI provider (chat completions)"),
    table('responses', 'anthropic', "An OpenAI Responses API client's request to an Anthropic provider"),
    table('responses', 'gemini', "An OpenAI Responses API client's request to a Gemini provider"),
    table('responses', 'bedrock', "An OpenAI Responses API client's request to a Bedrock provider (Converse)"),
  ].join('\n\n');
}
