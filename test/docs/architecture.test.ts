import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';

// docs/architecture.md against src/: its module table names every folder (and only real
// ones), and its import graph is the one the code has, edge for edge. What is *allowed* is
// test/boundaries.test.ts's business; this page shows what *is*.

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const DOC = 'docs/architecture.md';
const text = readFileSync(join(ROOT, DOC), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The src/ folder a file belongs to; files directly in src/ (cli.ts, errors.ts) belong to none. */
function folderOf(file: string): string | null {
  const rel = relative(SRC, file);
  return rel.includes(sep) ? (rel.split(sep)[0] as string) : null;
}

/** Folder-to-folder edges of the static imports in src/, as `from --> to`. */
function codeEdges(): Set<string> {
  const edges = new Set<string>();
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file);
    if (from === null) continue;
    const body = readFileSync(file, 'utf8');
    for (const m of body.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"](\.[^'"]+)['"]/g)) {
      const to = folderOf(resolve(dirname(file), m[1] as string));
      if (to !== null && to !== from) edges.add(`${from} --> ${to}`);
    }
  }
  return edges;
}

function docEdges(): Set<string> {
  const block = /```mermaid\n([\s\S]*?)\n```/.exec(text);
  assert.ok(block !== null, `${DOC} has no mermaid block`);
  const edges = new Set<string>();
  for (const line of (block[1] as string).split('\n')) {
    const m = /^\s*([\w-]+) --> ([\w-]+)\s*$/.exec(line);
    if (m !== null) edges.add(`${m[1]} --> ${m[2]}`);
  }
  return edges;
}

const sorted = (s: Set<string>): string[] => [...s].sort();

test("the module graph in architecture.md is src/'s folder imports, edge for edge", () => {
  const code = codeEdges();
  assert.ok(code.size > 10, `only ${code.size} edges found in src/`);
  assert.deepEqual(sorted(docEdges()), sorted(code));
});

test('the module table names every src/ folder, and nothing that is not there', () => {
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${e.name}/`);
  const named = [...text.matchAll(/^\| `([\w-]+\/)` \|/gm)].map((m) => m[1] as string);
  assert.deepEqual([...named].sort(), [...folders].sort());
  const files = [...text.matchAll(/^\| (`[\w.-]+\.ts`(?:, `[\w.-]+\.ts`)*) \|/gm)].flatMap((m) =>
    [...(m[1] as string).matchAll(/`([\w.-]+\.ts)`/g)].map((f) => f[1] as string),
  );
  const missing = files.filter((f) => !existsSync(join(SRC, f)));
  assert.deepEqual(missing, []);
  const topLevel = readdirSync(SRC).filter((f) => f.endsWith('.ts'));
  assert.deepEqual([...files].sort(), topLevel.sort(), 'the table names every file directly in src/');
});
