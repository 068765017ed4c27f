import { DEFAULT_MAX_TOKENS, THINKING_MIN_TOP_P, thinkingBudget } from './anthropic-request-writer.js';
import type {
  CacheControl,
  CanonicalMessage,
  CanonicalRequest,
  ClientProtocol,
  ContentPart,
  FilePart,
  ImagePart,
  TextPart,
  Translation,
  WrittenRequest,
} from './types.js';
import { attempt, refuse } from './types.js';

// The canonical request as a Bedrock Converse body (POST /model/{modelId}/converse, or
// /converse-stream: the model id is in the path, so it is not in the body). Converse is one
// shape for every model Bedrock serves; what only some models take goes in
// `additionalModelRequestFields`, which is sent only for Anthropic's Claude models, whose
// fields there (top_k, thinking) are Anthropic's own and documented by AWS.

export interface BedrockRequestOptions {
  /** The client's protocol: a dropped field is listed under the name the client sent it by. */
  readonly client: ClientProtocol;
}

type Names = Readonly<Record<'parallel' | 'user' | 'reasoning' | 'toolChoice', string>>;

/** Fields Converse has no place for, by the name each client protocol gives them. */
const DROPPED_NAMES: Readonly<Record<ClientProtocol, Names>> = {
  openai: { parallel: 'parallel_tool_calls', user: 'user', reasoning: 'reasoning_effort', toolChoice: 'tool_choice' },
  anthropic: { parallel: 'tool_choice.disable_parallel_tool_use', user: 'metadata', reasoning: 'thinking', toolChoice: 'tool_choice' },
  responses: { parallel: 'parallel_tool_calls', user: 'user', reasoning: 'reasoning', toolChoice: 'tool_choice' },
};

/**
 * A Claude model on Bedrock: its model id (`anthropic.claude-…`), a cross-region inference
 * profile's (`us.anthropic.claude-…`, `global.…`) or an ARN that ends in one. An application
 * inference profile's ARN names no model, so it is not known as Claude.
 */
export function isClaudeModel(modelId: string): boolean {
  return /(?:^|[.:/])anthropic\.claude/.test(modelId);
}

type Block = Record<string, unknown>;

/** Bedrock's prompt-cache checkpoint: everything before it is cached. Anthropic's ttl is kept when Bedrock knows it. */
function cachePoint(cache: CacheControl): Block {
  const point: Block = { type: 'default' };
  if (cache.ttl === '5m' || cache.ttl === '1h') point.ttl = cache.ttl;
  return { cachePoint: point };
}

const IMAGE_FORMATS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

function image(p: ImagePart, path: string): Block {
  // Converse reads a remote image only from S3 (`source.s3Location`), never a web URL.
  if (p.source.kind === 'url') return refuse('unsupported', path, 'Bedrock takes images inline (base64) only, not by URL');
  const format = IMAGE_FORMATS[p.source.mediaType.toLowerCase()];
  if (format === undefined) return refuse('unsupported', path, `Bedrock takes png, jpeg, gif and webp images, not ${p.source.mediaType}`);
  // `bytes` is a blob: base64 text on the JSON wire, as the image already is.
  return { image: { format, source: { bytes: p.source.data } } };
}

const DOCUMENT_FORMATS: Readonly<Record<string, string>> = {
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'text/html': 'html',
  'text/plain': 'txt',
  'text/markdown': 'md',
};

function documentBlock(p: FilePart, path: string): Block {
  if (p.source.kind === 'url') return refuse('unsupported', path, 'Bedrock takes documents inline (base64) only, not by URL');
  const format = DOCUMENT_FORMATS[p.source.mediaType.toLowerCase()];
  if (format === undefined) return refuse('unsupported', path, `Bedrock takes no ${p.source.mediaType} documents`);
  // Converse requires a name of letters, digits, single spaces, hyphens, parentheses and square brackets.
  const name = (p.filename ?? '')
    .replace(/\.[^.]*$/, '')
    .replace(/[^A-Za-z0-9 ()[\]-]+/g, '-')
    .replace(/\s+/g, ' ')
    .trim();
  return { document: { format, name: name === '' ? 'document' : name, source: { bytes: p.source.data } } };
}

/**
 * A tool result's content. Converse refuses an empty text block, so empty text is left out;
 * a result left with nothing (a tool that printed nothing) is an empty JSON object, which
 * says "no output" without inventing words for the model to read.
 */
