import type { ConversationItemsTable, Database, ResponsesTable } from '../database/index.js';
import { itemIdsOf, itemOf, pageOf, storedItem } from './pages.js';
import {
  type ConversationRecord,
  type Item,
  type ItemPage,
  type PageQuery,
  type ResponseRecord,
  type ResponseStore,
  ResponseStoreUnavailable,
  type StoredItem,
  type StoreLimits,
} from './store.js';

export interface DatabaseStoreOptions {
  /** Responses and conversations older than this are dropped by prune(). */
  readonly retentionDays: number;
}

const DAY_S = 86_400;
/** Rows prune() drops per transaction. */
const PRUNE_BATCH = 500;

/**
 * Responses and conversations in the gateway's database (SQLite for one replica, Postgres
 * for a fleet), in the tables of schema version 3. Nothing expires on read: prune() drops
 * what is past retention, and the gateway calls it on a timer.
 */
export class DatabaseResponseStore implements ResponseStore {
  readonly kind = 'database' as const;
  readonly #database: Database;
  #retentionS: number;

  constructor(database: Database, options: DatabaseStoreOptions) {
    this.#database = database;
    this.#retentionS = options.retentionDays * DAY_S;
  }

  get #db() {
    return this.#database.db;
  }

  /** The next prune drops by the new retention. */
  configure(limits: StoreLimits): void {
    this.#retentionS = limits.retentionDays * DAY_S;
  }

  async putResponse(record: ResponseRecord): Promise<void> {
    const row: ResponsesTable = {
      id: record.id,
      team: record.team,
      model: record.model,
      created_at: record.createdAt,
      conversation: record.conversation,
      ancestors: JSON.stringify(record.ancestors),
      input: JSON.stringify(record.input),
      response: JSON.stringify(record.response),
      origin: record.origin ?? null,
    };
    const { id: _, ...rest } = row;
    const items = [...new Set(itemIdsOf(record))].map((item_id) => ({ item_id, response_id: record.id, team: record.team }));
    await this.#run(() =>
      this.#db.transaction().execute(async (tx) => {
        await tx
          .insertInto('responses')
          .values(row)
          .onConflict((oc) => oc.column('id').doUpdateSet(rest))
          .execute();
        // An item sent again in a later turn's input is found in the latest response holding it.
        for (const chunk of chunks(items, 200))
          await tx
            .insertInto('response_items')
            .values(chunk)
            .onConflict((oc) =>
              oc.column('item_id').doUpdateSet((eb) => ({ response_id: eb.ref('excluded.response_id'), team: eb.ref('excluded.team') })),
            )
            .execute();
      }),
    );
  }

  async getResponse(id: string): Promise<ResponseRecord | undefined> {
    return (await this.getResponses([id]))[0];
  }

  async getResponses(ids: readonly string[]): Promise<(ResponseRecord | undefined)[]> {
    if (ids.length === 0) return [];
    const rows = await this.#run(() =>
      this.#db
        .selectFrom('responses')
        .selectAll()
        .where('id', 'in', [...ids])
        .execute(),
    );
    const byId = new Map(rows.map((r) => [r.id, recordOf(r)]));
    return ids.map((id) => byId.get(id));
  }

  async deleteResponse(id: string): Promise<boolean> {
    return this.#run(() =>
      this.#db.transaction().execute(async (tx) => {
        await tx.deleteFrom('response_items').where('response_id', '=', id).execute();
        const r = await tx.deleteFrom('responses').where('id', '=', id).executeTakeFirst();
        return Number(r.numDeletedRows) > 0;
      }),
    );
  }

  async getResponseItem(itemId: string): Promise<StoredItem | undefined> {
    const row = await this.#run(() =>
      this.#db
        .selectFrom('response_items')
        .innerJoin('responses', 'responses.id', 'response_items.response_id')
        .selectAll('responses')
        .where('response_items.item_id', '=', itemId)
        .executeTakeFirst(),
    );
    if (row === undefined) return undefined;
    const record = recordOf(row);
    const item = itemOf(record, itemId);
    return item === undefined ? undefined : storedItem(record, item);
  }

  async createConversation(record: ConversationRecord, items: readonly Item[]): Promise<void> {
    await this.#run(() =>
      this.#db.transaction().execute(async (tx) => {
        await tx
          .insertInto('conversations')
          .values({ id: record.id, team: record.team, created_at: record.createdAt, metadata: JSON.stringify(record.metadata) })
          .execute();
        await insertItems(tx, record.id, 0, items);
      }),
    );
  }

  async getConversation(id: string): Promise<ConversationRecord | undefined> {
    const row = await this.#run(() => this.#db.selectFrom('conversations').selectAll().where('id', '=', id).executeTakeFirst());
    return row === undefined ? undefined : conversationOf(row);
  }

  async updateConversation(id: string, metadata: Readonly<Record<string, string>>): Promise<ConversationRecord | undefined> {
    const row = await this.#run(() =>
      this.#db
        .updateTable('conversations')
        .set({ metadata: JSON.stringify(metadata) })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst(),
    );
    return row === undefined ? undefined : conversationOf(row);
  }

  async deleteConversation(id: string): Promise<boolean> {
    return this.#run(() =>
      this.#db.transaction().execute(async (tx) => {
        await tx.deleteFrom('conversation_items').where('conv_id', '=', id).execute();
        const r = await tx.deleteFrom('conversations').where('id', '=', id).executeTakeFirst();
        return Number(r.numDeletedRows) > 0;
      }),
    );
  }

  async appendItems(conversation: string, items: readonly Item[]): Promise<boolean> {
    return this.#run(() =>
      this.#db.transaction().execute(async (tx) => {
        // The row lock orders two appends to one conversation on Postgres (SQLite has one writer).
        const exists = await (this.#database.engine === 'postgres'
          ? tx.selectFrom('conversations').select('id').where('id', '=', conversation).forUpdate()
          : tx.selectFrom('conversations').select('id').where('id', '=', conversation)
        ).executeTakeFirst();
        if (exists === undefined) return false;
        const last = await tx
          .selectFrom('conversation_items')
          .select((eb) => eb.fn.max('seq').as('seq'))
          .where('conv_id', '=', conversation)
          .executeTakeFirst();
        await insertItems(tx, conversation, Number(last?.seq ?? 0), items);
        return true;
      }),
    );
  }

  async listItems(conversation: string, page: PageQuery): Promise<ItemPage | undefined> {
    return this.#run(async () => {
      if ((await this.getConversation(conversation)) === undefined) return undefined;
      const asc = page.order === 'asc';
      let query = this.#db
        .selectFrom('conversation_items')
        .select('item')
        .where('conv_id', '=', conversation)
        .orderBy('seq', asc ? 'asc' : 'desc')
        .limit(page.limit + 1);
      if (page.after !== undefined) {
        const cursor = await this.#db
          .selectFrom('conversation_items')
          .select('seq')
          .where('conv_id', '=', conversation)
          .where('item_id', '=', page.after)
          .executeTakeFirst();
        // As pageOf: a cursor naming an item no longer there gives an empty page.
        if (cursor === undefined) return pageOf([], page);
        query = query.where('seq', asc ? '>' : '<', Number(cursor.seq));
      }
      const rows = await query.execute();
      return { data: rows.slice(0, page.limit).map((r) => JSON.parse(r.item) as Item), hasMore: rows.length > page.limit };
    });
  }

  async allItems(conversation: string, max: number): Promise<readonly Item[] | undefined> {
    return this.#run(async () => {
      if ((await this.getConversation(conversation)) === undefined) return undefined;
      if (max <= 0) return [];
      const rows = await this.#db
        .selectFrom('conversation_items')
        .select('item')
        .where('conv_id', '=', conversation)
        .orderBy('seq', 'asc')
        .limit(max)
        .execute();
      return rows.map((r) => JSON.parse(r.item) as Item);
    });
  }

  async getItem(conversation: string, itemId: string): Promise<Item | undefined> {
    const row = await this.#run(() =>
      this.#db
        .selectFrom('conversation_items')
        .select('item')
        .where('conv_id', '=', conversation)
        .where('item_id', '=', itemId)
        .executeTakeFirst(),
    );
    return row === undefined ? undefined : (JSON.parse(row.item) as Item);
  }

  async deleteItem(conversation: string, itemId: string): Promise<boolean> {
    const r = await this.#run(() =>
      this.#db.deleteFrom('conversation_items').where('conv_id', '=', conversation).where('item_id', '=', itemId).executeTakeFirst(),
    );
    return Number(r.numDeletedRows) > 0;
  }

  /**
   * In batches, each its own transaction with a turn of the event loop between: on SQLite
   * a statement blocks the loop, and a first prune after months can hold many rows.
   */
  async prune(nowMs: number): Promise<number> {
    const cutoff = Math.floor(nowMs / 1000) - this.#retentionS;
    const responses = await inBatches(() =>
      this.#run(() =>
        this.#db.transaction().execute(async (tx) => {
          const old = await tx.selectFrom('responses').select('id').where('created_at', '<', cutoff).limit(PRUNE_BATCH).execute();
          const ids = old.map((r) => r.id);
          if (ids.length === 0) return 0;
          await tx.deleteFrom('response_items').where('response_id', 'in', ids).execute();
          await tx.deleteFrom('responses').where('id', 'in', ids).execute();
          return ids.length;
        }),
      ),
    );
    await inBatches(() =>
      this.#run(() =>
        this.#db.transaction().execute(async (tx) => {
          const old = await tx.selectFrom('conversations').select('id').where('created_at', '<', cutoff).limit(PRUNE_BATCH).execute();
          const ids = old.map((r) => r.id);
          if (ids.length === 0) return 0;
          await tx.deleteFrom('conversation_items').where('conv_id', 'in', ids).execute();
          await tx.deleteFrom('conversations').where('id', 'in', ids).execute();
          return ids.length;
        }),
      ),
    );
    return responses;
  }

  /** The database is the gateway's, opened and closed by it: nothing of its own to close. */
  async close(): Promise<void> {}

  async #run<T>(query: () => Promise<T>): Promise<T> {
    try {
      return await query();
    } catch (err) {
      if (err instanceof ResponseStoreUnavailable) throw err;
      throw new ResponseStoreUnavailable(`response store (database) failed: ${(err as Error).message}`, { cause: err });
    }
  }
}

