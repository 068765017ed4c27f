import { SwitchyardError } from '../../errors.js';
import {
  type CheckSubject,
  describeBlock,
  type GuardrailVerdict,
  itemTexts,
  Mapping,
  type PhaseRun,
  requestTexts,
  runPhase,
  type TextKind,
  type TextSlot,
  withTexts,
} from '../../guardrails/index.js';
import type { Item } from '../../responses/index.js';
import type { ModelRequest } from '../exchange.js';
import type { ResponsesTurn } from '../responses/turn-state.js';
import type { Stage } from '../stage.js';
import { askFor, isGuardrailQuestion } from './ask.js';
import { attachedFor } from './attached.js';
import type { RequestGuard } from './guard.js';

// The input phase, as a request stage: after routing, before the pre-check, so a blocked
// request reserves nothing and reaches no upstream. It reads every text of the request
// (messages, system prompts, tool results and calls, a Responses turn's input items), runs
// the request's input guardrails over them in order, and either refuses the request (400
// `content_filter` naming the guardrail and its categories, never the text; 503
// `guardrail_unavailable` for a fail_closed service that could not answer) or hands on a
// request whose texts are masked, with what its answer needs: the output guardrails and the
// placeholders to restore. A route without guardrails passes through untouched.

/** The kind of texts each endpoint carries, by the client's protocol; null: none checked. */
export function textKindOf(request: Pick<ModelRequest, 'operation' | 'protocol'>): TextKind | null {
  switch (request.operation) {
    case 'chat':
      return request.protocol === 'anthropic' ? 'chat-anthropic' : 'chat-openai';
    case 'completions':
      return 'completions';
    case 'embeddings':
      return 'embeddings';
    case 'responses':
      return 'responses';
    case 'count_tokens':
      return null;
  }
}

export const guardInput: Stage = (next) => (r, done) => {
  const { x, request } = r;
  if (request.stored !== null) return next(r, done);
  if (isGuardrailQuestion(x)) {
    // A judge's question runs no guardrail (a judge asked about it would never end), and is billed as the guardrail's.
    x.askedByGuardrail();
    return next(r, done);
  }
  const attached = attachedFor(request.gen, request.keyring, request.principal, request.model);
  const kind = textKindOf(request);
  if (kind === null || (attached.input.length === 0 && attached.output.length === 0)) return next(r, done);
  const subject: CheckSubject = {
    protocol: request.protocol,
    route: request.model,
    model: request.model,
    team: request.principal.team,
    key: request.principal.keyId,
  };
  const ask = askFor(x);
  const mapping = new Mapping();
  const guard: RequestGuard = { kind, output: attached.output, restore: mapping, subject, ask };
  if (attached.input.length === 0) return next({ ...r, request: { ...request, guard } }, done);
  const turn = request.turn;
  const slots = requestTexts(kind, request.parsed);
  const items = turn === undefined ? [] : itemTexts(turn.input);
  const run = runPhase({ phase: 'input', guardrails: attached.input, texts: [...slots, ...items], mapping, subject, ask });
  const decide = (result: PhaseRun): void => {
    for (const v of result.verdicts) x.guardrailChecked(v);
    refuseIfStopped(result);
    next({ ...r, request: masked(request, guard, result, slots, items) }, done);
  };
  if (run instanceof Promise) run.then(decide).catch(done);
  else decide(run);
};

/** The request refused when a guardrail blocked it or a fail_closed one could not answer. */
function refuseIfStopped(result: PhaseRun): void {
  const blocked = result.blocked;
  if (blocked !== null) throw blockedError(blocked);
  const unavailable = result.unavailable;
  if (unavailable !== null) {
    throw new SwitchyardError(
      'guardrail_unavailable',
      `guardrail ${unavailable.guardrail} could not check the request (${unavailable.error?.kind ?? 'error'}) and fails closed; try again later`,
    );
  }
}

export function blockedError(v: GuardrailVerdict): SwitchyardError {
  return new SwitchyardError('content_filter', `the request was blocked by ${describeBlock(v.guardrail, v.categories)}`);
}

/** The request with its masked texts written back (its body, and a Responses turn's items), carrying its guard. */
function masked(
  request: ModelRequest,
  guard: RequestGuard,
  result: PhaseRun,
  slots: readonly TextSlot[],
  items: readonly TextSlot[],
): ModelRequest {
  if (!result.changed) return { ...request, guard };
  const texts = result.texts.map((t) => t.text);
  const parsed = withTexts(request.parsed, slots, texts.slice(0, slots.length));
  const raw = parsed === request.parsed ? request.raw : Buffer.from(JSON.stringify(parsed));
  let turn: ResponsesTurn | undefined = request.turn;
  if (turn !== undefined && items.length > 0) {
    const input = withTexts(turn.input as readonly Item[], items, texts.slice(slots.length));
    // The masked items are what the provider is sent (the gateway writes the body) and what the store keeps.
    if (input !== turn.input) turn = { ...turn, input, rewritten: true };
  }
  return { ...request, parsed, raw, turn, guard };
}
