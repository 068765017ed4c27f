import type { Relayed } from '../../providers/index.js';
import type { Item, ResponseRecord } from '../../responses/index.js';
import type { ModelRequest } from '../exchange.js';
import type { Services } from '../services.js';

// A served turn, kept: once the answer's last byte has been written (never before: the
// client waits for nothing the store does), the response is stored under its id and its
// items appended to its conversation. A write that fails is counted and logged; the id is
// then not found later, which is a clear refusal, never a wrong conversation.

/** Failures logged at most once a minute, each kind. */
const LOG_INTERVAL_MS = 60_000;
const lastLogged = { response: 0, conversation: 0 };

/** Stores the turn the request's committed answer completed; does nothing for an answer that failed or was cut. */
export function saveTurn(svc: Services, request: ModelRequest, relayed: Relayed): void {
  const turn = request.turn;
  if (turn === undefined || relayed.outcome !== 'complete') return;
  if (!turn.store && turn.conversation === null) return;
  const answer = turn.answer.get();
  const response = answer?.response() ?? null;
  if (response === null || typeof response.id !== 'string') return;
  // A failed response (an error event) is not a turn a conversation continues from.
  if (response.status !== 'completed' && response.status !== 'incomplete') return;
  const store = svc.responseStore;
  if (turn.store) {
    const record: ResponseRecord = {
      id: response.id,
      team: request.principal.team,
      model: request.model,
      createdAt: typeof response.created_at === 'number' ? response.created_at : turn.createdAt,
      ancestors: turn.ancestors,
      conversation: turn.conversation,
      input: turn.input,
      response,
      ...(answer?.origin === undefined ? {} : { origin: answer.origin }),
    };
    store.putResponse(record).catch((err) => failed(svc, 'response', response.id as string, err));
  }
  if (turn.conversation !== null) {
    const output = Array.isArray(response.output) ? (response.output as Item[]) : [];
    const conversation = turn.conversation;
    store
      .appendItems(conversation, [...turn.input, ...output])
      .then((found) => {
        // Deleted while the turn was being answered: there is nothing left to add to.
        if (!found) failed(svc, 'conversation', conversation, new Error('the conversation was deleted during the turn'));
      })
      .catch((err) => failed(svc, 'conversation', conversation, err));
  }
}

function failed(svc: Services, operation: 'response' | 'conversation', id: string, err: unknown): void {
  svc.metrics.responsesStoreFailures.inc({ operation });
  const now = Date.now();
  if (now - lastLogged[operation] < LOG_INTERVAL_MS) return;
  lastLogged[operation] = now;
  svc.logger.warn({
    msg: `a served ${operation === 'response' ? 'response' : "turn's items"} could not be written to the response store`,
    id,
    store: svc.responseStore.kind,
    error: (err as Error)?.message ?? String(err),
  });
}
