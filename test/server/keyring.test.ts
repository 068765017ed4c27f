import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MockProvider } from '../../src/mock/index.js';
import { adminReload, adminStatusBody } from '../support/admin.js';
import { sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { v1 } from '../support/managed.js';
import { SseReader } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// The keyring beside the generation, through real gateway processes over SQLite: a key or
// team write builds and swaps only the keyring (the routing generation keeps its number),
// the reload history, the status, the access line and the audit log say which keyring
// served; a request admitted before a swap ends on the pair it captured; a config reload
// builds both; counters outlive either swap.

const resources = fileResources('switchyard-keyring-');
const ADMIN = 'admin-token-for-the-keyring-tests';

let east: MockProvider;
before(async () => {
  east = await resources.startMock({ name: 'east' });
});

interface Status {
  generation: { number: number };
  keyring: { number: number; keys: number; teams: number; database_version: number | null };
  reloads: Array<{
    trigger: string;
    result: string;
    generation: number;
    keyring: number;
    built: string[];
    changes: Record<string, unknown>;
  }>;
}

function gatewayConfig(databaseUrl: string, dir: string): Record<string, unknown> {
  const c = baseConfig(
    { east: east.baseUrl, slow: east.baseUrl },
    { m: { candidates: [{ provider: 'east' }] }, slow: { candidates: [{ provider: 'slow' }] } },
    {
      server: { admin_token: { env: 'ADMIN_TOKEN' } },
      teams: { platform: {} },
      database: { url: databaseUrl, recheck_ms: 500 },
      audit: { file: join(dir, 'audit.jsonl') },
    },
  ) as Record<string, Record<string, Record<string, unknown>>>;
  // Ten chunks 100 ms apart: a swap lands mid-stream.
  (c.providers as Record<string, Record<string, unknown>>).slow = {
    type: 'openai',
    base_url: east.baseUrl,
    timeout_ms: 5000,
    headers: { 'x-mock-chunks': '10', 'x-mock-chunk-delay-ms': '100' },
  };
  return c;
}

const status = (gw: GatewayProcess): Promise<Status> => adminStatusBody(gw, ADMIN) as unknown as Promise<Status>;
const chat = async (gw: GatewayProcess, key: string, model = 'm'): Promise<number> =>
  (await postChat(gw.url, chatBody(model), { authorization: `Bearer ${key}` })).status;

/** The audit file's records, once one matches (the writer appends off the request path). */
async function auditRecords(gw: GatewayProcess, until: (r: Record<string, unknown>) => boolean): Promise<Array<Record<string, unknown>>> {
  for (let i = 0; ; i++) {
    const records = readFileSync(join(gw.dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    if (records.some(until) || i === 50) return records;
    await sleep(40);
  }
}

describe('the keyring beside the generation', () => {
  let db: TestDatabase;
  let gw: GatewayProcess;
  let admin: string;

  before(async () => {
    db = sqliteDatabase();
    const dir = resources.tempDir();
    gw = await resources.startGw(gatewayConfig(db.url, dir), { dir, env: { ADMIN_TOKEN: ADMIN } });
    admin = gw.adminUrl as string;
  });
  after(async () => {
    await gw.stop();
    await db.drop();
  });

  it('a key write swaps only the keyring: the generation keeps its number, the keyring takes the next, the history names it', async () => {
    const before = await status(gw);
    assert.equal(typeof before.keyring.number, 'number');
    const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'platform' } });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.headers.get('x-switchyard-generation'), String(before.generation.number), 'the routing generation is unchanged');
    assert.equal(made.headers.get('x-switchyard-keyring'), String(before.keyring.number + 1));
    const first = await postChat(gw.url, chatBody('m'), { authorization: `Bearer ${made.body.key}`, 'x-request-id': 'keyring-first-1' });
    assert.equal(first.status, 200, 'the new key is live when the answer comes');

    const after = await status(gw);
    assert.equal(after.generation.number, before.generation.number);
    assert.equal(after.keyring.number, before.keyring.number + 1);
    const entry = after.reloads[0]!;
    assert.equal(entry.trigger, 'database');
    assert.equal(entry.result, 'applied');
    assert.deepEqual(entry.built, ['keyring']);
    assert.equal(entry.keyring, before.keyring.number + 1);
    assert.equal(entry.generation, before.generation.number);
    assert.deepEqual(entry.changes.keysAdded, [made.body.id]);
    assert.deepEqual(entry.changes.routesChanged, []);

    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === 'keyring-first-1');
    assert.equal(line.keyring, before.keyring.number + 1, 'the access line names the keyring that admitted the request');
    assert.equal(line.generation, before.generation.number);
    const audit = await auditRecords(gw, (r) => r.event === 'request_started' && r.key_id === made.body.id);
    const started = audit.filter((r) => r.event === 'request_started' && r.key_id === made.body.id);
    assert.equal(started.at(-1)?.keyring, before.keyring.number + 1, 'and so does its audit record');
    assert.ok(audit.some((r) => r.event === 'reload' && r.trigger === 'database' && r.keyring === before.keyring.number + 1));
  });

  it('a request admitted before a swap ends on the pair it captured, even when the swap revokes its key', async () => {
    const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'platform' } });
    const key = made.body.key as string;
    const admittedUnder = (await status(gw)).keyring.number;
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-request-id': 'keyring-inflight-1' },
      body: chatBody('slow', { stream: true }),
    });
    assert.equal(res.status, 200);
    const reader = new SseReader(res);
    assert.notEqual(await reader.next(), null, 'the stream has started');
    const revoked = await v1(admin, 'POST', `keys/${made.body.id}/revoke`, { token: ADMIN });
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal(await chat(gw, key), 401, 'a new request with the revoked key is refused at once');
    let events = 0;
    for (let e = await reader.next(); e !== null; e = await reader.next()) events += 1;
    assert.ok(events >= 5, `the stream in flight ran to its end (${events} more events)`);
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === 'keyring-inflight-1');
    assert.equal(line.status, 200);
    assert.equal(line.keyring, admittedUnder, 'recorded under the keyring it was admitted with');
    assert.ok((await status(gw)).keyring.number > admittedUnder);
  });

  it('counters keep their identity across a keyring swap and a config reload, which builds both', async () => {
    const made = await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'platform', rpm: 2 } });
    const key = made.body.key as string;
    assert.equal(await chat(gw, key), 200);
    assert.equal(await chat(gw, key), 200);
    assert.equal(await chat(gw, key), 429, 'the key has used its two requests this minute');
    // A write of another key: a keyring swap.
    assert.equal((await v1(admin, 'POST', 'keys', { token: ADMIN, body: { team: 'platform' } })).status, 201);
    assert.equal(await chat(gw, key), 429, 'the count survives a keyring swap');

    const before = await status(gw);
    const reload = await adminReload(admin, ADMIN);
    assert.equal(reload.status, 200, reload.text);
    const after = await status(gw);
    assert.equal(after.generation.number, before.generation.number + 1, 'a config reload builds a generation');
    assert.equal(after.keyring.number, before.keyring.number + 1, 'and a keyring');
    assert.deepEqual(after.reloads[0]!.built, ['generation', 'keyring']);
    assert.equal(after.keyring.database_version, before.keyring.database_version, 'from the same database rows');
    assert.equal(await chat(gw, key), 429, 'the count survives a config reload');
  });
});
