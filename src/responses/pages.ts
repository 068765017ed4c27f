import type { Item, ItemPage, PageQuery, ResponseRecord, StoredItem } from './store.js';

// What every backend computes the same way once it holds a conversation's items or a
// response: a page of a list, and an item of a response.

/**
 * A page of `items` (oldest first) in the order asked: the items after `after`, up to
 * `limit`. An `after` the conversation does not hold gives an empty page: the client's
 * cursor names an item since deleted, and starting over would repeat what it has read.
 */
export function pageOf(items: readonly Item[], query: PageQuery): ItemPage {
  const ordered = query.order === 'asc' ? items : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((i) => i.id === query.after);
    if (at < 0) return { data: [], hasMore: false };
    start = at + 1;
  }
  const data = ordered.slice(start, start + query.limit);
  return { data, hasMore: start + query.limit < ordered.length };
}

/** The item of a response (its input, then its output) with this id. */
export function itemOf(record: ResponseRecord, itemId: string): Item | undefined {
  const hit = record.input.find((i) => i.id === itemId);
  if (hit !== undefined) return hit;
  const output = record.response.output;
  if (!Array.isArray(output)) return undefined;
  return (output as Item[]).find((i) => i !== null && typeof i === 'object' && i.id === itemId);
}

/** An item found in a stored response, with the response's team and origin. */
export function storedItem(record: ResponseRecord, item: Item): StoredItem {
  return record.origin === undefined ? { item, team: record.team } : { item, team: record.team, origin: record.origin };
}

/** Every item id a response holds: its input's and its output's. */
export function itemIdsOf(record: ResponseRecord): string[] {
  const output = Array.isArray(record.response.output) ? (record.response.output as Item[]) : [];
  return [...record.input, ...output].flatMap((i) => (i !== null && typeof i === 'object' && typeof i.id === 'string' ? [i.id] : []));
}
