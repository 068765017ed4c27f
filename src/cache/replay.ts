import type { TokenUsage } from '../providers/index.js';
import { usageFromOpenai, usageToOpenai } from '../providers/index.js';
import { assembledAnthropic, assembledCompletion, assembledOpenaiChat, assembledResponse, completionUsage } from './answer-assembly.js';
import { streamedAnthropic, streamedCompletion, streamedOpenaiChat, streamedResponse } from './answer-streaming.js';
import type { CacheEntry } from './entry.js';
import { isRecord, jsonObject, type ReadEvent, readEvents } from './event-text.js';
import { type Fresh, IdMap, renamedResponse } from './fresh-ids.js';

// A hit's answer, written from the entry in the form the request asks for. In the form it
// was stored in, it is the stored answer with fresh ids and a fresh clock, byte for byte
// otherwise (a Response object is re-serialised: the same in value); in the other form it
// is rebuilt: a stream assembled into the whole answer, or a whole answer streamed. Pure:
// the ids and the time come in through `Fresh`. An entry that cannot be replayed (a body
// that is not JSON, a stream without its whole Response, embeddings asked as a stream) is
// a TypeError, which the caller answers as a miss.

export { type Fresh, type FreshIdKind, freshIds } from './fresh-ids.js';

export interface ReplayOptions {
  /** OpenAI chat completions and completions: the client asked for the usage-only last chunk (`stream_options.include_usage`). */
  readonly includeUsage?: boolean;
}

/** The answers an entry can hold: its endpoint in its protocol. */
type AnswerKind = 'chat' | 'messages' | 'completions' | 'responses' | 'embeddings';

function kindOf(entry: CacheEntry): AnswerKind {
  const { operation, protocol } = entry;
  if (operation === 'chat' && protocol === 'openai') return 'chat';
  if (operation === 'chat' && protocol === 'anthropic') return 'messages';
  if (operation === 'responses' && protocol === 'responses') return 'responses';
  if ((operation === 'completions' || operation === 'embeddings') && protocol === 'openai') return operation;
  throw new TypeError(`an entry of ${operation} in the ${protocol} protocol cannot be replayed`);
}

function bodyOf(entry: CacheEntry): string {
  if (entry.body === undefined) throw new TypeError('a whole entry holds no body');
  return entry.body;
}

function eventsOf(entry: CacheEntry): readonly string[] {
  if (entry.events === undefined) throw new TypeError('a streamed entry holds no events');
  return entry.events;
}

/** The JSON body for a request that did not ask for a stream. */
export function replayWhole(entry: CacheEntry, fresh: Fresh): string {
  const kind = kindOf(entry);
  const ids = new IdMap(fresh);
  if (entry.form === 'whole') return renamedBody(kind, bodyOf(entry), ids, fresh);
  const events = readEvents(eventsOf(entry));
  switch (kind) {
    case 'chat':
      return assembledOpenaiChat(events, ids, fresh, entry.usage);
    case 'messages':
      return assembledAnthropic(events, ids, entry.usage);
    case 'responses':
      return assembledResponse(events, ids, fresh);
    case 'completions':
      return assembledCompletion(events, ids, fresh, entry.usage);
    case 'embeddings':
      throw new TypeError('embeddings are never streamed');
  }
}

/** The server-sent events for a request that asked for a stream, each one whole, in order. */
export function replayEvents(entry: CacheEntry, fresh: Fresh, options: ReplayOptions = {}): string[] {
  const kind = kindOf(entry);
  if (kind === 'embeddings') throw new TypeError('embeddings are never streamed');
  const ids = new IdMap(fresh);
  const includeUsage = options.includeUsage === true;
  if (entry.form === 'whole') {
    const body = bodyOf(entry);
    switch (kind) {
      case 'chat':
        return streamedOpenaiChat(body, ids, fresh, includeUsage, entry.usage);
      case 'messages':
        return streamedAnthropic(body, ids, entry.usage);
      case 'responses':
        return streamedResponse(body, ids, fresh);
      case 'completions':
        return streamedCompletion(body, ids, fresh, includeUsage, entry.usage);
    }
  }
  const events = readEvents(eventsOf(entry));
  if (kind === 'responses') return renamedResponseEvents(events, ids, fresh);
  if (kind === 'messages') {
    const start = events.find((e) => e.data?.includes('"message_start"'));
    const message = start?.data == null ? null : jsonObject(start.data)?.message;
    if (isRecord(message)) ids.rename(message.id, 'msg');
    return events.map((e) => ids.rewrite(e.text));
  }
  return renamedChunks(events, ids, fresh, includeUsage, entry.usage, kind === 'chat' ? 'chatcmpl' : 'cmpl');
}

