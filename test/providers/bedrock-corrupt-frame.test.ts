import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { bedrockEventFrame } from '../support/bedrock-frames.js';
import { sqliteDatabase, type TestDatabase } from '../support/databases.js';
import { baseConfig, type GatewayProcess } from '../support/gateway-process.js';
import { v1 } from '../support/managed.js';
import { waitUntil } from '../support/observe.js';
import { fileResources } from '../support/resources.js';

// A Bedrock ConverseStream whose frame fails its CRC (the prelude's or the message's) is a
// stream that broke, like any other: the client's stream ends in its error event, and the
// request is booked partial on what was relayed, its usage an estimate, in the access line,
// the audit record and the ledger row. Through a real gateway process, a real SQLite ledger
// and an upstream that writes the frames itself (the gateway's SigV4 is not checked here).

const resources = fileResources('switchyard-bedrock-crc-');
const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const KEY = 'sy-bedrock-crc-key-of-team-platform-0000';
const ADMIN = 'admin-token-for-the-bedrock-crc-tests';
const PRICE = { input_usd_per_mtok: 1, output_usd_per_mtok: 1000 };

const frame = bedrockEventFrame;

/** The frame with one bit of its prelude CRC (bytes 8-11) or its message CRC (the last 4) flipped. */
function corrupt(f: Buffer, where: 'prelude' | 'message'): Buffer {
  const bad = Buffer.from(f);
  const at = where === 'prelude' ? 9 : bad.length - 1;
  bad[at] = (bad[at] as number) ^ 0x01;
  return bad;
}

const delta = (text: string) => frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text } });

/** A whole answer whose third delta is corrupt, and whose metadata (never read) claims no tokens. */
function answer(where: 'prelude' | 'message'): Buffer {
  return Buffer.concat([
    frame('messageStart', { role: 'assistant' }),
    delta('Hello'),
    delta(' there'),
    corrupt(delta(' friend'), where),
    delta(' again'),
    frame('contentBlockStop', { contentBlockIndex: 0 }),
    frame('messageStop', { stopReason: 'end_turn' }),
    frame('metadata', { usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, metrics: { latencyMs: 1 } }),
  ]);
}

let upstream: Server;
let corruptAt: 'prelude' | 'message' = 'message';
let db: TestDatabase;
let gw: GatewayProcess;
let client: OpenAI;

before(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
      res.end(answer(corruptAt));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  resources.addUpstream(() => new Promise((resolve) => upstream.close(resolve)));
  db = sqliteDatabase();
  const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const dir = resources.tempDir();
  const config = baseConfig(
    {},
    { br: { candidates: [{ provider: 'br', model: MODEL }] } },
    {
      server: { admin_token: { env: 'ADMIN_TOKEN' } },
      teams: { platform: {} },
      keys: [{ id: 'platform-a', team: 'platform', key: { env: 'KEY_A' } }],
      pricing: { models: { [MODEL]: PRICE } },
      audit: { file: join(dir, 'audit.jsonl') },
      database: { url: db.url },
    },
  );
  (config.providers as Record<string, unknown>).br = {
    type: 'bedrock',
    region: 'us-east-1',
    base_url: origin,
    aws: { access_key_id: { env: 'BR_AKID' }, secret_access_key: { env: 'BR_SECRET' } },
    timeout_ms: 5000,
  };
  gw = await resources.startGw(config, {
    dir,
    env: { ADMIN_TOKEN: ADMIN, KEY_A: KEY, BR_AKID: 'AKIAMOCKBEDROCK00001', BR_SECRET: 'mock/secret+key/0123456789abcdefghijklmn' },
  });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 10_000 });
});

after(async () => {
  await db?.drop();
});

type Row = Record<string, any>;

async function ledgerRow(requestId: string): Promise<Row> {
  let row: Row | undefined;
  await waitUntil(async () => {
    const page = await v1(gw.adminUrl as string, 'GET', 'usage/requests?limit=1000', { token: ADMIN });
    row = (page.body.rows as Row[]).find((r) => r.request_id === requestId);
    return row !== undefined;
  }, `the ledger row of ${requestId}`);
  return row as Row;
}

function auditCompleted(requestId: string): Row | undefined {
  return readFileSync(join(gw.dir, 'audit.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Row)
    .find((r) => r.event === 'request_completed' && r.request_id === requestId);
}

describe('a Bedrock stream frame that fails its CRC', { timeout: 30_000 }, () => {
  for (const where of ['message', 'prelude'] as const) {
    it(`(${where} CRC) ends the client stream in an error and is booked partial, its usage estimated, in the access line, audit record and ledger`, async () => {
      corruptAt = where;
      const requestId = `crc-${where}-${Date.now()}`;
      const stream = await client.chat.completions.create(
        { model: 'br', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 500 },
        { headers: { 'x-request-id': requestId } },
      );
      let text = '';
      await assert.rejects(async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      }, /corrupt event-stream frame/);
      assert.equal(text, 'Hello there', 'nothing of the corrupt frame or after it reached the client');

      const line = await gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
      assert.equal(line.status, 'partial');
      assert.equal(line.usage_estimated, true);
      assert.ok((line.output_tokens as number) > 0, JSON.stringify(line));
      assert.ok((line.cost_micro_usd as number) > 0);
      // Far below the 500-token reservation at $1000 per million output tokens (500,000 micro-USD).
      assert.ok((line.cost_micro_usd as number) < 100_000, JSON.stringify(line));

      let audit: Row | undefined;
      await waitUntil(() => (audit = auditCompleted(requestId)) !== undefined, 'the audit record');
      assert.deepEqual(
        [audit?.status, audit?.partial, audit?.usage_estimated, audit?.cost_micro_usd],
        ['partial', true, true, line.cost_micro_usd],
      );

      const row = await ledgerRow(requestId);
      assert.equal(row.partial, true);
      assert.equal(row.input_tokens, line.input_tokens);
      assert.equal(row.output_tokens, line.output_tokens);
      assert.equal(Math.round(row.cost_usd * 1e6), line.cost_micro_usd);
    });
  }
});
