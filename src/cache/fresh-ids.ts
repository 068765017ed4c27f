import { randomBytes } from 'node:crypto';

// A replayed answer is a new answer: it gets ids of its own and the time it is served, so
// two hits never share an id (a client may key its logs or its conversation state on
// one) and a Response fetched back by id is this one. Only the answer's identity is
// renamed; a tool call's id (`call_…`, `toolu_…`) is part of what the model said, and a
// client sends it back with the tool's result, so it stays as it was stored.

/** The ids an answer is known by: a chat completion's, a completion's, an Anthropic message's, a Response's, and a Response's output items'. */
export type FreshIdKind = 'chatcmpl' | 'cmpl' | 'msg' | 'resp' | 'item';

/** Where a replay takes its new ids and its clock from. */
export interface Fresh {
  /** Unix seconds: the replay's `created` / `created_at`. */
  readonly nowS: number;
  /**
   * A new id of the kind. `prefix` is the replaced id's own (`msg`, `fc`, `rs`, `mcp`…), given
   * for `item` only: a Responses item keeps the prefix of its type.
   */
  id(kind: FreshIdKind, prefix?: string): string;
}

/** Ids shaped as the protocols' own (`chatcmpl-…`, `cmpl-…`, `msg_…`, `resp_…`), from 24 random bytes each, and the clock now. */
export function freshIds(nowS = Math.floor(Date.now() / 1000)): Fresh {
  return {
    nowS,
    id(kind, prefix) {
      const random = randomBytes(24).toString('hex');
      if (kind === 'chatcmpl' || kind === 'cmpl') return `${kind}-${random}`;
      return `${kind === 'item' ? (prefix ?? 'item') : kind}_${random}`;
    },
  };
}

/** An `"id"` or `"item_id"` member whose value is a string: where an answer names itself or one of its items. */
const ID_MEMBER = /"(id|item_id)"(\s*:\s*)"((?:[^"\\]|\\.)*)"/g;

/**
 * The renaming of one replay: each old id of the answer gets one new id, the same wherever
 * it appears (every chunk of a stream, an item and the events that name it by `item_id`).
 */
export class IdMap {
  readonly #fresh: Fresh;
  /** Old id (as its JSON text between the quotes) -> new id. */
  readonly #ids = new Map<string, string>();

  constructor(fresh: Fresh) {
    this.#fresh = fresh;
  }

  /** The new id for `old`; an empty or absent id (Azure's first chunk has '') names nothing and stays as it is. */
  rename(old: unknown, kind: FreshIdKind): string {
    if (typeof old !== 'string' || old === '') return typeof old === 'string' ? old : '';
    const key = JSON.stringify(old).slice(1, -1);
    let renamed = this.#ids.get(key);
    if (renamed === undefined) {
      renamed = this.#fresh.id(kind, kind === 'item' ? prefixOf(old) : undefined);
      this.#ids.set(key, renamed);
    }
    return renamed;
  }

  /**
   * The event or body text with every renamed id replaced where it stands as an `id` or
   * `item_id` member. Inside a JSON string a quote is escaped, so the pattern only meets
   * members; a tool call's `id` is not among the renamed, so it is left alone.
   */
  rewrite(text: string): string {
    if (this.#ids.size === 0) return text;
    return text.replace(ID_MEMBER, (member, key: string, colon: string, value: string) => {
      const renamed = this.#ids.get(value);
      return renamed === undefined ? member : `"${key}"${colon}${JSON.stringify(renamed)}`;
    });
  }
}

/** A Responses item id's prefix: `fc` of `fc_123`; `item` when it has none. */
function prefixOf(id: string): string {
  const cut = id.indexOf('_');
  return cut > 0 ? id.slice(0, cut) : 'item';
}

/**
 * A Response object (a parsed copy, changed in place) as a replay gives it: its id and its
 * items' ids renamed, created (and completed, when it says it was) now.
 */
export function renamedResponse(response: Record<string, unknown>, ids: IdMap, nowS: number): Record<string, unknown> {
  response.id = ids.rename(response.id, 'resp');
  if (typeof response.created_at === 'number') response.created_at = nowS;
  if (typeof response.completed_at === 'number') response.completed_at = nowS;
  if (Array.isArray(response.output)) {
    for (const item of response.output) {
      if (typeof item === 'object' && item !== null && typeof item.id === 'string') item.id = ids.rename(item.id, 'item');
    }
  }
  return response;
}