/** A `created` member with its number: in an OpenAI chunk or body every nested value the client's text could hold is a string, so this is the top level's. */
const CREATED = /"created"(\s*:\s*)\d+/g;

/** A body whose first member is its id (as OpenAI and Anthropic write them): the id read without parsing the body. */
const LEADING_ID = /^\{\s*"id"\s*:\s*"([A-Za-z0-9_.:-]{1,200})"/;

function renamedBody(kind: AnswerKind, body: string, ids: IdMap, fresh: Fresh): string {
  if (kind === 'embeddings') return body;
  const idKind = kind === 'chat' ? 'chatcmpl' : kind === 'completions' ? 'cmpl' : 'msg';
  const leading = kind === 'responses' ? null : LEADING_ID.exec(body);
  if (leading !== null) ids.rename(leading[1], idKind);
  else {
    const parsed = jsonObject(body);
    if (parsed === null) throw new TypeError('the entry body is not a JSON object');
    if (kind === 'responses') return JSON.stringify(renamedResponse(parsed, ids, fresh.nowS));
    ids.rename(parsed.id, idKind);
  }
  const renamed = ids.rewrite(body);
  return kind === 'messages' ? renamed : renamed.replace(CREATED, `"created"$1${fresh.nowS}`);
}

/**
 * An OpenAI chunk stream (chat or completions) renamed. The usage-only chunk (no choices) is
 * left out for a client that did not ask for it; one that did gets it, made from the
 * entry's usage, when the stream reported none (its first client did not ask).
 */
function renamedChunks(
  events: readonly ReadEvent[],
  ids: IdMap,
  fresh: Fresh,
  includeUsage: boolean,
  entryUsage: TokenUsage | null,
  kind: 'chatcmpl' | 'cmpl',
): string[] {
  const out: string[] = [];
  let usageSeen = false;
  let done = -1;
  let head: Record<string, unknown> | null = null;
  for (const event of events) {
    if (event.data === '[DONE]') done = out.length;
    const chunk = event.data === null || event.data === '[DONE]' ? null : jsonObject(event.data);
    if (chunk !== null) {
      ids.rename(chunk.id, kind);
      if (head === null && typeof chunk.id === 'string' && chunk.id !== '') head = chunk;
      if (usageFromOpenai(chunk.usage) !== null) {
        usageSeen = true;
        if (!includeUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0) continue;
      }
    }
    out.push(ids.rewrite(event.text).replace(CREATED, `"created"$1${fresh.nowS}`));
  }
  if (includeUsage && !usageSeen && entryUsage !== null) {
    const usage = kind === 'chatcmpl' ? usageToOpenai(entryUsage) : completionUsage(entryUsage);
    const chunk = {
      id: ids.rename(head?.id, kind),
      object: kind === 'chatcmpl' ? 'chat.completion.chunk' : 'text_completion',
      created: fresh.nowS,
      model: typeof head?.model === 'string' ? head.model : '',
      choices: [],
      usage,
    };
    out.splice(done === -1 ? out.length : done, 0, `data: ${JSON.stringify(chunk)}\n\n`);
  }
  return out;
}

/**
 * A Responses event stream renamed. Every id is learnt before any event is written (the
 * final Response names every item, and an event may name an item before the one that adds
 * it): the events that carry the Response are rewritten with it renamed and dated now,
 * and every other has its ids replaced.
 */
function renamedResponseEvents(events: readonly ReadEvent[], ids: IdMap, fresh: Fresh): string[] {
  const parsed = events.map((e) => (e.data === null ? null : jsonObject(e.data)));
  for (const p of parsed) {
    if (p === null) continue;
    if (isRecord(p.response)) renamedResponse(p.response, ids, fresh.nowS);
    if (isRecord(p.item)) ids.rename(p.item.id, 'item');
  }
  return events.map((e, i) => {
    const p = parsed[i];
    if (p === null || p === undefined || !isRecord(p.response)) return ids.rewrite(e.text);
    return `${e.name === '' ? '' : `event: ${e.name}\n`}data: ${JSON.stringify(p)}\n\n`;
  });
}