type Tx = Parameters<Parameters<ReturnType<Database['db']['transaction']>['execute']>[0]>[0];

/**
 * Items at seq after `last`, in order. An item id the conversation already holds is
 * skipped (the unique key): ids are the caller's, and a repeat is the same item.
 */
async function insertItems(tx: Tx, conversation: string, last: number, items: readonly Item[]): Promise<void> {
  const rows: ConversationItemsTable[] = items.map((item, i) => ({
    conv_id: conversation,
    seq: last + i + 1,
    item_id: item.id,
    item: JSON.stringify(item),
  }));
  for (const chunk of chunks(rows, 200))
    await tx
      .insertInto('conversation_items')
      .values(chunk)
      .onConflict((oc) => oc.columns(['conv_id', 'item_id']).doNothing())
      .execute();
}

/** Runs `batch` until one drops fewer than PRUNE_BATCH rows, yielding between; the rows dropped in all. */
async function inBatches(batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const dropped = await batch();
    total += dropped;
    if (dropped < PRUNE_BATCH) return total;
    await new Promise((r) => setImmediate(r));
  }
}

function chunks<T>(rows: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

function recordOf(row: ResponsesTable): ResponseRecord {
  return {
    id: row.id,
    team: row.team,
    model: row.model,
    createdAt: Number(row.created_at),
    ancestors: JSON.parse(row.ancestors) as string[],
    conversation: row.conversation,
    input: JSON.parse(row.input) as Item[],
    response: JSON.parse(row.response) as Record<string, unknown>,
    ...(row.origin === null || row.origin === undefined ? {} : { origin: row.origin }),
  };
}

function conversationOf(row: { id: string; team: string | null; created_at: number; metadata: string }): ConversationRecord {
  return { id: row.id, team: row.team, createdAt: Number(row.created_at), metadata: JSON.parse(row.metadata) as Record<string, string> };
}
