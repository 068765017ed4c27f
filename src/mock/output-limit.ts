import type { TextTurn, Turn } from './conversation.js';
import type { Exchange } from './exchange.js';

// Where a model runs out of output tokens. `x-mock-max-tokens: N` gives the model an output
// limit of N tokens for that request (a provider's `headers` can send it through a
// gateway): a text answer longer than that stops there, as a model that reached its cap
// does (OpenAI `length`, Anthropic and Bedrock `max_tokens`, Gemini `MAX_TOKENS`, Responses
// `incomplete`). A header rather than the request's own cap, so that every test that sets a
// small cap for other reasons keeps its whole answer. A tool call is never cut.

export const OUTPUT_LIMIT_HEADER = 'x-mock-max-tokens';

const maxLimit = 1_000_000;

/** The header's limit; null without one, or the message for a malformed one. */
export function outputLimitOf(ex: Exchange): number | null | string {
  const value = ex.req.headers[OUTPUT_LIMIT_HEADER];
  if (value === undefined) return null;
  if (typeof value !== 'string' || !/^\d+$/.test(value) || Number(value) > maxLimit) {
    return `${OUTPUT_LIMIT_HEADER} must be a whole number from 0 to ${maxLimit}.`;
  }
  return Number(value);
}

/**
 * The turn as answered under `limitTokens` (4 characters a token): a text longer than that is
 * cut and streams exactly (never repeated to fill its chunks), and `cut` says it stopped there.
 */
export function stopAtLimit(turn: Turn, limitTokens: number | null): { readonly turn: Turn; readonly cut: boolean } {
  if (limitTokens === null || turn.kind !== 'text' || turn.text.length <= limitTokens * 4) return { turn, cut: false };
  return { turn: cutText(turn, limitTokens * 4), cut: true };
}

/**
 * The text's first `maxChars` characters, streaming exactly; chunks marked with `say:` keep
 * their boundaries up to the cut, and those wholly past it are dropped. The turn itself when
 * it is no longer than that.
 */
export function cutText(turn: TextTurn, maxChars: number): TextTurn {
  if (turn.text.length <= maxChars) return turn;
  const text = turn.text.slice(0, maxChars);
  if (turn.pieces === undefined) return { kind: 'text', text, json: true };
  const pieces: string[] = [];
  let left = maxChars;
  for (const piece of turn.pieces) {
    if (left === 0) break;
    pieces.push(piece.slice(0, left));
    left -= Math.min(left, piece.length);
  }
  return { kind: 'text', text, json: true, pieces };
}
