import { ruleMaker, type TranslationRule } from './types.js';

// The translation policy's rows for a Gemini provider (policy.ts holds the table and its
// rules). A request is read as for any target, so a field a reader refuses is unable here
// too; what differs is what the Gemini writer does with the canonical form: it sends the
// sampling settings the readers carry (seed, penalties, top-k), and drops or refuses what
// Gemini has no place for.

const o = ruleMaker('openai', 'gemini');
const a = ruleMaker('anthropic', 'gemini');

const thoughts = '`generationConfig.thinkingConfig: {thinkingBudget, includeThoughts: true}`';

export const GEMINI_RULES: readonly TranslationRule[] = Object.freeze([
  // OpenAI chat completions -> Gemini generateContent.
  o('model', 'mapped', "the candidate's upstream model, in the path (`/v1beta/models/{model}:generateContent`)"),
  o(
    'messages',
    'mapped',
    '`contents`, assistant turns as role `model`; leading `system`/`developer` messages become `systemInstruction`; `tool_calls` become `functionCall` parts; `tool` messages become `functionResponse` parts, named after the call they answer',
  ),
  o(
    'max_tokens',
    'mapped',
    "`generationConfig.maxOutputTokens` (`max_completion_tokens` first); without one, the pre-check's cap when it set one",
  ),
  o('max_completion_tokens', 'mapped', '`generationConfig.maxOutputTokens`'),
  o('temperature', 'mapped', '`generationConfig.temperature` (Gemini takes 0 to 2, as OpenAI does)'),
  o('top_p', 'mapped', '`generationConfig.topP`'),
  o('stop', 'mapped', '`generationConfig.stopSequences`'),
  o('stream', 'mapped', '`streamGenerateContent?alt=sse` in place of `generateContent`'),
  o('stream_options', 'mapped', "`include_usage` gives the client its usage chunk, from the last chunk's `usageMetadata`"),
  o(
    'tools',
    'mapped',
    "`tools[0].functionDeclarations`: a function's `parameters` become `parametersJsonSchema`; `strict` is not sent (Gemini has none)",
  ),
  o(
    'tool_choice',
    'mapped',
    '`toolConfig.functionCallingConfig.mode`: `auto` as `AUTO`, `none` as `NONE`, `required` as `ANY`, a function as `ANY` with `allowedFunctionNames`',
  ),
  o('parallel_tool_calls', 'dropped', 'Gemini has no switch for parallel calls; `true` is not listed'),
  o('user', 'dropped', 'Gemini requests carry no end-user id'),
  o('safety_identifier', 'dropped', 'Gemini requests carry no end-user id (listed as `user`)'),
  o('metadata', 'dropped', 'Gemini requests carry no metadata (a `user_id` is listed as `user`)'),
  o(
    'response_format',
    'mapped',
    '`json_schema` becomes `generationConfig.responseMimeType: application/json` with `responseJsonSchema`; `text` is the default; `json_object` is unable (the canonical form holds a schema)',
  ),
  o(
    'reasoning_effort',
    'mapped',
    `${thoughts}, with the budgets used for Anthropic; \`none\` asks for nothing. Thought parts come back as \`reasoning_content\``,
  ),
  o('seed', 'mapped', '`generationConfig.seed`; one that is not a 32-bit integer is dropped'),
  o('frequency_penalty', 'mapped', '`generationConfig.frequencyPenalty`'),
  o('presence_penalty', 'mapped', '`generationConfig.presencePenalty`'),
  o('messages.content.cache_control', 'dropped', 'Gemini caches repeated prompt prefixes by itself'),
  o('messages.content.image_url.detail', 'dropped', 'Gemini sizes images itself; `auto` is not listed'),
  o('messages.content.image_url.url', 'unable', 'an image by web URL: Gemini takes images inline; a `data:` URL is sent as `inlineData`'),
  o('messages.reasoning_content', 'dropped', "an earlier turn's reasoning is not sent back"),
  o('messages.name', 'dropped', 'Gemini contents carry no participant name'),
  o('logit_bias', 'dropped', 'no token biases in Gemini; `{}` is not listed'),
  o('store', 'dropped', "OpenAI's stored completions; `false` is not listed"),
  o('prediction', 'dropped', 'a latency hint'),
  o('service_tier', 'dropped', "OpenAI's tiers; `auto` is not listed"),
  o('prompt_cache_key', 'dropped', "OpenAI's cache routing hint"),
  o('prompt_cache_retention', 'dropped', "OpenAI's cache retention hint"),
  o('verbosity', 'dropped', 'a length hint'),
  o('n', 'unable', "several choices (Gemini's `candidateCount` is not translated back); `1` is the default"),
  o('logprobs', 'unable', 'token log probabilities are not translated back; `false` is the default'),
  o('top_logprobs', 'unable', 'token log probabilities; `0` is the default'),
  o('modalities', 'unable', 'audio output; `["text"]` is the default'),
  o('audio', 'unable', 'audio output'),
  o('web_search_options', 'unable', "OpenAI's built-in web search (Gemini's Google Search grounding is another tool)"),
  o('functions', 'unable', 'the legacy function calling (use `tools`)'),
  o('function_call', 'unable', 'the legacy function calling (use `tool_choice`)'),
  o('messages.content.type', 'unable', 'audio and file parts'),
  o('tools.type', 'unable', 'tools other than `function`'),

  // Anthropic Messages -> Gemini generateContent.
  a('model', 'mapped', "the candidate's upstream model, in the path (`/v1beta/models/{model}:generateContent`)"),
  a(
    'messages',
    'mapped',
    '`contents`, assistant turns as role `model`; `tool_use` blocks become `functionCall` parts (with the `thoughtSignature` the gateway put in the id); `tool_result` blocks become `functionResponse` parts named after their call, `is_error` as `{error}` in place of `{result}`',
  ),
  a('system', 'mapped', '`systemInstruction`'),
  a('max_tokens', 'mapped', '`generationConfig.maxOutputTokens`'),
  a('temperature', 'mapped', "`generationConfig.temperature` (0 to 1 fits Gemini's 0 to 2)"),
  a('top_p', 'mapped', '`generationConfig.topP`'),
  a('top_k', 'mapped', '`generationConfig.topK`'),
  a('stop_sequences', 'mapped', '`generationConfig.stopSequences`'),
  a('stream', 'mapped', '`streamGenerateContent?alt=sse` in place of `generateContent`'),
  a('tools', 'mapped', '`tools[0].functionDeclarations`: `input_schema` becomes `parametersJsonSchema`; `strict` is not sent'),
  a(
    'tool_choice',
    'mapped',
    '`toolConfig.functionCallingConfig.mode`: `auto`, `none`, `any` as `ANY`, `tool` as `ANY` with `allowedFunctionNames`; `disable_parallel_tool_use: true` is dropped (listed as `tool_choice.disable_parallel_tool_use`)',
  ),
  a('metadata', 'dropped', 'Gemini requests carry no end-user id'),
  a(
    'thinking',
    'mapped',
    `${thoughts}: \`budget_tokens\` as the budget, \`adaptive\` as \`medium\`'s; \`disabled\` asks for nothing. Thought parts come back as thinking blocks, unsigned`,
  ),
  a(
    'output_config',
    'mapped',
    '`format` (`json_schema`) becomes `generationConfig.responseMimeType: application/json` with `responseJsonSchema`; `effort` becomes a thinking budget',
  ),
  a('output_format', 'mapped', "the structured-outputs beta's name for `output_config.format`: the same"),
  a('cache_control', 'dropped', 'on the request, a block, a tool or a system block: Gemini caches repeated prompt prefixes by itself'),
  a('service_tier', 'dropped', "Anthropic's tiers"),
  a('inference_geo', 'dropped', "Anthropic's inference region"),
  a('speed', 'dropped', "Anthropic's speed tier"),
  a('thinking.display', 'dropped', 'how Anthropic shows thinking'),
  a('tools.eager_input_streaming', 'dropped', 'Gemini sends a function call whole'),
  a('tools.defer_loading', 'dropped', "Anthropic's tool search hint"),
  a('tools.input_examples', 'dropped', "Anthropic's tool use examples"),
  a('tools.allowed_callers', 'dropped', "Anthropic's code execution callers"),
  a('messages.content.thinking', 'dropped', "an earlier turn's thinking and redacted thinking blocks are not sent back"),
  a('messages.content.citations', 'dropped', 'citations on a text block'),
  a('messages.content.source.url', 'unable', 'an image by URL: Gemini takes images inline (`base64`, sent as `inlineData`)'),
  a('messages.content.content', 'unable', "an image in a `tool_result`: Gemini takes a function's answer as text"),
  a('tools.type', 'unable', "Anthropic's server tools (web search, code execution, ...)"),
  a('messages.content.type', 'unable', 'documents, search results and other blocks Gemini is not sent'),
  a('container', 'unable', "Anthropic's code execution container"),
  a('mcp_servers', 'unable', "Anthropic's MCP connector"),
  a('context_management', 'unable', "Anthropic's context editing changes what the model sees"),
]);
