import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { Metrics } from '../../src/telemetry/index.js';

// docs/operations.md names the metrics an operator alerts on: its metrics table must list
// every series the gateway registers, and only those, and no metric named anywhere on the
// page may be one the gateway does not have. Node's process metrics (switchyard_process_*,
// switchyard_nodejs_*) come from prom-client and are named only as examples.

const DOC = 'docs/operations.md';
const text = readFileSync(resolve(import.meta.dirname, '../..', DOC), 'utf8');
const PROCESS = /^switchyard_(process|nodejs)_/;

async function registered(): Promise<string[]> {
  const metrics = new Metrics(() => []);
  metrics.trackBudgets(
    async () => [],
    () => true,
  );
  const all = await metrics.registry.getMetricsAsJSON();
  return all.map((m) => m.name).filter((n) => !PROCESS.test(n));
}

/** The first cell of each row of the metrics table. */
function tableRows(): string[] {
  return [...text.matchAll(/^\| `(switchyard_[a-z0-9_]+)` \|/gm)].map((m) => m[1] as string);
}

test("the metrics table lists exactly the gateway's own series", async () => {
  const names = await registered();
  assert.ok(names.length > 15, `only ${names.length} metrics registered`);
  assert.deepEqual([...tableRows()].sort(), [...names].sort());
});

test('every metric the page names exists', async () => {
  const names = new Set(await registered());
  const named = new Set([...text.matchAll(/\bswitchyard_[a-z0-9_]+/g)].map((m) => m[0]));
  assert.deepEqual(
    [...named].filter((n) => !names.has(n) && !PROCESS.test(n)),
    [],
  );
});
