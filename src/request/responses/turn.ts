import { SwitchyardError } from '../../errors.js';
import { type Item, newId, type ResponseRecord, type ResponseStore, ResponseStoreUnavailable } from '../../responses/index.js';
import type { ModelRequest } from '../exchange.js';
import { AnswerSlot, type ResponsesTurn } from './turn-state.js';

export { AnswerSlot, type ResponsesTurn, type TurnAnswer } from './turn-state.js';

// One Responses API request as a turn of a conversation the gateway holds: this turn's
// input items (ids given, `item_reference`s resolved from the store) and the items of every
// turn before it (the `previous_response_id` chain, or the `conversation`'s items), read
// from the gateway's store before anything is routed. Any candidate, of any protocol, can
// then be sent the whole conversation: it survives a failover, a withdrawn provider and a
// reload. A request that needs nothing from the store keeps a pass-through to a provider
// that speaks the Responses API itself.

/** The most ancestors a record lists: a longer chain keeps its latest turns. */
const MAX_ANCESTORS = 1000;

/** What a turn's resolution needs beyond the request: the store and its bounds. */
export interface TurnSources {
  readonly store: ResponseStore;
  /** routing.responses.max_items: the most items a rebuilt conversation may hold. */
  readonly maxItems: number;
}

/**
 * The request's turn. Synchronous when it needs nothing from the store (no previous
 * response, conversation or reference); otherwise a promise that rejects with a 404
 * (`response_not_found`, `conversation_not_found`: unknown, or another team's) or a 503
 * (`store_unavailable`) before anything reaches a provider.
 */
export function turnOf(request: ModelRequest, sources: TurnSources): ResponsesTurn | Promise<ResponsesTurn> {
  const parsed = request.parsed;
  const previous = optionalId(parsed.previous_response_id, 'previous_response_id');
  const conversation = conversationOf(parsed.conversation);
  if (previous !== null && conversation !== null) {
    throw new SwitchyardError('invalid_request', 'previous_response_id and conversation cannot both be given', 'conversation');
  }
  const store = parsed.store !== false;
  if (parsed.store !== undefined && parsed.store !== null && typeof parsed.store !== 'boolean') {
    throw new SwitchyardError('invalid_request', 'store must be a boolean', 'store');
  }
  const items = inputItems(parsed.input);
  const base = {
    previousResponseId: previous,
    conversation,
    store,
    responseId: newId('resp'),
    createdAt: Math.floor(Date.now() / 1000),
    answer: new AnswerSlot(),
  };
  const references = items.some((i) => i.type === 'item_reference');
  if (previous === null && conversation === null && !references) {
    return { ...base, input: items as Item[], history: [], rewritten: false, ancestors: [], legacy: false, heldBy: NONE_HELD };
  }
  return resolve(request, sources, items, base);
}

async function resolve(
  request: ModelRequest,
  sources: TurnSources,
  items: readonly Record<string, unknown>[],
  base: Omit<ResponsesTurn, 'input' | 'history' | 'rewritten' | 'ancestors' | 'legacy' | 'heldBy'>,
): Promise<ResponsesTurn> {
  const { store, maxItems } = sources;
  const team = request.principal.team;
  try {
    const heldBy = new Map<string, string>();
    const input = await resolveReferences(store, team, items, heldBy);
    let history: readonly Item[] = [];
    let ancestors: readonly string[] = [];
    if (base.previousResponseId !== null) {
      const chain = await chainOf(store, team, base.previousResponseId);
      if (chain === null) return { ...base, input: items as Item[], history: [], ancestors: [], rewritten: false, legacy: true, heldBy };
      for (const record of chain) noteHeld(record, heldBy);
      ancestors = [...(chain.at(-1)?.ancestors ?? []), base.previousResponseId].slice(-MAX_ANCESTORS);
      history = chain.flatMap(itemsOfTurn);
    } else if (base.conversation !== null) {
      const conversation = await store.getConversation(base.conversation);
      if (conversation === undefined || conversation.team !== team) throw conversationNotFound(base.conversation);
      history = (await store.allItems(base.conversation, maxItems + 1)) ?? [];
    }
    if (history.length + input.length > maxItems) {
      throw new SwitchyardError(
        'invalid_request',
        `the conversation holds ${history.length + input.length} items, more than routing.responses.max_items (${maxItems})`,
        base.previousResponseId !== null ? 'previous_response_id' : 'conversation',
      );
    }
    return { ...base, input, history, ancestors, rewritten: true, legacy: false, heldBy };
  } catch (err) {
    throw storeError(err);
  }
}

/**
 * The previous response and the ones before it, oldest first; null when the store does not
 * hold it (the owner table may); another team's is not found.
 */
async function chainOf(store: ResponseStore, team: string | null, id: string): Promise<ResponseRecord[] | null> {
  const last = await store.getResponse(id);
  if (last === undefined) return null;
  if (last.team !== team) throw responseNotFound(id, 'previous_response_id');
  const before = last.ancestors.length === 0 ? [] : await store.getResponses(last.ancestors);
  // An ancestor deleted (or expired) since leaves its turn out; one of another team never joins.
  const kept = before.filter((r): r is ResponseRecord => r !== undefined && r.team === team);
  return [...kept, last];
}

