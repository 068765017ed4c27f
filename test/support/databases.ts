import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

// The databases a test runs against: a fresh SQLite file in a temporary folder, or a
// database of its own on the machine's PostgreSQL (127.0.0.1:5432, user postgres, trust),
// created for the test and dropped after it.

export const POSTGRES_ADMIN_URL = process.env.SWITCHYARD_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

export function sqliteDatabase(): TestDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-sqlite-'));
  return {
    url: `sqlite:${join(dir, 'switchyard.db')}`,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Null (with the reason) when no PostgreSQL answers: the caller skips with that message. */
export async function postgresDatabase(): Promise<TestDatabase | { skip: string }> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  try {
    await admin.connect();
  } catch (err) {
    return { skip: `no PostgreSQL at ${POSTGRES_ADMIN_URL} (${(err as Error).message})` };
  }
  const name = `switchyard_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: async () => {
      const c = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Both engines, for a test that must hold on each. */
export async function eachEngine(): Promise<
  Array<{ engine: 'sqlite' | 'postgres'; open: () => Promise<TestDatabase | { skip: string }> }>
> {
  return [
    { engine: 'sqlite', open: async () => sqliteDatabase() },
    { engine: 'postgres', open: postgresDatabase },
  ];
}
