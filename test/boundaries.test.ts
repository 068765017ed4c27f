import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';

// The module rules (docs/architecture.md, "Modules"), enforced by reading every src/
// file's static imports: which folder may import which, only through its index.ts, and no
// circle in the import graph, folder to folder or file to file, type imports included.

const SRC = resolve(import.meta.dirname, '../src');

/** For each folder, the only other src/ folders it may import (errors.ts is open to all). */
const allowed: Record<string, readonly string[]> = {
  // config/ -> contract/: both are pure, and contract/ imports no other folder, so the edge
  // cannot form a cycle. config/ takes the contract's field-path notation and its
  // credential-value shapes, so each exists once and both name paths and refuse secrets alike.
  config: ['contract'],
  contract: [],
  // routing/ -> contract/, types only: a candidate's admission state is the contract's closed
  // set. contract/ imports no other folder, so selection still depends on nothing stateful.
  routing: ['contract'],
  resilience: [],
  // The relay decides, before the first byte, whether an upstream answer fails over: resilience's rule.
  providers: ['resilience'],
  telemetry: [],
  // The MCP client sends through a provider's pool, with its credential: nothing else.
  mcp: ['providers'],
  // a2a/ -> providers/, types only: an upstream agent's card and calls go through the
  // provider's pool and its raw handler. The protocol's shapes, the translation and the task
  // owners' stores know no request, no generation and no config.
  a2a: ['providers'],
  mock: [],
  // How a Redis connection is addressed (its credentials out of the URL, its TLS): one place
  // for every store that keeps its state in Redis.
  redis: [],
  // governance/ -> providers/, types only: the units it prices (TokenUsage, PriceTable) are
  // what the adapters report and what live/ carries per generation. governance/ still never
  // imports live/ or config/ (the rules below), and providers/ imports no other folder.
  governance: ['providers', 'redis'],
  // The audit writer continues an existing file's chain and verify reads it: both through
  // contract/'s bounded reader (readFileSlice), never a plain unbounded read.
  audit: ['contract'],
  // live/ -> database/, types only: a keyring holds the snapshot of managed teams and keys it was built from.
  live: ['config', 'contract', 'providers', 'routing', 'mcp', 'database'],
  // The database layer stores teams and keys as JSON and knows nothing of their meaning.
  database: [],
  // The gateway's store of responses and conversations: its database backend runs on
  // database/'s surface; server/ adapts the config to its settings, so it needs no config/.
  responses: ['database', 'redis'],
  // managed/ owns the admin API's writes of teams and keys: it judges them by config/'s
  // schemas, commits through database/, hashes secrets and compares allow lists with
  // governance/, audits through audit/, and reads the serving keyring (live/, types only) to
  // refuse what the keyring would not join. It sits between server/ (which maps HTTP to it)
  // and database/, and never imports server/ or request/.
  managed: ['config', 'database', 'governance', 'audit', 'live'],
  // The parent-directory file watch: a leaf, so the gateway and the publisher share one
  // watcher without either depending on the other.
  watch: [],
  // publisher/ renders with contract/'s digest, ids and parser (never a second copy), watches
  // its inventory through watch/, and logs through telemetry/'s logger. Never server/ or live/:
  // the control plane must not depend on the data plane it feeds.
  publisher: ['contract', 'watch', 'telemetry'],
  // Callers who sign in: the `auth` block's types, and the principal and policy a token's claims are mapped under.
  auth: ['config', 'governance'],
  // Guardrails: pure checks on canonical text, reading only their config's types and the
  // canonical form (providers/). request/ composes them into stages and transforms.
  guardrails: ['config', 'providers'],
  // The response cache's entries, key and stores, and the replay of an entry in the client's
  // protocol through the canonical form (providers/). request/ looks up and stores.
  cache: ['providers', 'redis'],
  // The request path: from an admitted caller to its record. It reads the generation (live/),
  // routes (routing/), relays (providers/), admits and bills (governance/), audits and
  // records; it never reaches the listeners or the composition root (server/).
  // request/ -> database/, types only: a ledger row is the database's own row type; the writer is handed in.
  request: [
    'config',
    'live',
    'routing',
    'providers',
    'resilience',
    'governance',
    'audit',
    'telemetry',
    'mcp',
    'database',
    'responses',
    'auth',
    'guardrails',
    'cache',
    'a2a',
  ],
  server: [
    'config',
    'contract',
    'live',
    'routing',
    'providers',
    'resilience',
    'governance',
    'audit',
    'telemetry',
    'watch',
    'request',
    'mcp',
    'database',
    'managed',
    'responses',
    'auth',
    'guardrails',
    'cache',
    'a2a',
    'redis',
  ],
  // cli/ holds the subcommands; it may import every folder's surface.
  cli: [
    'config',
    'contract',
    'live',
    'routing',
    'providers',
    'resilience',
    'governance',
    'audit',
    'telemetry',
    'server',
    'request',
    'mcp',
    'mock',
    'publisher',
    'watch',
    'database',
    'managed',
    'responses',
    'a2a',
  ],
  // cli.ts is the entry point: it runs cli/, and may import every folder's surface.
  '(root)': [
    'cli',
    'config',
    'contract',
    'live',
    'routing',
    'providers',
    'resilience',
    'governance',
    'audit',
    'telemetry',
    'server',
    'request',
    'mcp',
    'mock',
    'publisher',
    'watch',
    'database',
    'managed',
    'responses',
    'a2a',
  ],
};