const NONE_HELD: ReadonlyMap<string, string> = new Map();

/** The reasoning items of a response its provider wrote and keeps. */
function noteHeld(record: ResponseRecord, heldBy: Map<string, string>): void {
  if (record.origin === undefined || !Array.isArray(record.response.output)) return;
  for (const item of record.response.output as Item[]) if (item?.type === 'reasoning') heldBy.set(item.id, record.origin);
}

/** A stored turn's items: its input, then what the model answered. */
export function itemsOfTurn(record: ResponseRecord): readonly Item[] {
  const output = Array.isArray(record.response.output) ? (record.response.output as Item[]) : [];
  return [...record.input, ...output];
}

async function resolveReferences(
  store: ResponseStore,
  team: string | null,
  items: readonly Record<string, unknown>[],
  heldBy: Map<string, string>,
): Promise<Item[]> {
  const out: Item[] = [];
  for (const [i, item] of items.entries()) {
    if (item.type !== 'item_reference') {
      out.push(item as Item);
      continue;
    }
    const found = await store.getResponseItem(item.id as string);
    if (found === undefined || found.team !== team) throw responseNotFound(item.id as string, `input[${i}].id`);
    if (found.origin !== undefined && found.item.type === 'reasoning') heldBy.set(found.item.id, found.origin);
    out.push(found.item);
  }
  return out;
}

/**
 * The request's `input` as items, each with an id (a string is one user message): what the
 * store keeps as the turn's input and lists at `input_items`. Only what the gateway relies
 * on is checked here; the items' content is checked by the translation that reads it.
 */
export function inputItems(input: unknown): Record<string, unknown>[] {
  if (typeof input === 'string') {
    return [{ id: newId('msg'), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: input }] }];
  }
  if (input === undefined || input === null) return [];
  if (!Array.isArray(input)) throw new SwitchyardError('invalid_request', 'input must be a string or an array of items', 'input');
  return input.map((item, i) => normalItem(item, i));
}

function normalItem(item: unknown, i: number): Record<string, unknown> {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    throw new SwitchyardError('invalid_request', `input[${i}] must be an object`, `input[${i}]`);
  }
  const it = item as Record<string, unknown>;
  const type = it.type ?? (it.role !== undefined ? 'message' : undefined);
  if (typeof type !== 'string') throw new SwitchyardError('invalid_request', `input[${i}].type must be a string`, `input[${i}].type`);
  if (type === 'item_reference') {
    if (typeof it.id !== 'string' || it.id === '' || it.id.length > 256) {
      throw new SwitchyardError('invalid_request', `input[${i}].id must be a non-empty string`, `input[${i}].id`);
    }
    return it;
  }
  const id = typeof it.id === 'string' && it.id !== '' ? it.id : newId(prefixOf(type));
  if (type !== 'message') return { ...it, type, id };
  // A message's content as parts, as the API lists it back.
  const role = it.role;
  if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') {
    throw new SwitchyardError('invalid_request', `input[${i}].role must be user, assistant, system or developer`, `input[${i}].role`);
  }
  const content =
    typeof it.content === 'string' ? [{ type: role === 'assistant' ? 'output_text' : 'input_text', text: it.content }] : it.content;
  if (!Array.isArray(content)) {
    throw new SwitchyardError('invalid_request', `input[${i}].content must be a string or an array of parts`, `input[${i}].content`);
  }
  const status = typeof it.status === 'string' ? it.status : 'completed';
  return { ...it, type, id, role, status, content };
}

function prefixOf(type: string): 'msg' | 'fc' | 'fco' | 'rs' | 'mcp' {
  switch (type) {
    case 'function_call':
      return 'fc';
    case 'function_call_output':
      return 'fco';
    case 'reasoning':
      return 'rs';
    case 'message':
      return 'msg';
    default:
      return 'mcp';
  }
}

function optionalId(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value === '' || value.length > 256) {
    throw new SwitchyardError('invalid_request', `${field} must be a non-empty string of at most 256 characters`, field);
  }
  return value;
}

/** `conversation`: an id, or `{id}`. */
function conversationOf(value: unknown): string | null {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return optionalId((value as Record<string, unknown>).id, 'conversation.id');
  }
  return optionalId(value, 'conversation');
}

export function responseNotFound(id: string, field: string): SwitchyardError {
  return new SwitchyardError('response_not_found', `no response or item with id "${id}" is held for this caller`, field);
}

export function conversationNotFound(id: string): SwitchyardError {
  return new SwitchyardError('conversation_not_found', `no conversation with id "${id}" is held for this caller`, 'conversation');
}

/** A store failure as the client's 503; the request's own refusals as they are. */
export function storeError(err: unknown): unknown {
  if (!(err instanceof ResponseStoreUnavailable)) return err;
  return new SwitchyardError('store_unavailable', `the response store cannot be read right now: ${err.message}`, null, {
    'retry-after': '1',
  });
}