function resultContent(content: readonly (TextPart | ImagePart)[], path: string): Block[] {
  const out: Block[] = [];
  content.forEach((c, i) => {
    if (c.type === 'image') out.push(image(c, `${path}.content[${i}]`));
    else if (c.text !== '') out.push({ text: c.text });
  });
  return out.length === 0 ? [{ json: {} }] : out;
}

/** One canonical part as Converse content blocks: the block, and a cache checkpoint after it when it had a marker. */
function blocks(p: ContentPart, path: string): Block[] {
  let block: Block;
  switch (p.type) {
    case 'text':
      // Converse refuses an empty text block (an OpenAI assistant turn's "" beside its tool calls).
      if (p.text === '') return p.cacheControl === undefined ? [] : [cachePoint(p.cacheControl)];
      block = { text: p.text };
      break;
    case 'image':
      block = image(p, path);
      break;
    case 'file':
      block = documentBlock(p, path);
      break;
    case 'tool_call':
      block = { toolUse: { toolUseId: p.id, name: p.name, input: p.input ?? {} } };
      break;
    case 'tool_result': {
      const result: Block = { toolUseId: p.toolCallId, content: resultContent(p.content, path) };
      if (p.isError) result.status = 'error';
      block = { toolResult: result };
      break;
    }
  }
  return p.cacheControl === undefined ? [block] : [block, cachePoint(p.cacheControl)];
}

/**
 * Converse wants the turns to alternate, so adjacent turns of one role become one message:
 * an OpenAI client's `tool` messages, each its own canonical user turn, go in the one user
 * turn after the call. A turn left with no content (reasoning only, which is not sent back) is skipped.
 */
function messages(list: readonly CanonicalMessage[]): { role: string; content: Block[] }[] {
  const out: { role: string; content: Block[] }[] = [];
  list.forEach((m, i) => {
    const content = m.content.flatMap((p, j) => blocks(p, `messages[${i}].content[${j}]`));
    if (content.length === 0) return;
    const last = out[out.length - 1];
    if (last !== undefined && last.role === m.role) last.content.push(...content);
    else out.push({ role: m.role, content });
  });
  return out;
}

/** Whether the history holds a tool call or result: Converse then refuses a request without `toolConfig`. */
function historyUsesTools(list: readonly CanonicalMessage[]): boolean {
  return list.some((m) => m.content.some((p) => p.type === 'tool_call' || p.type === 'tool_result'));
}

/** The names of the tools the history called, in order, once each. */
function historyToolNames(list: readonly CanonicalMessage[]): string[] {
  const names = new Set<string>();
  for (const m of list) for (const p of m.content) if (p.type === 'tool_call') names.add(p.name);
  return [...names];
}

/**
 * A history with tool calls but a request that offers no tools (a client that goes on
 * talking about the calls): Converse refuses it without `toolConfig`, which the Messages
 * and chat completions APIs do not. The tools the history called are declared, each with an
 * open schema and saying it is not offered now, so the request is taken and the earlier
 * calls keep their meaning.
 */
function historyTools(list: readonly CanonicalMessage[]): Record<string, unknown> | null {
  const names = historyToolNames(list);
  if (names.length === 0) return null;
  const description = 'Called earlier in this conversation; not offered in this turn.';
  return { tools: names.map((name) => ({ toolSpec: { name, description, inputSchema: { json: { type: 'object' } } } })) };
}

