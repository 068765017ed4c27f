import { SwitchyardError } from '../errors.js';
import { duplicateTopLevelKey, topLevelMemberCount } from '../providers/index.js';

export interface ChatRequest {
  readonly model: string;
  readonly stream: boolean;
  readonly parsed: Record<string, unknown>;
}

/** Longer than any provider's ids; it bounds what the gateway keys its memory by. */
const MAX_RESPONSE_ID_CHARS = 256;

/**
 * Parses and checks a chat completion request, once, at the edge. Only what the gateway
 * itself relies on is checked here (model, messages, stream); the provider validates the
 * rest in its own words.
 */
export function parseChatRequest(raw: Buffer): ChatRequest {
  const body = parseObject(raw);
  const { model } = checkModelAndMessages(body);
  return { model, stream: checkStream(body), parsed: body };
}

/**
 * Parses and checks an Anthropic Messages request: model, messages and stream as for a
 * chat completion, and `max_tokens`, which the Messages API requires.
 */
export function parseMessagesRequest(raw: Buffer): ChatRequest {
  const body = parseObject(raw);
  const { model, stream } = checkModelAndMessages(body);
  const max = body.max_tokens;
  if (max === undefined) throw new SwitchyardError('invalid_request', 'missing required field: max_tokens', 'max_tokens');
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) {
    throw new SwitchyardError('invalid_request', 'max_tokens must be a positive integer', 'max_tokens');
  }
  return { model, stream: stream === true, parsed: body };
}

export function parseObject(raw: Buffer): Record<string, unknown> {
  if (raw.length === 0) throw new SwitchyardError('invalid_json', 'request body is empty; expected a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new SwitchyardError('invalid_json', `request body is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SwitchyardError('invalid_request', 'request body must be a JSON object');
  }
  const body = value as Record<string, unknown>;
  // JSON.parse keeps a repeated key's last value, so the gateway would route, check and
  // price that one while a provider reading the first gets a model nobody checked. The
  // count is one pass over the top level; only a body that repeats a key pays for naming it.
  if (topLevelMemberCount(raw) > Object.keys(body).length) refuseDuplicate(raw);
  return body;
}

/** Longer than any field name a provider knows; it bounds how much of a key an error echoes. */
const MAX_ECHOED_KEY_CHARS = 256;

function refuseDuplicate(raw: Buffer): void {
  const key = duplicateTopLevelKey(raw);
  // The parser counted fewer keys than the scan saw members, yet no key repeats: trust the parse.
  if (key === null) return;
  const named = key.length > MAX_ECHOED_KEY_CHARS ? `${key.slice(0, MAX_ECHOED_KEY_CHARS)}…` : key;
  throw new SwitchyardError('duplicate_key', `request body names the top-level key ${JSON.stringify(named)} more than once`, named);
}

function checkModelAndMessages(body: Record<string, unknown>): { model: string; stream: unknown } {
  const model = checkModel(body);
  const { messages, stream } = body;
  if (messages === undefined) throw new SwitchyardError('invalid_request', 'missing required field: messages', 'messages');
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new SwitchyardError('invalid_request', 'messages must be a non-empty array', 'messages');
  }
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (m === null || typeof m !== 'object' || Array.isArray(m) || typeof (m as { role?: unknown }).role !== 'string') {
      throw new SwitchyardError('invalid_request', `messages[${i}] must be an object with a string role`, `messages[${i}]`);
    }
  }
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw new SwitchyardError('invalid_request', 'stream must be a boolean', 'stream');
  }
  return { model, stream };
}

/** Parses an OpenAI embeddings request: a model and an `input` (the provider checks its form). */
export function parseEmbeddingsRequest(raw: Buffer): ChatRequest {
  const body = parseObject(raw);
  const model = checkModel(body);
  if (body.input === undefined || body.input === null)
    throw new SwitchyardError('invalid_request', 'missing required field: input', 'input');
  return { model, stream: false, parsed: body };
}

/** Parses a legacy OpenAI completions request: a model, a `prompt` (the provider checks its form), stream. */
export function parseCompletionsRequest(raw: Buffer): ChatRequest {
  const body = parseObject(raw);
  const model = checkModel(body);
  if (body.prompt === undefined || body.prompt === null)
    throw new SwitchyardError('invalid_request', 'missing required field: prompt', 'prompt');
  return { model, stream: checkStream(body), parsed: body };
}

/**
 * Parses an OpenAI Responses API request: a model (the gateway routes by it), stream, and
 * `previous_response_id` when it continues a stored response. The provider checks the rest.
 */
export function parseResponsesRequest(raw: Buffer): ChatRequest {
  const body = parseObject(raw);
  const model = checkModel(body);
  const stream = checkStream(body);
  const previous = body.previous_response_id;
  if (previous === undefined || previous === null) return { model, stream, parsed: body };
  if (typeof previous !== 'string' || previous.length === 0 || previous.length > MAX_RESPONSE_ID_CHARS) {
    throw new SwitchyardError(
      'invalid_request',
      `previous_response_id must be a non-empty string of at most ${MAX_RESPONSE_ID_CHARS} characters`,
      'previous_response_id',
    );
  }
  return { model, stream, parsed: body };
}

function checkModel(body: Record<string, unknown>): string {
  const model = body.model;
  if (model === undefined) throw new SwitchyardError('invalid_request', 'missing required field: model', 'model');
  if (typeof model !== 'string' || model.length === 0 || model.length > 256) {
    throw new SwitchyardError('invalid_request', 'model must be a non-empty string of at most 256 characters', 'model');
  }
  return model;
}

function checkStream(body: Record<string, unknown>): boolean {
  const stream = body.stream;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    throw new SwitchyardError('invalid_request', 'stream must be a boolean', 'stream');
  }
  const options = body.stream_options;
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw new SwitchyardError('invalid_request', 'stream_options must be an object', 'stream_options');
  }
  return stream === true;
}

/** Parses a Messages count_tokens request: a model and messages, as for a message, without `max_tokens`. */
export function parseCountTokensRequest(raw: Buffer): ChatRequest {
  const body = parseObject(raw);
  const { model } = checkModelAndMessages(body);
  return { model, stream: false, parsed: body };
}
