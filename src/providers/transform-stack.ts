import type { TokenUsage } from './metering.js';
import { usageFromJson } from './openai-body.js';
import type { MaybeAsync, PlainAnswer, RelayTransform, RelayTransformAsync } from './relay-transform.js';
import { keepTail, usageOfTail } from './usage-tail.js';

// What happens to an answer on its way to the client, as one stack composed by one
// function: first the translation (from the upstream's protocol to the client's, or the
// reading of another usage shape, or an event taken out: relay-transform.ts), then the
// transforms in the client's protocol, in order (the cost headers, the guardrails). A
// transform of the stack sees what the client is about to get: a whole plain body, or
// whole server-sent events of a stream (the relay hands on whole events only), already in
// the client's protocol. The relay takes the composed result as its one transform; an
// empty stack over no translation composes to none, and the relay's pass-through path
// runs byte for byte. A transform's part may answer with a promise (a guardrail asking a
// service): the parts after it wait for it, and so does the relay.

/** Headers computed from a response's usage (null when it reported none), or null for none. */
export type UsageHeadersOf = (usage: TokenUsage | null) => Readonly<Record<string, string>> | null;

/** A transform in the client's protocol. Each part is optional: one it leaves out passes that part on as it is. */
export interface AnswerTransform {
  /** A whole plain answer (any status, the status the client gets): the body the client gets instead. */
  body?(status: number, body: Buffer | string): MaybeAsync<Buffer | string>;
  /** Whole events of a stream (one or more, never a part of one): the bytes the client gets instead (possibly none). */
  events?(events: Buffer | string): MaybeAsync<Buffer | string>;
  /** The stream ended: the last bytes this transform has for the client (what it held back), which the transforms after it see as events. */
  end?(): MaybeAsync<Buffer | string>;
  /** Headers from the usage the answer reports: on a buffered answer, or as trailers of a stream that names them in `trailers`. */
  readonly usageHeaders?: UsageHeadersOf;
  /** For a stream: the names `usageHeaders` returns, announced in `Trailer` and sent after the body. */
  readonly trailers?: string;
}

const EMPTY_STACK: readonly AnswerTransform[] = Object.freeze([]);

/**
 * The relay's one transform: `translation` (none: the bytes as they come), then `stack`
 * in order. What neither touches stays undefined, so the relay keeps its own path for it:
 * no transform at all for an empty stack over no translation; headers only (no body part)
 * when the stack only adds headers from the usage.
 */
export function composeTransforms(
  translation: RelayTransform | undefined,
  stack: readonly AnswerTransform[] = EMPTY_STACK,
): RelayTransformAsync | undefined {
  if (stack.length === 0) return translation;
  if (stack.length === 1 && translation === undefined) {
    // Headers alone over the pass-through (a priced answer's cost): the one transform is itself the relay's, with no body part.
    const only = stack[0] as AnswerTransform;
    if (only.body === undefined && only.events === undefined && only.end === undefined) return only as RelayTransformAsync;
  }
  let rewritesBody = false;
  let rewritesEvents = false;
  for (const t of stack) {
    if (t.body !== undefined) rewritesBody = true;
    if (t.events !== undefined || t.end !== undefined) rewritesEvents = true;
  }
  const headers = headersOf(translation, stack);
  const plain = rewritesBody ? plainThrough(translation, stack) : translation?.plain?.bind(translation);
  if (!rewritesEvents) {
    if (translation === undefined) return { plain, usageHeaders: headers.usageHeaders, trailers: headers.trailers };
    return {
      plain,
      chunk: translation.chunk?.bind(translation),
      end: translation.end?.bind(translation),
      fail: translation.fail?.bind(translation),
      // A getter: the translation's usage grows as the stream is read.
      get usage() {
        return translation.usage;
      },
      usageHeaders: headers.usageHeaders,
      trailers: headers.trailers,
    };
  }
  return streamThrough(translation, stack, plain, headers);
}

/** A whole plain body through the stack's `body` parts, in order: also the seam for an answer the relay does not carry (a tool's result). */
export function transformBody(stack: readonly AnswerTransform[], status: number, body: Buffer | string): MaybeAsync<Buffer | string> {
  return bodyFrom(stack, 0, status, body);
}

function bodyFrom(stack: readonly AnswerTransform[], from: number, status: number, body: Buffer | string): MaybeAsync<Buffer | string> {
  let out = body;
  for (let i = from; i < stack.length; i++) {
    const t = stack[i] as AnswerTransform;
    if (t.body === undefined) continue;
    const next = t.body(status, out);
    if (next instanceof Promise) return next.then((b) => bodyFrom(stack, i + 1, status, b));
    out = next;
  }
  return out;
}

/** Whole events through the stack's `events` parts, in order. */
export function transformEvents(stack: readonly AnswerTransform[], events: Buffer | string): MaybeAsync<Buffer | string> {
  return eventsFrom(stack, 0, events);
}

