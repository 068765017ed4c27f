import { type ProviderProtocol, ruleMaker, type TranslationOutcome, type TranslationRule } from './types.js';

// The translation policy's rows for a client of OpenAI's Responses API whose request is
// read into the canonical form and written for a provider's chat protocol (policy.ts holds
// the table). The reader reads alike for every target; the rows differ only where a
// writer drops what its protocol has no place for. Fields the gateway itself answers for
// (its store of responses and conversations, `include`, the echo in the Response object)
// are mapped: the client gets what it asked for, from the gateway rather than the model.

type Row = readonly [field: string, outcome: TranslationOutcome, effect: string];

const COMMON: readonly Row[] = [
  ['model', 'mapped', "the candidate's upstream model"],
  [
    'input',
    'mapped',
    "the conversation (the stored history first, item references resolved): messages by role, `system`/`developer` messages as the system prompt; `function_call` items as tool calls, consecutive ones in one assistant turn; `function_call_output` items as tool results; an `mcp_call` as a tool call and its result; MCP listings and approvals are the gateway's and not sent",
  ],
  ['instructions', 'mapped', 'the system prompt, before any `system`/`developer` message of the input'],
  ['max_output_tokens', 'mapped', 'the output limit'],
  ['temperature', 'mapped', 'the temperature'],
  ['top_p', 'mapped', 'the nucleus sampling limit'],
  ['stream', 'mapped', "a stream, written back as the Responses API's events"],
  ['tools', 'mapped', "function tools; the gateway's own MCP tools are taken out before (they run in the gateway)"],
  ['tool_choice', 'mapped', '`auto`, `none`, `required`, or a function by name'],
  ['text', 'mapped', '`format` `json_schema` as structured output; `text` is the default; `json_object` is unable (no schema)'],
  [
    'reasoning',
    'mapped',
    "`effort` as the reasoning effort (`none` asks for nothing); the answer's reasoning comes back as a `reasoning` item's summary",
  ],
  ['user', 'mapped', 'the end-user id'],
  ['safety_identifier', 'mapped', 'the end-user id'],
  ['metadata', 'mapped', "the gateway's: kept with the stored response and echoed"],
  ['store', 'mapped', "the gateway's: whether it keeps the response"],
  ['previous_response_id', 'mapped', "the gateway's: its stored history goes first in the input"],
  ['conversation', 'mapped', "the gateway's: the conversation's items go first in the input"],
  ['truncation', 'mapped', 'echoed; the gateway does not truncate'],
  ['stream_options', 'mapped', "the gateway's stream, which it writes itself"],
  ['service_tier', 'mapped', 'echoed'],
  ['prompt_cache_key', 'mapped', 'echoed; providers cache prompt prefixes by themselves'],
  ['include', 'mapped', "the gateway's: `reasoning.encrypted_content` has nothing to include (no encrypted reasoning comes back)"],
  [
    'input.reasoning',
    'dropped',
    "an earlier turn's reasoning summary: providers take back only their own signed reasoning; `encrypted_content` is not listed",
  ],
  ['input.content.image_url', 'mapped', 'an image by URL, or inline from a `data:` URL'],
  ['input.content.detail', 'dropped', 'providers size images themselves; `auto` is not listed'],
  ['include.message.output_text.logprobs', 'dropped', 'token log probabilities are not translated back'],
  ['parallel_tool_calls', 'mapped', 'at most one tool call per turn when `false`'],
  ['prompt_cache_retention', 'dropped', "OpenAI's cache retention hint"],
  ['prompt_cache_options', 'dropped', "OpenAI's cache options"],
  ['text.verbosity', 'dropped', 'a length hint'],
  ['max_tool_calls', 'dropped', 'a limit on built-in tool calls, which are unable'],
  ['input.content.type', 'unable', 'audio parts, and files or images by OpenAI file id'],
  ['input.type', 'unable', 'built-in tool calls and their outputs (web search, file search, computer use, ...)'],
  ['tools.type', 'unable', "OpenAI's built-in tools (web search, file search, code interpreter, image generation, ...) and remote MCP"],
  ['top_logprobs', 'unable', 'token log probabilities; `0` is the default'],
  ['background', 'unable', 'a response run in the background; `false` is the default'],
  ['prompt', 'unable', "OpenAI's stored prompt templates"],
  ['context_management', 'unable', "OpenAI's context compaction changes what the model sees"],
  ['moderation', 'unable', "OpenAI's moderation of the input and output"],
];

/** What a writer does differently from the common rows, by target. */
const BY_TARGET: Readonly<Record<ProviderProtocol, readonly Row[]>> = {
  openai: [['input.content.file', 'mapped', 'a `file` part with `file_data` (a `data:` URL); a file by URL is unable']],
  anthropic: [
    ['temperature', 'mapped', 'the temperature; above 1 it is clamped to 1 and listed as dropped'],
    ['reasoning', 'mapped', "`effort` as a thinking budget (the OpenAI reader's budgets and limits; listed as `reasoning` when dropped)"],
    ['input.content.file', 'mapped', 'a `document` block: a PDF inline or by URL, plain text inline; other types are unable'],
  ],
  gemini: [
    ['parallel_tool_calls', 'dropped', 'Gemini has no switch for parallel calls; `true` is not listed'],
    ['user', 'dropped', 'Gemini requests carry no end-user id'],
    ['safety_identifier', 'dropped', 'Gemini requests carry no end-user id (listed as `user`)'],
    ['input.content.image_url', 'unable', 'an image by web URL: Gemini takes images inline (a `data:` URL)'],
    ['input.content.file', 'mapped', '`inlineData`; a file by URL is unable'],
  ],
  bedrock: [
    ['temperature', 'mapped', 'the temperature; above 1 it is clamped to 1 and listed as dropped'],
    ['reasoning', 'mapped', 'for a Claude model, `effort` as a thinking budget; for other models dropped (listed as `reasoning`)'],
    ['parallel_tool_calls', 'dropped', 'Converse has no switch for parallel calls; `true` is not listed'],
    ['user', 'dropped', 'Converse requests carry no end-user id'],
    ['safety_identifier', 'dropped', 'Converse requests carry no end-user id (listed as `user`)'],
    ['input.content.image_url', 'unable', 'an image by web URL: Converse takes images inline (a `data:` URL)'],
    ['input.content.file', 'mapped', 'a `document` (pdf, csv, doc(x), xls(x), html, txt, md) inline; a file by URL is unable'],
  ],
};

function rowsTo(to: ProviderProtocol): TranslationRule[] {
  const rule = ruleMaker('responses', to);
  const own = new Map(BY_TARGET[to].map((row) => [row[0], row]));
  const rows = COMMON.map((row) => own.get(row[0]) ?? row);
  for (const row of BY_TARGET[to]) if (!COMMON.some((c) => c[0] === row[0])) rows.push(row);
  return rows.map(([field, outcome, effect]) => rule(field, outcome, effect));
}

export const RESPONSES_RULES: readonly TranslationRule[] = Object.freeze([
  ...rowsTo('openai'),
  ...rowsTo('anthropic'),
  ...rowsTo('gemini'),
  ...rowsTo('bedrock'),
]);
