import type { Item } from '../../responses/index.js';
import type { AttemptRequest, Wrap } from '../attempt.js';

// `truncation: "auto"`: a conversation rebuilt from the store may be longer than the model
// a turn reaches takes (a failover to a smaller context, a long chain). When a candidate
// answers that the prompt is too long (the chain treats that answer as a failure for such a
// turn: serve-model.ts adds `context_length` to its fallback_on), the oldest turns are
// dropped and the same candidate is asked again, before the chain moves on, until the
// request fits or only this turn's own input is left. `disabled` (the default) relays the
// provider's answer, as the API does. A wrap of each attempt, so the request is admitted
// and recorded once whatever it takes.

/** Whether the turn may be shortened: `truncation: auto` with earlier turns to drop. */
export function truncatable(parsed: Readonly<Record<string, unknown>>, history: readonly Item[]): boolean {
  return parsed.truncation === 'auto' && history.length > 0;
}

export const withTruncation: Wrap = (next) => {
  const attempt: ReturnType<Wrap> = (a, done) => {
    const request = a.admitted.request;
    const turn = request.turn;
    if (turn === undefined || !truncatable(request.parsed, turn.history)) return next(a, done);
    next(a, (r) => {
      if (r.kind !== 'failed' || r.reason !== 'context_length') return done(r);
      const history = withoutOldestTurns(turn.history);
      a.admitted.x.failedOver({
        provider: a.candidate.provider.name,
        candidate: a.candidate.stableId,
        reason: 'context_length',
        detail: `truncated: ${turn.history.length - history.length} oldest item(s) dropped`,
      });
      const shorter: AttemptRequest = { ...a, admitted: { ...a.admitted, request: { ...request, turn: { ...turn, history } } } };
      attempt(shorter, done);
    });
  };
  return attempt;
};

/**
 * The history less its older half, cut where a user's message starts a turn, so no tool
 * output is left without the call it answers; nothing when no later turn starts.
 */
export function withoutOldestTurns(history: readonly Item[]): readonly Item[] {
  for (let at = Math.max(1, Math.floor(history.length / 2)); at < history.length; at += 1) {
    const item = history[at] as Item;
    if (item.type === 'message' && item.role === 'user') return history.slice(at);
  }
  return [];
}
