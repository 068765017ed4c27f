import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { requestStarted } from '../../src/audit/index.js';

// What the audit tests share: a temp folder per test file, a request_started record, and a
// file's lines.

/** One test file's folder: made before its tests and removed after them; `fresh()` names a new audit file in it. */
export class AuditDir {
  #path = '';
  #count = 0;

  constructor(prefix: string) {
    before(() => {
      this.#path = mkdtempSync(join(tmpdir(), prefix));
    });
    after(() => rmSync(this.#path, { recursive: true, force: true }));
  }

  get path(): string {
    return this.#path;
  }

  fresh(): string {
    this.#count += 1;
    return join(this.#path, `audit-${this.#count}.jsonl`);
  }
}

/** The record of request `r<i>` admitted for ci-bot of team platform. */
export function started(i: number) {
  return requestStarted({
    requestId: `r${i}`,
    keyId: 'ci-bot',
    team: 'platform',
    model: 'gpt-4o-mini',
    generation: 3,
    revision: null,
    decision: 'admitted',
    reason: null,
  });
}

/** A file's non-empty lines. */
export function lines(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
}
