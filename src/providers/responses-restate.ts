import { SseParser } from './canonical/sse-parser.js';
import { isRecord, jsonRecord } from './canonical/types.js';
import type { ResponsesTransform } from './relay-transform.js';

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
