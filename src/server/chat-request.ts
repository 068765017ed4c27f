import { SwitchyardError } from '../errors.js';

export interface ChatRequest {
  readonly model: string;
  readonly stream: boolean;
  readonly parsed: Record<string, unknown>;
}

/**
 * Parses and checks a chat completion request, once, at the edge. Only what the gateway
 * itself relies on is checked here (model, messages, stream); the provider validates the
 * rest in its own words.
 */
export function parseChatRequest(raw: Buffer): ChatRequest {
  const body = parseObject(raw);
  const { model, stream } = checkModelAndMessages(body);
  const options = body.stream_options;
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw new SwitchyardError('invalid_request', 'stream_options must be an object', 'stream_options');
  }
  return { model, stream: stream === true, parsed: body };
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

function parseObject(raw: Buffer): Record<string, unknown> {
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
  return value as Record<string, unknown>;
}

function checkModelAndMessages(body: Record<string, unknown>): { model: string; stream: unknown } {
  const { model, messages, stream } = body;
  if (model === undefined) throw new SwitchyardError('invalid_request', 'missing required field: model', 'model');
  if (typeof model !== 'string' || model.length === 0 || model.length > 256) {
    throw new SwitchyardError('invalid_request', 'model must be a non-empty string of at most 256 characters', 'model');
  }
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
  const model = body.model;
  if (model === undefined) throw new SwitchyardError('invalid_request', 'missing required field: model', 'model');
  if (typeof model !== 'string' || model.length === 0 || model.length > 256) {
    throw new SwitchyardError('invalid_request', 'model must be a non-empty string of at most 256 characters', 'model');
  }
  if (body.input === undefined || body.input === null)
    throw new SwitchyardError('invalid_request', 'missing required field: input', 'input');
  return { model, stream: false, parsed: body };
}

/** Parses a Messages count_tokens request: a model and messages, as for a message, without `max_tokens`. */
export function parseCountTokensRequest(raw: Buffer): ChatRequest {
  const body = parseObject(raw);
  const { model } = checkModelAndMessages(body);
  return { model, stream: false, parsed: body };
}