/** The module rules, kept by name so a failure cites the rule it broke. */
const rules: Array<{ from: string; to: string; rule: string }> = [
  { from: 'live', to: 'governance', rule: 'live/ never imports governance/' },
  { from: 'live', to: 'audit', rule: 'live/ never imports audit/' },
  { from: 'live', to: 'server', rule: 'live/ never imports server/' },
  { from: 'live', to: 'request', rule: 'live/ never imports request/' },
  { from: 'request', to: 'server', rule: 'request/ never imports server/: server/ hands it the services' },
  { from: 'governance', to: 'request', rule: 'governance/ is a leaf: never request/' },
  { from: 'governance', to: 'live', rule: 'governance/ is a leaf: never live/' },
  { from: 'governance', to: 'config', rule: 'governance/ is a leaf: never config/' },
  { from: 'governance', to: 'server', rule: 'governance/ is a leaf: never server/' },
  { from: 'audit', to: 'live', rule: 'audit/ is a leaf: never live/' },
  { from: 'audit', to: 'config', rule: 'audit/ is a leaf: never config/' },
  { from: 'audit', to: 'server', rule: 'audit/ is a leaf: never server/' },
  { from: 'publisher', to: 'server', rule: 'publisher/ never imports server/' },
  { from: 'publisher', to: 'live', rule: 'publisher/ never imports live/' },
  { from: 'watch', to: 'server', rule: 'watch/ is a leaf: never server/' },
  { from: 'watch', to: 'publisher', rule: 'watch/ is a leaf: never publisher/' },
  { from: 'responses', to: 'request', rule: 'responses/ is below the request path: never request/' },
  { from: 'responses', to: 'server', rule: 'responses/ is below the composition root: never server/' },
  { from: 'a2a', to: 'request', rule: 'a2a/ is below the request path: never request/' },
  { from: 'a2a', to: 'server', rule: 'a2a/ is below the composition root: never server/' },
  { from: 'a2a', to: 'live', rule: 'a2a/ knows no generation: never live/' },
  { from: 'a2a', to: 'config', rule: 'a2a/ knows no config: never config/' },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function folderOf(file: string): string {
  const rel = relative(SRC, file);
  return rel.includes(sep) ? (rel.split(sep)[0] as string) : '(root)';
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/g)) specs.push(m[1] as string);
  for (const m of text.matchAll(/(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g)) specs.push(m[1] as string);
  for (const m of text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1] as string);
  return specs;
}

const files = sourceFiles(SRC);

test('the boundary test sees the source tree', () => {
  assert.ok(files.length > 20, `expected the src/ tree, found ${files.length} files`);
});

test('each folder imports only the folders the module rules allow, and only through their index.ts', () => {
  const problems: string[] = [];
  for (const file of files) {
    const from = folderOf(file);
    for (const spec of importsOf(file)) {
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
      const to = folderOf(target);
      const where = relative(SRC, file);
      if (relative(SRC, target) === 'errors.ts') continue;
      if (to === from) continue;
      const broken = rules.find((r) => r.from === from && r.to === to);
      if (broken !== undefined) problems.push(`${where} imports ${spec}: ${broken.rule}`);
      else if (!(allowed[from] ?? []).includes(to)) problems.push(`${where} imports ${spec}: ${from}/ may not import ${to}/`);
      if (to !== '(root)' && relative(join(SRC, to), target) !== 'index.ts')
        problems.push(`${where} imports ${spec}: deep import; use ${to}/index.js`);
    }
  }
  assert.deepEqual(problems, []);
});

