import { ruleMaker, type TranslationRule } from './types.js';

// The translation policy's rows for a Bedrock provider, which speaks the Converse API
// (policy.ts holds the table and its rules). A request is read as for any target, so a
// field a reader refuses is unable here too; what differs is what the Bedrock writer does
// with the canonical form: Converse's own fields where it has them, Anthropic's fields in
// `additionalModelRequestFields` for a Claude model only, and the rest dropped or refused.

const o = ruleMaker('openai', 'bedrock');
const a = ruleMaker('anthropic', 'bedrock');

const path = "the candidate's upstream model id, in the path (`/model/{modelId}/converse`)";
const claudeOnly = 'for a Claude model (`anthropic.claude-…`, or an inference profile naming one)';
const thinking = `${claudeOnly}, \`additionalModelRequestFields.thinking: {type: enabled, budget_tokens}\` with the Anthropic provider's budgets and limits (no temperature; \`top_p\` at least 0.95); for other models dropped`;
const structured =
  "`outputConfig.textFormat` (`json_schema`, the schema as JSON text): Converse's own structured output, so the answer comes back as JSON text";
const cache = '`{cachePoint: {type: default}}` after the marked block, system block or tool (its `ttl` when `5m` or `1h`)';

export const BEDROCK_RULES: readonly TranslationRule[] = Object.freeze([
  // OpenAI chat completions -> Bedrock Converse.
  o('model', 'mapped', path),
  o(
    'messages',
    'mapped',
    '`messages` of `user` and `assistant` turns, adjacent turns of one role merged (Converse wants them to alternate); leading `system`/`developer` messages become `system`; `tool_calls` become `toolUse` blocks; `tool` messages become `toolResult` blocks in the user turn after the call (an empty one as `{json: {}}`: Converse refuses empty text); a history with tool calls but no `tools` declares the called tools, as Converse requires',
  ),
  o(
    'max_tokens',
    'mapped',
    "`inferenceConfig.maxTokens` (`max_completion_tokens` first); without one, the pre-check's cap when it set one",
  ),
  o('max_completion_tokens', 'mapped', '`inferenceConfig.maxTokens`'),
  o('temperature', 'mapped', '`inferenceConfig.temperature`; above 1 it is clamped to 1 (Converse takes 0 to 1) and listed as dropped'),
  o('top_p', 'mapped', '`inferenceConfig.topP`'),
  o('stop', 'mapped', '`inferenceConfig.stopSequences`'),
  o('stream', 'mapped', '`/converse-stream` in place of `/converse`; its binary event stream is translated to server-sent events'),
  o('stream_options', 'mapped', "`include_usage` gives the client its usage chunk, from the stream's `metadata` event"),
  o('tools', 'mapped', "`toolConfig.tools[].toolSpec`: a function's `parameters` become `inputSchema.json`, `strict` stays `strict`"),
  o(
    'tool_choice',
    'mapped',
    '`toolConfig.toolChoice`: `auto` as `{auto}`, `required` as `{any}`, a function as `{tool: {name}}`; `none` sends no tools (Converse has no `none`), except with tool calls in the history, which need `toolConfig`: the tools are then sent and `tool_choice` is listed as dropped',
  ),
  o('parallel_tool_calls', 'dropped', 'Converse has no switch for parallel calls; `true` is not listed'),
  o('user', 'dropped', 'Converse requests carry no end-user id'),
  o('safety_identifier', 'dropped', 'Converse requests carry no end-user id (listed as `user`)'),
  o('metadata', 'dropped', 'Converse requests carry no metadata (a `user_id` is listed as `user`)'),
  o(
    'response_format',
    'mapped',
    `\`json_schema\` becomes ${structured}; \`text\` is the default; \`json_object\` is unable (the canonical form holds a schema)`,
  ),
  o('reasoning_effort', 'mapped', `${thinking}; \`none\` asks for nothing. Reasoning blocks come back as \`reasoning_content\``),
  o('seed', 'dropped', 'Converse has no seed'),
  o('frequency_penalty', 'dropped', 'no penalties in Converse; 0 is not listed'),
  o('presence_penalty', 'dropped', 'no penalties in Converse; 0 is not listed'),
  o('messages.content.cache_control', 'mapped', cache),
  o('messages.content.image_url.detail', 'dropped', 'Bedrock sizes images itself; `auto` is not listed'),
  o(
    'messages.content.image_url.url',
    'unable',
    'an image by web URL: Converse takes images inline; a `data:` URL of a png, jpeg, gif or webp is sent as `image.source.bytes`',
  ),
  o('messages.reasoning_content', 'dropped', "an earlier turn's reasoning: Bedrock takes back only signed reasoning blocks"),
  o('messages.name', 'dropped', 'Converse messages carry no participant name'),
  o('logit_bias', 'dropped', 'no token biases in Converse; `{}` is not listed'),
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

  // Anthropic Messages -> Bedrock Converse.
  a('model', 'mapped', path),
  a(
    'messages',
    'mapped',
    '`messages`, adjacent turns of one role merged; `tool_use` blocks become `toolUse` blocks; `tool_result` blocks become `toolResult` blocks (text and images), `is_error` as `status: error`; base64 images become `image` blocks; a history with tool calls but no `tools` declares the called tools, as Converse requires',
  ),
  a('system', 'mapped', '`system` text blocks'),
  a('max_tokens', 'mapped', '`inferenceConfig.maxTokens`'),
  a('temperature', 'mapped', '`inferenceConfig.temperature`'),
  a('top_p', 'mapped', '`inferenceConfig.topP`'),
  a('top_k', 'mapped', `${claudeOnly}, \`additionalModelRequestFields.top_k\`; for other models dropped`),
  a('stop_sequences', 'mapped', '`inferenceConfig.stopSequences`'),
  a('stream', 'mapped', '`/converse-stream` in place of `/converse`; its binary event stream is translated to server-sent events'),
  a('tools', 'mapped', '`toolConfig.tools[].toolSpec`: `input_schema` becomes `inputSchema.json`, `strict` stays `strict`'),
  a(
    'tool_choice',
    'mapped',
    '`toolConfig.toolChoice`: `auto`, `any`, `tool` as `{tool: {name}}`; `none` sends no tools (with tool calls in the history, the tools without a choice, and `tool_choice` listed as dropped); `disable_parallel_tool_use: true` is dropped (listed as `tool_choice.disable_parallel_tool_use`)',
  ),
  a('metadata', 'dropped', 'Converse requests carry no end-user id'),
  a(
    'thinking',
    'mapped',
    `${thinking}; \`disabled\` asks for nothing. Reasoning blocks come back as thinking blocks, with their signature`,
  ),
  a('output_config', 'mapped', `\`format\` (\`json_schema\`) becomes ${structured}; \`effort\` becomes a thinking budget`),
  a('output_format', 'mapped', "the structured-outputs beta's name for `output_config.format`: the same"),
  a('cache_control', 'mapped', `on a block, a tool or a system block: ${cache}; on the request, dropped`),
  a('service_tier', 'dropped', "Anthropic's tiers"),
  a('inference_geo', 'dropped', "Anthropic's inference region"),
  a('speed', 'dropped', "Anthropic's speed tier"),
  a('thinking.display', 'dropped', 'how Anthropic shows thinking'),
  a('tools.eager_input_streaming', 'dropped', "how Anthropic streams a tool's input; Converse streams it anyway"),
  a('tools.defer_loading', 'dropped', "Anthropic's tool search hint"),
  a('tools.input_examples', 'dropped', "Anthropic's tool use examples"),
  a('tools.allowed_callers', 'dropped', "Anthropic's code execution callers"),
  a('messages.content.thinking', 'dropped', "an earlier turn's thinking and redacted thinking blocks are not sent back"),
  a('messages.content.citations', 'dropped', 'citations on a text block'),
  a('messages.content.source.url', 'unable', 'an image by URL: Converse takes images inline (`base64`, sent as `image.source.bytes`)'),
  a('tools.type', 'unable', "Anthropic's server tools (web search, code execution, ...)"),
  a('messages.content.type', 'unable', 'documents, search results and other blocks Converse is not sent'),
  a('container', 'unable', "Anthropic's code execution container"),
  a('mcp_servers', 'unable', "Anthropic's MCP connector"),
  a('context_management', 'unable', "Anthropic's context editing changes what the model sees"),
]);
