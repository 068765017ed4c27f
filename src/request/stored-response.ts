import { SwitchyardError } from '../errors.js';
import { type Admitted, preCheck } from './admission.js';
import type { Caller, Exchange, ModelRequest } from './exchange.js';
import { holderOf, type Ownership, ownerOf } from './response-owners.js';
import { answerFromStore } from './responses/stored.js';
import { responseNotFound, storeError } from './responses/turn.js';
import { type ServeCallback, serveChain } from './serve-chain.js';
import type { RequestPath } from './serve-model.js';

const EMPTY = Buffer.alloc(0);
const NO_TOKENS = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/**
 * `GET` and `DELETE /v1/responses/{id}`, and `GET /v1/responses/{id}/input_items`. The
 * gateway's store answers for the responses it holds (another team's id is not found);
 * one it does not hold but whose creator the response-owner table knows (created before
 * the gateway kept responses) is asked of the provider that holds it, as before.
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
  const { id, inputItems } = responsePathOf(x, rest);
  if (inputItems && method !== 'GET') throw new SwitchyardError('not_found', `no such endpoint: ${x.req.method} ${x.req.url}`);
  svc.responseStore
    .getResponse(id)
    .then((record) => {
      if (record !== undefined) {
        if (record.team !== caller.principal.team) throw responseNotFound(id, 'response_id');
        return answerFromStore(svc, x, caller, method, record, inputItems).then(() => done(null));
      }
      if (inputItems) throw responseNotFound(id, 'response_id');
      const owner = ownerOf(svc.responses, caller.principal, id);
      if (owner instanceof Promise) return owner.then((o) => serveOwned(path, x, caller, method, id, o, done));
      serveOwned(path, x, caller, method, id, owner, done);
    })
    .catch((err) => done(storeError(err)));
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
  if (typeof owner === 'string') throw responseNotFound(id, 'response_id');
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
        onRelayed: null,
      },
      done,
    );
  const admitted = preCheck(x, svc, request, { bodyBytes: 0, maxTokens: 0 }, []);
  if (admitted instanceof Promise) admitted.then(serve, done);
  else serve(admitted);
}

/** The id in the path, and whether its `input_items` are asked for; any other sub-resource is not served. */
function responsePathOf(x: Exchange, rest: string): { readonly id: string; readonly inputItems: boolean } {
  const slash = rest.indexOf('/');
  const sub = slash === -1 ? '' : rest.slice(slash + 1);
  if (sub !== '' && sub !== 'input_items') throw new SwitchyardError('not_found', `no such endpoint: ${x.req.method} ${x.req.url}`);
  let id: string;
  try {
    id = decodeURIComponent(slash === -1 ? rest : rest.slice(0, slash));
  } catch {
    throw new SwitchyardError('invalid_request', 'the response id in the path is not valid percent-encoding', 'response_id');
  }
  if (id === '' || id.length > 256) throw new SwitchyardError('not_found', `no such endpoint: ${x.req.method} ${x.req.url}`);
  return { id, inputItems: sub !== '' };
}

function queryOf(url: string | undefined): string {
  const at = url?.indexOf('?') ?? -1;
  return at === -1 ? '' : (url as string).slice(at + 1);
}
