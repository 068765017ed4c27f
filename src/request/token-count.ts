import { sendJson } from './respond.js';
import { Unserved } from './serve-chain.js';
import type { RoutedRequest, Stage } from './stage.js';

// The gateway's own answer to /v1/messages/count_tokens on a route no Anthropic provider
// answers (none is routed, or every one failed), as a request stage: the request's text counted with o200k_base (gpt-tokenizer), the encoding of
// OpenAI's current models; for another family's model it is an approximation (each has its
// own tokenizer), documented as one and marked `x-switchyard-estimated`. Message framing is
// not counted; an image or a document block counts as IMAGE_TOKENS.
//
// The tokenizer is loaded on the first count (about 250 ms and 20 MB; its module is
// evaluated synchronously, so that first count holds the event loop for most of it). The
// reservation and cut-stream estimates on every request's path keep bytes / 4: tokenizing
// costs about 20 µs per KiB of text, which every request would pay for a count that only
// sizes a reservation.

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** What an image or a document block counts: about what Anthropic bills a 1.15-megapixel image. */
export const IMAGE_TOKENS = 1600;

/** Text counted between two turns of the event loop: a large request yields rather than hold it. */
const SLICE_CHARS = 64 * 1024;

type Counter = (text: string) => number;

let loading: Promise<Counter> | null = null;

function counter(): Promise<Counter> {
  // A tokenizer that cannot be loaded (a broken install) leaves the old estimate, a token per four characters: never a 500.
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then(
    (m) => m.countTokens as Counter,
    () => (text: string) => Math.ceil(text.length / 4),
  );
  return loading;
}

/** The input tokens of a Messages count_tokens body (already parsed and checked: a model and messages). */
export async function countInputTokens(parsed: Readonly<Record<string, unknown>>): Promise<number> {
  const pieces: string[] = [];
  let fixed = 0;
  const block = (b: unknown): void => {
    if (typeof b === 'string') pieces.push(b);
    else if (!isRecord(b)) return;
    else if (typeof b.text === 'string') pieces.push(b.text);
    else if (b.type === 'tool_use') pieces.push(typeof b.name === 'string' ? b.name : '', JSON.stringify(b.input ?? {}));
    else if (b.type === 'tool_result') content(b.content);
    else if (typeof b.thinking === 'string') pieces.push(b.thinking);
    else if (b.type === 'image' || b.type === 'document') fixed += IMAGE_TOKENS;
  };
  const content = (c: unknown): void => {
    if (Array.isArray(c)) for (const b of c) block(b);
    else block(c);
  };
  content(parsed.system);
  if (Array.isArray(parsed.messages)) for (const m of parsed.messages) if (isRecord(m)) content(m.content);
  if (Array.isArray(parsed.tools))
    for (const t of parsed.tools)
      if (isRecord(t)) pieces.push(JSON.stringify({ name: t.name, description: t.description, input_schema: t.input_schema }));
  return countTexts(pieces, fixed);
}

/** Tokens in `pieces` with o200k_base, plus `fixed` (images, documents), yielding between large slices. */
export async function countTexts(pieces: readonly string[], fixed: number): Promise<number> {
  const count = await counter();
  let tokens = fixed;
  let since = 0;
  for (const piece of pieces) {
    for (let at = 0; at < piece.length; at += SLICE_CHARS) {
      if (since >= SLICE_CHARS) {
        since = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      const slice = piece.length <= SLICE_CHARS ? piece : piece.slice(at, at + SLICE_CHARS);
      tokens += count(slice);
      since += slice.length;
    }
  }
  return tokens;
}

/**
 * The count_tokens stage: a route with no candidate that counts is answered with the
 * estimate at once, without the chain; one whose every candidate failed is answered with it
 * in place of the chain's error, unless the client has gone (the error then stands, for
 * the record).
 */
export const estimateUnserved: Stage = (next) => (r, done) => {
  if (r.candidates.length === 0) return answerEstimate(r, done);
  next(r, (err) => {
    if (err instanceof Unserved && !r.x.res.destroyed) answerEstimate(r, done);
    else done(err);
  });
};

/** The request's text counted (token-count.ts), answered as Anthropic's count and marked as an estimate. */
function answerEstimate(r: RoutedRequest, done: (err: unknown) => void): void {
  countInputTokens(r.request.parsed).then((inputTokens) => {
    const res = r.x.res;
    if (!res.destroyed) {
      res.setHeader('x-switchyard-estimated', 'true');
      sendJson(res, 200, { input_tokens: inputTokens });
    }
    done(null);
  }, done);
}