test('errors.ts imports nothing, so every folder can use the catalog', () => {
  assert.deepEqual(importsOf(join(SRC, 'errors.ts')), []);
});

test('config/ and contract/ do no network I/O and keep no timers', () => {
  const banned = /from ['"](node:)?(http|https|net|dgram|undici|timers)['"]|setTimeout|setInterval/;
  for (const file of files.filter((f) => ['config', 'contract'].includes(folderOf(f)))) {
    assert.doesNotMatch(readFileSync(file, 'utf8'), banned, `${relative(SRC, file)} must stay a pure function of its input`);
  }
});

test('a2a/ takes from providers/ only types, the reading of a failed connection and the address rules: it sends on the pool it is handed, and builds none', () => {
  // The one value shared with mcp/: which connection errors prove a request was never sent.
  // And the address rules the provider probe shares: what is public, a list of CIDR ranges.
  const allowed = new Set(['connectionFailure', 'isPublicAddress', 'AddressList']);
  const valueImports = files
    .filter((f) => folderOf(f) === 'a2a')
    .flatMap((f) =>
      [...readFileSync(f, 'utf8').matchAll(/(?:^|\n)\s*(import|export)(\s+type)?\s([^;]*?)from\s+['"]([^'"]+)['"]/g)]
        .filter((m) => m[2] === undefined && (m[4] as string).startsWith('../providers/'))
        .flatMap((m) =>
          (m[3] as string)
            .replace(/[{}]/g, '')
            .split(',')
            .map((name) => name.trim())
            .filter((name) => name !== '' && !name.startsWith('type ') && !allowed.has(name))
            .map((name) => `${relative(SRC, f)}: ${name}`),
        ),
    );
  assert.deepEqual(valueImports, []);
});

/** Every relative import of every src/ file, as resolved src/ files (type imports included). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = importsOf(file)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => relative(SRC, resolve(dirname(file), spec).replace(/\.js$/, '.ts')));
    graph.set(relative(SRC, file), targets);
  }
  return graph;
}

/** One circle in the graph, as the files around it, or null when there is none (depth-first search). */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | null => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const seen = state.get(next);
      if (seen === 'open') return [...path.slice(path.indexOf(next)), next];
      if (seen === undefined) {
        const found = visit(next);
        if (found !== null) return found;
      }
    }
    path.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of [...graph.keys()].sort()) {
    if (state.has(node)) continue;
    const found = visit(node);
    if (found !== null) return found;
  }
  return null;
}

test('the import graph of src/ has no circle, file to file, type imports included', () => {
  const graph = importGraph();
  const missing = [...graph.values()].flat().filter((target) => !graph.has(target));
  assert.deepEqual(missing, [], 'every relative import resolves to a src/ file');
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `an import circle: ${cycle?.join(' -> ')}`);
});

test('the cycle search finds a circle when there is one', () => {
  const graph = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts', 'd.ts']],
    ['d.ts', []],
  ]);
  assert.deepEqual(findCycle(graph), ['a.ts', 'b.ts', 'c.ts', 'a.ts']);
  assert.equal(
    findCycle(
      new Map([
        ['a.ts', ['b.ts']],
        ['b.ts', []],
      ]),
    ),
    null,
  );
});

test('no folder of src/ and its index.ts import each other in a circle of folders', () => {
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of importGraph()) {
    const from = folderOf(join(SRC, file));
    for (const target of targets) {
      const to = folderOf(join(SRC, target));
      if (to !== from && to !== '(root)' && relative(SRC, join(SRC, target)) !== 'errors.ts') {
        if (!folders.has(from)) folders.set(from, new Set());
        folders.get(from)?.add(to);
      }
    }
  }
  const graph = new Map([...folders].map(([k, v]) => [k, [...v]] as const));
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `a circle of folders: ${cycle?.join(' -> ')}`);
});