/** The canonical request as a Bedrock Converse body (the model is in the path), and what had to be dropped. */
export function canonicalToBedrockRequest(req: CanonicalRequest, options: BedrockRequestOptions): Translation<WrittenRequest> {
  return attempt(() => {
    const dropped: string[] = [];
    const carried: string[] = [];
    const names = DROPPED_NAMES[options.client];
    const claude = isClaudeModel(req.model);
    const body: Record<string, unknown> = { messages: messages(req.messages) };
    // Empty text is left out here too: Converse refuses an empty system block as it does an empty content block.
    const system = req.system.flatMap((s) => {
      const text = s.text === '' ? [] : [{ text: s.text }];
      return s.cacheControl === undefined ? text : [...text, cachePoint(s.cacheControl)];
    });
    if (system.length > 0) body.system = system;
    const inference: Record<string, unknown> = {};
    if (req.maxOutputTokens !== undefined) inference.maxTokens = req.maxOutputTokens;
    if (req.temperature !== undefined) {
      // Converse takes 0 to 1 (OpenAI 0 to 2): a higher value is the most random it allows.
      if (req.temperature > 1) dropped.push('temperature');
      inference.temperature = Math.min(req.temperature, 1);
    }
    if (req.topP !== undefined) inference.topP = req.topP;
    if (req.stopSequences !== undefined) inference.stopSequences = [...req.stopSequences];
    const additional: Record<string, unknown> = {};
    const topK = req.sampling?.topK;
    if (topK !== undefined && claude && Number.isInteger(topK) && topK > 0) {
      additional.top_k = topK;
      carried.push('top_k');
    }
    if (req.reasoning !== undefined) reasoning(req, claude, inference, additional, dropped, names);
    if (Object.keys(inference).length > 0) body.inferenceConfig = inference;
    if (Object.keys(additional).length > 0) body.additionalModelRequestFields = additional;
    tools(req, body, dropped, names);
    if (req.user !== undefined) dropped.push(names.user);
    if (req.responseFormat !== undefined) {
      // Converse's own structured output: the answer's text is JSON matching the schema, as
      // the client asked, and it comes back as text, as it would from its own protocol. The
      // schema travels as JSON text (a Smithy string, not a document).
      const f = req.responseFormat;
      const jsonSchema: Record<string, unknown> = { schema: JSON.stringify(f.schema), name: f.name };
      if (f.description !== undefined) jsonSchema.description = f.description;
      body.outputConfig = { textFormat: { type: 'json_schema', structure: { jsonSchema } } };
    }
    return carried.length === 0 ? { body, dropped } : { body, dropped, carried };
  });
}

/**
 * Extended thinking, for a Claude model only (Anthropic's `thinking` in the additional
 * fields, with the limits Anthropic sets: a budget below maxTokens, no temperature, a top_p
 * of at least 0.95). Other models' reasoning switches differ by model, so it is dropped.
 */
function reasoning(
  req: CanonicalRequest,
  claude: boolean,
  inference: Record<string, unknown>,
  additional: Record<string, unknown>,
  dropped: string[],
  names: Names,
): void {
  const maxTokens = req.maxOutputTokens ?? DEFAULT_MAX_TOKENS;
  const budget = claude ? thinkingBudget(req, maxTokens) : null;
  if (budget === null) {
    dropped.push(names.reasoning);
    return;
  }
  additional.thinking = { type: 'enabled', budget_tokens: budget };
  inference.maxTokens = maxTokens;
  if (inference.temperature !== undefined) {
    delete inference.temperature;
    if (!dropped.includes('temperature')) dropped.push('temperature');
  }
  if (req.topP !== undefined && req.topP < THINKING_MIN_TOP_P) {
    delete inference.topP;
    dropped.push('top_p');
  }
}

/**
 * `toolConfig`. Converse has no `none`: a tool choice of none sends no tools, so none can be
 * called; but a history with tool calls or results needs `toolConfig`, so there the tools
 * are sent without a choice (the model's own, auto) and `tool_choice` is listed as dropped.
 */
function tools(req: CanonicalRequest, body: Record<string, unknown>, dropped: string[], names: Names): void {
  const choice = req.toolChoice;
  const list = req.tools ?? [];
  if (req.parallelToolCalls === false && choice?.type !== 'none') dropped.push(names.parallel);
  if (list.length === 0) {
    const declared = historyUsesTools(req.messages) ? historyTools(req.messages) : null;
    if (declared !== null) body.toolConfig = declared;
    return;
  }
  if (choice?.type === 'none' && !historyUsesTools(req.messages)) return;
  const specs = list.flatMap((t) => {
    const spec: Record<string, unknown> = { name: t.name };
    if (t.description !== undefined) spec.description = t.description;
    spec.inputSchema = { json: t.inputSchema };
    if (t.strict === true) spec.strict = true;
    const tool = { toolSpec: spec };
    return t.cacheControl === undefined ? [tool] : [tool, cachePoint(t.cacheControl)];
  });
  const config: Record<string, unknown> = { tools: specs };
  if (choice?.type === 'none') dropped.push(names.toolChoice);
  else if (choice?.type === 'any') config.toolChoice = { any: {} };
  else if (choice?.type === 'tool') config.toolChoice = { tool: { name: choice.name } };
  else if (choice?.type === 'auto') config.toolChoice = { auto: {} };
  body.toolConfig = config;
}
