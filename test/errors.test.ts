import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { anthropicErrorBody, errorCatalog, openaiErrorBody } from '../src/errors.js';

// The catalog is the contract with clients: docs/errors.md documents it, code for code.

const doc = readFileSync(resolve(import.meta.dirname, '../docs/errors.md'), 'utf8');
const documented = new Map([...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1] as string, Number(m[2])]));

test('docs/errors.md lists every code of the catalog with its status, and no other', () => {
  const catalog = new Map(Object.entries(errorCatalog).map(([code, spec]) => [code, spec.status]));
  assert.deepEqual([...documented].sort(), [...catalog].sort());
});

test('every code renders in both client protocols with its wire types', () => {
  for (const [code, spec] of Object.entries(errorCatalog) as Array<
    [keyof typeof errorCatalog, (typeof errorCatalog)[keyof typeof errorCatalog]]
  >) {
    const openai = JSON.parse(openaiErrorBody(code, 'm', 'p')) as { error: Record<string, unknown> };
    assert.deepEqual(openai, { error: { message: 'm', type: spec.openai, param: 'p', code } });
    const anthropic = JSON.parse(anthropicErrorBody(code, 'm')) as Record<string, unknown>;
    assert.deepEqual(anthropic, { type: 'error', error: { type: spec.anthropic, message: 'm' } });
  }
});
