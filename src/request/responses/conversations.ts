import { SwitchyardError } from '../../errors.js';
import { type ConversationRecord, type Item, newId, type ResponseStore } from '../../responses/index.js';
import { parseObject } from '../chat-request.js';
import type { Caller, Exchange } from '../exchange.js';
import { sendJson } from '../respond.js';
import { listObject, pageQueryOf } from './pages.js';
import { conversationNotFound, inputItems } from './turn.js';

// OpenAI's Conversations API, served by the gateway from its own store: a conversation and
// its items belong to the team that created them, on every replica that shares the store;
// another team's id is not found. Nothing here reaches a provider or is billed. A response
// created with `conversation` reads its items as context and appends its turn to it.

/** OpenAI's bounds: items added in one call, metadata pairs and their sizes. */
const MAX_ITEMS_PER_CALL = 20;
const MAX_METADATA_PAIRS = 16;
const MAX_METADATA_KEY = 64;
const MAX_METADATA_VALUE = 512;

/** The route under /v1/conversations: the conversation's id, and an item's id or the item list. */
interface ConversationPath {
  readonly id: string | null;
  readonly items: boolean;
  readonly itemId: string | null;
}

/**
 * Answers one Conversations API call. `rest` is what follows `/v1/conversations/` ('' for
 * the collection); `body` is the request body (empty for GET and DELETE).
 */
export async function serveConversation(store: ResponseStore, x: Exchange, caller: Caller, rest: string, body: Buffer): Promise<void> {
  const method = x.req.method;
  const at = conversationPathOf(x, rest);
  const team = caller.principal.team;
  if (at.id === null) {
    if (method !== 'POST') throw notFound(x);
    const fields = parseObject(body);
    const items = itemsOf(fields.items, 'items', true);
    const record: ConversationRecord = {
      id: newId('conv'),
      team,
      createdAt: Math.floor(Date.now() / 1000),
      metadata: metadataOf(fields.metadata),
    };
    await store.createConversation(record, items);
    return sendJson(x.res, 200, conversationObject(record));
  }
  const id = at.id;
  const record = await store.getConversation(id);
  if (record === undefined || record.team !== team) throw conversationNotFound(id);
  if (!at.items) {
    if (method === 'GET') return sendJson(x.res, 200, conversationObject(record));
    if (method === 'DELETE') {
      await store.deleteConversation(id);
      return sendJson(x.res, 200, { id, object: 'conversation.deleted', deleted: true });
    }
    const fields = parseObject(body);
    if (fields.metadata === undefined) throw new SwitchyardError('invalid_request', 'missing required field: metadata', 'metadata');
    const updated = await store.updateConversation(id, metadataOf(fields.metadata));
    if (updated === undefined) throw conversationNotFound(id);
    return sendJson(x.res, 200, conversationObject(updated));
  }
  if (at.itemId === null) {
    if (method === 'GET') {
      const page = await store.listItems(id, pageQueryOf(x.req.url));
      if (page === undefined) throw conversationNotFound(id);
      return sendJson(x.res, 200, listObject(page));
    }
    if (method !== 'POST') throw notFound(x);
    const fields = parseObject(body);
    const items = itemsOf(fields.items, 'items', false);
    if (!(await store.appendItems(id, items))) throw conversationNotFound(id);
    return sendJson(x.res, 200, listObject({ data: items, hasMore: false }));
  }
  const itemId = at.itemId;
  if (method === 'GET') {
    const item = await store.getItem(id, itemId);
    if (item === undefined) throw itemNotFound(id, itemId);
    return sendJson(x.res, 200, item);
  }
  if (method !== 'DELETE') throw notFound(x);
  if (!(await store.deleteItem(id, itemId))) throw itemNotFound(id, itemId);
  sendJson(x.res, 200, conversationObject(record));
}

function conversationObject(record: ConversationRecord): Record<string, unknown> {
  return { id: record.id, object: 'conversation', created_at: record.createdAt, metadata: record.metadata };
}

function conversationPathOf(x: Exchange, rest: string): ConversationPath {
  if (rest === '') return { id: null, items: false, itemId: null };
  const parts = rest.split('/');
  if (parts.length > 3 || (parts.length >= 2 && parts[1] !== 'items') || parts.some((p) => p === '' || p.length > 256)) throw notFound(x);
  let decoded: string[];
  try {
    decoded = parts.map(decodeURIComponent);
  } catch {
    throw new SwitchyardError('invalid_request', 'an id in the path is not valid percent-encoding', 'conversation_id');
  }
  return { id: decoded[0] as string, items: parts.length >= 2, itemId: decoded[2] ?? null };
}

function itemsOf(value: unknown, field: string, optional: boolean): Item[] {
  if (value === undefined || value === null) {
    if (optional) return [];
    throw new SwitchyardError('invalid_request', `missing required field: ${field}`, field);
  }
  if (!Array.isArray(value)) throw new SwitchyardError('invalid_request', `${field} must be an array of items`, field);
  if (value.length > MAX_ITEMS_PER_CALL) {
    throw new SwitchyardError('invalid_request', `${field} may hold at most ${MAX_ITEMS_PER_CALL} items`, field);
  }
  const items = inputItems(value);
  items.forEach((item, i) => {
    if (item.type === 'item_reference') {
      throw new SwitchyardError(
        'invalid_request',
        `${field}[${i}]: an item_reference cannot be added to a conversation`,
        `${field}[${i}].type`,
      );
    }
  });
  return items as Item[];
}

/** `metadata`: at most 16 string pairs, keys up to 64 characters, values up to 512. */
export function metadataOf(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new SwitchyardError('invalid_request', 'metadata must be an object', 'metadata');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_METADATA_PAIRS) {
    throw new SwitchyardError('invalid_request', `metadata may hold at most ${MAX_METADATA_PAIRS} pairs`, 'metadata');
  }
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (k.length > MAX_METADATA_KEY) {
      throw new SwitchyardError(
        'invalid_request',
        `metadata keys are at most ${MAX_METADATA_KEY} characters`,
        `metadata.${k.slice(0, 64)}`,
      );
    }
    if (typeof v !== 'string' || v.length > MAX_METADATA_VALUE) {
      throw new SwitchyardError(
        'invalid_request',
        `metadata values are strings of at most ${MAX_METADATA_VALUE} characters`,
        `metadata.${k}`,
      );
    }
    out[k] = v;
  }
  return out;
}

function itemNotFound(conversation: string, itemId: string): SwitchyardError {
  return new SwitchyardError(
    'conversation_not_found',
    `conversation "${conversation}" holds no item "${itemId}" for this caller`,
    'item_id',
  );
}

function notFound(x: Exchange): SwitchyardError {
  return new SwitchyardError('not_found', `no such endpoint: ${x.req.method} ${x.req.url}`);
}
