import { SwitchyardError } from '../../errors.js';
import type { ItemPage, PageQuery } from '../../responses/index.js';

// The list endpoints' paging (`input_items`, a conversation's items), as OpenAI's: `after`
// an item id, `limit` 1..100 (default 20), `order` asc | desc (default desc), answered as a
// list object with `first_id`, `last_id` and `has_more`. The page itself is the store's
// (responses/pages.ts), the same whichever backend holds the items.

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