function eventsFrom(stack: readonly AnswerTransform[], from: number, events: Buffer | string): MaybeAsync<Buffer | string> {
  let out = events;
  for (let i = from; i < stack.length; i++) {
    const t = stack[i] as AnswerTransform;
    if (t.events === undefined) continue;
    if (out.length === 0) return out;
    const next = t.events(out);
    if (next instanceof Promise) return next.then((e) => eventsFrom(stack, i + 1, e));
    out = next;
  }
  return out;
}

/**
 * The end of a stream through the stack: the translation's last events (`carried`) through
 * each transform, then that transform's own `end`, both seen by the transforms after it.
 */
function endFrom(stack: readonly AnswerTransform[], i: number, carried: Buffer | string): MaybeAsync<string> {
  if (i >= stack.length) return String(carried);
  const t = stack[i] as AnswerTransform;
  const passed = t.events === undefined || carried.length === 0 ? carried : t.events(carried);
  const withOwn = (p: Buffer | string): MaybeAsync<string> => {
    if (t.end === undefined) return endFrom(stack, i + 1, p);
    const own = t.end();
    if (own instanceof Promise) return own.then((o) => endFrom(stack, i + 1, String(p) + String(o)));
    return endFrom(stack, i + 1, String(p) + String(own));
  };
  return passed instanceof Promise ? passed.then(withOwn) : withOwn(passed);
}

/** The translation's plain part (or the pass-through's: the bytes, with OpenAI's usage), then the stack's body parts. */
function plainThrough(
  translation: RelayTransform | undefined,
  stack: readonly AnswerTransform[],
): (status: number, body: Buffer) => MaybeAsync<PlainAnswer> {
  const first = translation?.plain?.bind(translation) ?? passThroughPlain;
  return (status, body) => {
    const answer = first(status, body);
    const out = transformBody(stack, answer.status, answer.body);
    if (out instanceof Promise) return out.then((b) => ({ status: answer.status, body: b, usage: answer.usage }));
    return { status: answer.status, body: out, usage: answer.usage };
  };
}

/** What the relay does with a plain body when nothing translates it: relayed as it is, billed on OpenAI's usage. */
function passThroughPlain(status: number, body: Buffer): PlainAnswer {
  return { status, body, usage: status < 300 ? usageFromJson(body) : null };
}

type Plain = RelayTransformAsync['plain'];
type Headers = Pick<RelayTransform, 'usageHeaders' | 'trailers'>;

/**
 * The translation's stream parts (or the pass-through's: the events as they are, billed on
 * what their tail reports), then the stack's event parts. The translation's last events
 * (its `end`) go through the stack too; its error event (`fail`) is the gateway's own words
 * and does not.
 */
function streamThrough(
  translation: RelayTransform | undefined,
  stack: readonly AnswerTransform[],
  plain: Plain,
  headers: Headers,
): RelayTransformAsync {
  const { usageHeaders, trailers } = headers;
  const end = translation?.end;
  const last = (): MaybeAsync<string> => endFrom(stack, 0, end === undefined ? '' : end.call(translation));
  const fail = translation?.fail?.bind(translation);
  const chunk = translation?.chunk;
  if (translation !== undefined && chunk !== undefined) {
    return {
      plain,
      chunk: (events) => transformEvents(stack, chunk.call(translation, events)),
      end: last,
      fail,
      // A getter: the translation's usage grows as the stream is read.
      get usage() {
        return translation.usage;
      },
      usageHeaders,
      trailers,
    };
  }
  const tail: Buffer[] = [];
  let tailBytes = 0;
  return {
    plain,
    chunk(events) {
      tailBytes = keepTail(tail, tailBytes, events);
      return transformEvents(stack, events);
    },
    end: last,
    fail,
    get usage() {
      return usageOfTail(tail, tailBytes, true);
    },
    usageHeaders,
    trailers,
  };
}

/** The usage headers of the translation and of every transform of the stack, merged; their trailer names joined. */
function headersOf(translation: RelayTransform | undefined, stack: readonly AnswerTransform[]): Headers {
  const parts: Array<NonNullable<AnswerTransform['usageHeaders']>> = [];
  const names: string[] = [];
  for (const t of translation === undefined ? stack : [translation, ...stack]) {
    if (t.usageHeaders !== undefined) parts.push(t.usageHeaders.bind(t));
    if (t.trailers !== undefined) names.push(t.trailers);
  }
  const trailers = names.length === 0 ? undefined : names.join(', ');
  if (parts.length === 0) return { trailers };
  if (parts.length === 1) return { usageHeaders: parts[0], trailers };
  return {
    usageHeaders(usage) {
      let merged: Record<string, string> | null = null;
      for (const part of parts) {
        const some = part(usage);
        if (some !== null) merged = merged === null ? { ...some } : Object.assign(merged, some);
      }
      return merged;
    },
    trailers,
  };
}
