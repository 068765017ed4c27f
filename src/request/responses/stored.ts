import { replayResponse } from '../../providers/index.js';
import { pageOf, type ResponseRecord } from '../../responses/index.js';
import type { Caller, Exchange, ModelRequest } from '../exchange.js';
import { sendBody, sendJson } from '../respond.js';
import type { Services } from '../services.js';
import { listObject, pageQueryOf } from './pages.js';

// A stored response's reads and its delete, answered by the gateway's store: nothing
// reaches a provider, and nothing is billed. `?stream=true` replays the response as the
// event stream it would have been.

const EMPTY = Buffer.alloc(0);

export async function answerFromStore(
  svc: Services,
  x: Exchange,
  caller: Caller,
  method: 'GET' | 'DELETE',
  record: ResponseRecord,
  inputItems: boolean,
): Promise<void> {
  const query = queryOf(x.req.url);
  const stream = method === 'GET' && !inputItems && query.get('stream') === 'true';
  const request: ModelRequest = {
    ...caller,
    operation: 'responses',
    protocol: 'openai',
    model: record.model,
    stream,
    raw: EMPTY,
    parsed: {},
    stored: { method, id: record.id, query: query.toString() },
  };
  x.asked(request);
  if (method === 'DELETE') {
    await svc.responseStore.deleteResponse(record.id);
    // Nor is it found through the owner table, which a passed-through response is also in.
    svc.responses.forget(record.id);
    sendJson(x.res, 200, { id: record.id, object: 'response', deleted: true });
    return;
  }
  if (inputItems) {
    sendJson(x.res, 200, listObject(pageOf(record.input, pageQueryOf(x.req.url))));
    return;
  }
  if (stream) sendBody(x.res, 200, replayResponse(record.response), 'text/event-stream');
  else sendJson(x.res, 200, record.response);
}

function queryOf(url: string | undefined): URLSearchParams {
  const at = url?.indexOf('?') ?? -1;
  return new URLSearchParams(at === -1 ? '' : (url as string).slice(at + 1));
}
