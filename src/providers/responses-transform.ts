import { errorCatalog } from '../errors.js';
import { canonicalToResponsesObject, type ResponsesShape } from './canonical/responses-object.js';
import { ResponsesEventEncoder } from './canonical/responses-stream.js';
import { SseParser } from './canonical/sse-parser.js';
import { StreamTranslator } from './canonical/stream-translator.js';
import type { ProviderProtocol } from './canonical/types.js';
import { isRecord, jsonRecord } from './canonical/types.js';
import { usageFromResponses } from './canonical/usage.js';
import { topLevelValue } from './json-splice.js';
import { type BodyTransform, type TranslationOptions, translatedBody } from './relay-transform.js';
import { ResponsesStreamReader } from './responses-stream-reader.js';

// The transforms of an answer to an OpenAI Responses API client, each of which ends with
// the `Response` the client got, for the gateway to store: the provider's own Responses API
// passed through (metered, its bytes untouched), the same with the client's fields put back
// (a body the gateway rewrote), and any other protocol translated.

/** A transform that ends with a Responses API `Response` object: the gateway stores it, for follow-ups and for GET. */
export type ResponsesTransform = BodyTransform & {
  /** The Response the client got (a plain 2xx body, or a stream's completed or incomplete event); null when there is none (yet). */
  readonly response: Record<string, unknown> | null;
};

/**
 * OpenAI Responses API: bytes untouched; the response id is reported as soon as it is seen
 * (the top-level `id` of a body, `response.created` of a stream) so the gateway can send
 * the response's follow-ups to the provider that holds it, and the usage is read from the
 * body's top-level `usage` or the stream's terminal event. A plain body is not parsed
 * whole: only those two top-level values are, and the whole only when `response` is read.
 */
export function responsesMetering(onResponseId: (id: string) => void): ResponsesTransform {
  const reader = new ResponsesStreamReader(onResponseId);
  let plainBody: Buffer | null = null;
  let parsed: Record<string, unknown> | null | undefined;
  return {
    plain(status, body) {
      if (status >= 300) return { status, body, usage: null };
      plainBody = body;
      const id = topLevelJson(body, 'id');
      if (typeof id === 'string' && id !== '') onResponseId(id);
      return { status, body, usage: usageFromResponses(topLevelJson(body, 'usage')) };
    },
    chunk(chunk) {
      reader.push(chunk);
      return chunk;
    },
    end() {
      reader.end();
      return '';
    },
    fail(message, code = 'stream_interrupted') {
      // The Responses API's own error event (type, code, message, and the sequence_number
      // after the last relayed event's), with OpenAI's `error` object beside it: the OpenAI
      // SDKs raise an APIError for any event data holding one.
      const error = { message, type: errorCatalog[code].openai, param: null, code };
      const sequence_number = reader.nextSequenceNumber;
      return `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number, code, message, param: null, error })}\n\n`;
    },
    get usage() {
      return reader.usage;
    },
    get response() {
      if (parsed !== undefined) return parsed;
      if (plainBody !== null) parsed = jsonRecord(plainBody.toString('utf8'));
      else {
        const event = reader.terminalEvent;
        if (event === null) return null;
        const response = jsonRecord(event)?.response;
        parsed = isRecord(response) ? response : null;
      }
      return parsed;
    },
  };
}

function topLevelJson(body: Buffer, key: string): unknown {
  const at = topLevelValue(body, key);
  if (at === null) return undefined;
  try {
    return JSON.parse(body.toString('utf8', at[0], at[1]));
  } catch {
    return undefined;
  }
}

/**
 * Upstream protocol -> an OpenAI Responses API client, for both kinds of body: the answer
 * as a `Response` object (shaped by `shape`: the gateway's ids, the request's echo) or as
 * its event stream. Errors take OpenAI's shape, as for an OpenAI chat client. `response` is
 * the Response the client got, for the gateway to store; null until then, or when it failed.
 */
export function responsesTranslation(from: ProviderProtocol, shape: ResponsesShape, options: TranslationOptions = {}): ResponsesTransform {
  let encoder: ResponsesEventEncoder | null = null;
  let plainResponse: Record<string, unknown> | null = null;
  const body = translatedBody(
    from,
    'openai',
    options,
    (answer) => {
      plainResponse = canonicalToResponsesObject(answer, shape);
      return plainResponse;
    },
    () => {
      encoder = new ResponsesEventEncoder(shape);
      return new StreamTranslator({ ...options, from, to: encoder });
    },
  );
  return {
    plain: body.plain,
    chunk: body.chunk,
    end: body.end,
    fail: body.fail,
    get usage() {
      return body.usage;
    },
    get response() {
      return plainResponse ?? (encoder as ResponsesEventEncoder | null)?.response ?? null;
    },
  };
}

// A Responses API answer from a provider that was sent a body the gateway wrote (the whole
// conversation in `input`, without the `previous_response_id` or `conversation` the client
// gave, which only the gateway knows): the Response the client sees says what the client
// asked, so those fields are put back in it, in a plain body and in every stream event
// that carries the Response (created, in progress, and the terminal one). Every other event
// passes as it came. Only this path pays the parse; a pass-through never comes here.

export function restatedResponses(inner: ResponsesTransform, fields: Readonly<Record<string, unknown>>): ResponsesTransform {
  const parser = new SseParser();
  let out = '';
  const onEvent = (event: string, data: string): void => {
    const payload = data.includes('"response"') ? jsonRecord(data) : null;
    const response = payload?.response;
    const text = payload !== null && isRecord(response) ? JSON.stringify({ ...payload, response: { ...response, ...fields } }) : data;
    out += event === '' ? `data: ${text}\n\n` : `event: ${event}\ndata: ${text}\n\n`;
  };
  const take = (): string => {
    const text = out;
    out = '';
    return text;
  };
  return {
    plain(status, body) {
      const answer = inner.plain(status, body);
      if (answer.status >= 300) return answer;
      const parsed = jsonRecord(typeof answer.body === 'string' ? answer.body : answer.body.toString('utf8'));
      return parsed === null ? answer : { ...answer, body: JSON.stringify({ ...parsed, ...fields }) };
    },
    chunk(chunk) {
      inner.chunk(chunk);
      parser.push(chunk, onEvent);
      return take();
    },
    end() {
      inner.end();
      parser.end(onEvent);
      return take();
    },
    fail(message, code) {
      return take() + inner.fail(message, code);
    },
    get usage() {
      return inner.usage;
    },
    get response() {
      const response = inner.response;
      return response === null ? null : { ...response, ...fields };
    },
  };
}
