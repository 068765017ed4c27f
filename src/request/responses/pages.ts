import { SwitchyardError } from '../../errors.js';
import type { Item, ItemPage, PageQuery } from '../../responses/index.js';

// The list endpoints' paging (`input_items`, a conversation's items), as OpenAI's: `after`
// an item id, `limit` 1..100 (default 20), `order` asc | desc (default desc), answered as a
// list object with `first_id`, `last_id` and `has_more`.

export function pageQueryOf(url: string | undefined): PageQuery {
  const at = url?.indexOf('?') ?? -1;
  const params = new URLSearchParams(at === -1 ? '' : (url as string).slice(at + 1));
  const limitText = params.get('limit');
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new SwitchyardError('invalid_request', 'limit must be an integer from 1 to 100', 'limit');
  }
  const order = params.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new SwitchyardError('invalid_request', 'order must be asc or desc', 'order');
  const after = params.get('after');
  return after === null || after === '' ? { limit, order } : { limit, order, after };
}

/** A page of items held in order (oldest first). An `after` that names no item starts nowhere: an empty page. */
export function pageOf(items: readonly Item[], query: PageQuery): ItemPage {
  const ordered = query.order === 'asc' ? items : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((i) => i.id === query.after);
    start = at === -1 ? ordered.length : at + 1;
  }
  const data = ordered.slice(start, start + query.limit);
  return { data, hasMore: start + query.limit < ordered.length };
}

export function listObject(page: ItemPage): Record<string, unknown> {
  const data = page.data;
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: page.hasMore,
  };
}
