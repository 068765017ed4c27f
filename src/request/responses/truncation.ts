import { SwitchyardError } from '../../errors.js';
import type { Item } from '../../responses/index.js';
import type { Stage } from '../stage.js';

// `truncation: "auto"`: a conversation rebuilt from the store may be longer than the model
// that serves this turn takes (a failover to a smaller context, a long chain). When every
// candidate says so (the chain fails over on a context-length answer for such a turn), the
// oldest turns are dropped and the request is tried again, until it fits or only this
// turn's own input is left; then the client hears `context_length_exceeded`. `disabled`
// (the default) answers that at once, as the API does.

/** Whether the turn may be shortened: `truncation: auto` with earlier turns to drop. */
export function truncatable(parsed: Readonly<Record<string, unknown>>, history: readonly Item[]): boolean {
  return parsed.truncation === 'auto' && history.length > 0;
}

export const truncateOnOverflow: Stage = (next) => (r, done) => {
  const turn = r.request.turn;
  if (turn === undefined || !truncatable(r.request.parsed, turn.history)) return next(r, done);
  const attempt = (routed: typeof r): void =>
    next(routed, (err) => {
      const t = routed.request.turn;
      const overflow = err instanceof SwitchyardError && err.code === 'context_length_exceeded';
      if (!overflow || t === undefined || t.history.length === 0 || r.x.res.headersSent || r.x.res.destroyed) return done(err);
      attempt({ ...routed, request: { ...routed.request, turn: { ...t, history: withoutOldestTurns(t.history) } } });
    });
  attempt(r);
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
