import { SwitchyardError } from '../errors.js';
import { type Admitted, preCheck } from './admission.js';
import type { Caller, Exchange, ModelRequest } from './exchange.js';
import { holderOf, type Ownership, ownerOf } from './response-owners.js';
import { type ServeCallback, serveChain } from './serve-chain.js';
import type { RequestPath } from './serve-model.js';

const EMPTY = Buffer.alloc(0);
const NO_TOKENS = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/**
 * `GET` and `DELETE /v1/responses/{id}`: admitted against the creating model's team limits
 * like any request (it counts toward rpm and costs nothing), and sent to the provider that
 * holds the response, with the client's query string, through the one failover chain (of
 * one candidate). An id the gateway does not know is a 404 in OpenAI's shape; a deleted
 * one is forgotten.
 */
export function serveStoredResponse(
  path: RequestPath,
  x: Exchange,
  caller: Caller,
  method: 'GET' | 'DELETE',
  rest: string,
  done: ServeCallback,
): void {
  const { svc } = path;
  const id = responseIdOf(x, rest);
  const owner = ownerOf(svc.responses, caller.principal, id);
  if (owner instanceof Promise) {
    owner.then((o) => serveOwned(path, x, caller, method, id, o, done)).catch(done);
    return;
  }
  serveOwned(path, x, caller, method, id, owner, done);
}

function serveOwned(
  path: RequestPath,
  x: Exchange,
  caller: Caller,
  method: 'GET' | 'DELETE',
  id: string,
  owner: Ownership,
  done: ServeCallback,
): void {
  const { svc } = path;
  if (typeof owner === 'string') {
    throw new SwitchyardError(
      'response_not_found',
      `no response with id "${id}" is known to this gateway (it keeps the responses its providers created, within routing.responses bounds)`,
      'response_id',
    );
  }
  const query = queryOf(x.req.url);
  const request: ModelRequest = {
    ...caller,
    operation: 'responses',
    protocol: 'openai',
    model: owner.model,
    stream: method === 'GET' && /(?:^|&)stream=true(?:&|$)/.test(query),
    raw: EMPTY,
    parsed: {},
    stored: { method, id, query },
  };
  x.asked(request);
  const holder = holderOf(caller.gen, owner.model, owner, id);
  // No candidate list: a read or a delete reserves no tokens, whatever the model's price.
  const serve = (admitted: Admitted): void =>
    serveChain(
      {
        x,
        request,
        limitHeaders: admitted.limitHeaders,
        deadlineAt: null,
        fallbackOn: null,
        outputCap: null,
        onResponseId: null,
        svc,
        candidates: [holder],
        attempt: path.guarded,
        reservation: admitted.reservation,
        onCommit: (committed) => {
          if (method === 'DELETE' && committed.status < 300) svc.responses.forget(id);
        },
        // A read or a delete uses no tokens, whatever its body says.
        usage: NO_TOKENS,
      },
      done,
    );
  const admitted = preCheck(x, svc, request, { bodyBytes: 0, maxTokens: 0 }, []);
  if (admitted instanceof Promise) admitted.then(serve, done);
  else serve(admitted);
}

function responseIdOf(x: Exchange, rest: string): string {
  let id: string;
  try {
    id = decodeURIComponent(rest);
  } catch {
    throw new SwitchyardError('invalid_request', 'the response id in the path is not valid percent-encoding', 'response_id');
  }
  // Sub-resources (`{id}/input_items`, `{id}/cancel`) are not served.
  if (rest.includes('/') || id.length > 256) throw new SwitchyardError('not_found', `no such endpoint: ${x.req.method} ${x.req.url}`);
  return id;
}

function queryOf(url: string | undefined): string {
  const at = url?.indexOf('?') ?? -1;
  return at === -1 ? '' : (url as string).slice(at + 1);
}
