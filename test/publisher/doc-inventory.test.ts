import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { parseInventory, renderOverlay } from '../../src/publisher/index.js';

// The inventory a reader copies from docs/overlay-format.md is one the publisher accepts.
// (test/doc-configs.test.ts skips it: it is not a gateway config.)

test('the inventory in docs/overlay-format.md parses and renders', () => {
  const doc = readFileSync(resolve(import.meta.dirname, '../../docs/overlay-format.md'), 'utf8');
  const block = /publisher inventory[^\n]*\n```yaml\n([\s\S]*?)\n```/.exec(doc)?.[1];
  assert.ok(block !== undefined, 'the inventory block is there');
  const inventory = parseInventory(block);
  assert.equal(renderOverlay(inventory).payload.candidates.length, 2);
});
