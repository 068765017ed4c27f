import { type ChildProcess, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { formatPath, readBoundedFileSync } from '../contract/index.js';
import { type ConfigIssue, crossReferenceIssues } from './cross-check.js';
import { configErrorMap, knownKeysAt, nearestKey } from './issue-text.js';
import { type Piece, placePiece } from './pieces.js';
import { providerKeyHint, providerKeys } from './provider-types.js';
import { configSchema, type GatewayConfig } from './schema.js';
import { configWarnings } from './warnings.js';

export type { ConfigIssue };

export type ConfigResult =
  | {
      readonly ok: true;
      readonly config: GatewayConfig;
      readonly sourceHash: string;
      /** Valid settings that have no effect (e.g. a weight under a policy that ignores it). */
      readonly warnings: readonly ConfigIssue[];
    }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[]; readonly sourceHash?: string };

export function formatIssue(issue: ConfigIssue): string {
  return issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`;
}

/** Keys that users put one level too high: they belong to the overlay block. */
const OVERLAY_ONLY = new Set([
  'routing.reload',
  'routing.expected_scope',
  'routing.max_bytes',
  'routing.credential_mount_base',
  'routing.file',
]);

/** The provider a path names (`providers.<name>`), as the document has it; undefined for any other path. */
function providerAt(document: unknown, path: readonly PropertyKey[]): { readonly type?: unknown } | null | undefined {
  if (path.length !== 2 || path[0] !== 'providers') return undefined;
  const providers = (document as { providers?: Record<string, unknown> } | null)?.providers;
  const provider = providers?.[String(path[1])];
  return typeof provider === 'object' ? (provider as { readonly type?: unknown } | null) : null;
}

function zodIssues(error: z.ZodError, document: unknown): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  let unknown = 0;
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        // Each is matched against the known keys for a suggestion: list a bounded number.
        unknown += 1;
        if (unknown > MAX_LISTED) continue;
        const path = formatPath([...issue.path, key]);
        if (OVERLAY_ONLY.has(path)) {
          issues.push({ path, message: 'only allowed inside routing.overlay, and there is no overlay block' });
          continue;
        }
        // A provider's key that another type has: say whose it is, not which of this type's it resembles.
        const provider = providerAt(document, issue.path);
        const hint = provider === undefined ? null : providerKeyHint(provider?.type, key);
        if (hint !== null) {
          issues.push({ path, message: hint });
          continue;
        }
        const known = provider === undefined ? knownKeysAt(configSchema, issue.path) : providerKeys(provider?.type);
        const near = nearestKey(key, known);
        issues.push({ path, message: near === null ? 'unknown key' : `unknown key; did you mean ${near}?` });
      }
    } else {
      issues.push({ path: formatPath(issue.path), message: issue.message });
    }
  }
  if (unknown > MAX_LISTED) issues.push({ path: '', message: `… and ${unknown - MAX_LISTED} more unknown keys` });
  return issues;
}

/**
 * Validates an already-parsed document (from YAML, JSON or code). When the schema fails,
 * the cross-references (a route naming an unknown provider, an unresolvable secret) are
 * checked on the raw document too, so the user sees every error in one pass.
 */
export function checkConfig(document: unknown, sourceHash = '', env?: NodeJS.ProcessEnv): ConfigResult {
  const parsed = configSchema.safeParse(document, { error: configErrorMap });
  if (!parsed.success) {
    const issues = zodIssues(parsed.error, document);
    const seen = new Set(issues.map((i) => `${i.path}\u0000${i.message}`));
    for (const issue of crossReferenceIssues(document, env)) {
      if (!seen.has(`${issue.path}\u0000${issue.message}`)) issues.push(issue);
    }
    return { ok: false, issues, sourceHash };
  }
  return { ok: true, config: parsed.data, sourceHash, warnings: configWarnings(document, parsed.data) };
}

/** At most this many issues of one kind are listed; the rest are counted in one more line. */
const MAX_LISTED = 20;

/**
 * Every key that appears twice in one mapping, with its path and line, in one walk of the
 * document (a Set per mapping: linear in the number of keys).
 */
function duplicateKeys(root: unknown, lines: LineCounter): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  let more = 0;
  const stack: Array<{ node: unknown; path: Array<string | number> }> = [{ node: root, path: [] }];
  while (stack.length > 0) {
    const { node, path } = stack.pop() as { node: unknown; path: Array<string | number> };
    if (isMap(node)) {
      const seen = new Set<unknown>();
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? pair.key.value : pair.key;
        if (seen.has(key)) {
          if (issues.length < MAX_LISTED) {
            const at = isScalar(pair.key) && pair.key.range ? lines.linePos(pair.key.range[0]) : null;
            issues.push({
              path: formatPath([...path, String(key)]),
              message: `duplicate key${at === null ? '' : ` (line ${at.line})`}: a key may appear once in a mapping`,
            });
          } else more += 1;
        }
        seen.add(key);
        stack.push({ node: pair.value, path: [...path, String(key)] });
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        stack.push({ node: item, path: [...path, i] });
      });
    }
  }
  if (more > 0) issues.push({ path: '', message: `… and ${more} more duplicate keys` });
  return issues;
}

/**
 * Parses config text. YAML is a superset of JSON, so one parser serves both; the file name
 * only improves messages. Every YAML error is reported with its line, not just the first.
 */
export function parseConfigText(text: string, env?: NodeJS.ProcessEnv): ConfigResult {
  const sourceHash = createHash('sha256').update(text).digest('hex');
  if (text.trim() === '') return { ok: false, issues: [{ path: '', message: 'config is empty' }], sourceHash };
  // yaml's own uniqueKeys check compares every key with every other of its map (quadratic:
  // seconds at tens of thousands of keys, ADR 0013); duplicates are found below in one pass.
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: false, lineCounter });
  if (doc.errors.length > 0) {
    const issues = doc.errors.map((e) => ({
      path: '',
      // prettyErrors appends " at line N, column M:" and a source excerpt; keep our own form.
      message: `YAML/JSON syntax error${e.linePos ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : ''}: ${(e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
    }));
    return { ok: false, issues, sourceHash };
  }
  const duplicates = duplicateKeys(doc.contents, lineCounter);
  if (duplicates.length > 0) return { ok: false, issues: duplicates, sourceHash };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // An alias bomb (aliases of aliases, exponential when expanded) stops here.
    return { ok: false, issues: [{ path: '', message: `YAML cannot be expanded: ${(err as Error).message}` }], sourceHash };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, issues: [{ path: '', message: 'config must be a mapping (an object) at the top level' }], sourceHash };
  }
  return checkConfig(value, sourceHash, env);
}

/** Below this a config is read and parsed in place: a child's start would cost more than the parse. */
const OFF_THREAD_FROM_BYTES = 256 * 1024;

/**
 * loadConfigFile, but a large file is read and parsed in a child process at the lowest CPU
 * priority, so that a reload never stalls or slows the requests being served meanwhile
 * (a 35 MB config once held every request for minutes: ADR 0013, ADR 0021). Same result,
 * same messages.
 */
export async function loadConfigFileOffThread(
  path: string,
  env?: NodeJS.ProcessEnv,
  maxBytes = DEFAULT_MAX_CONFIG_BYTES,
): Promise<ConfigResult> {
  let size = 0;
  try {
    size = statSync(path).size;
  } catch {
    // Missing or unreadable: the bounded reader names the reason.
  }
  // Run from the TypeScript source (in-process tests under a loader, which a child would not
  // inherit), it parses in place: the built gateway always has its child.
  if (size < OFF_THREAD_FROM_BYTES || extname(fileURLToPath(import.meta.url)) !== '.js') return loadConfigFile(path, env, maxBytes);
  const result: Record<string, unknown> = {};
  let child: ChildProcess;
  try {
    child = fork(fileURLToPath(new URL('./load-child.js', import.meta.url)), [path, String(maxBytes)], {
      env: { ...(env ?? process.env) },
      // Structured clone (the advanced serialization): the pieces keep their types.
      serialization: 'advanced',
      // Not the parent's flags (a profiler's, say): the child only parses.
      execArgv: [],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
  } catch {
    // The machine cannot start a process now: parse here rather than fail the reload.
    return loadConfigFile(path, env, maxBytes);
  }
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    if (stderr.length < 4096) stderr += d.toString('utf8');
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.on('message', (piece: Piece | null) => {
        if (piece === null) return resolve();
        placePiece(result, piece);
        // The next piece is asked for only after the event loop has turned: asked for at
        // once, it would arrive while this one is handled, and be handled in the same turn.
        setImmediate(() => child.send('next'));
      });
      child.once('error', reject);
      child.once('exit', (code, signal) =>
        reject(
          new Error(
            `the config parser process exited with ${signal ?? `code ${code}`}${stderr === '' ? '' : `: ${stderr.trim().split('\n')[0]}`}`,
          ),
        ),
      );
    });
  } catch (err) {
    return { ok: false, issues: [{ path: '', message: `cannot parse config file ${path}: ${(err as Error).message}` }] };
  } finally {
    child.removeAllListeners('exit');
    if (child.connected) child.disconnect();
  }
  return result as unknown as ConfigResult;
}

/** The values (containers included) in one piece of a config sent back by the parser thread. */
export const PIECE_VALUES = 2048;

/** `server.max_config_bytes` when nothing serves yet (start-up, `switchyard validate`). */
export const DEFAULT_MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * Reads and parses a config file. Reading the file is this folder's only I/O, and it is
 * bounded (ADR 0013): a FIFO or a device at the path is refused without blocking, and a
 * file over `maxBytes` is refused before any parsing. The limit in force is the serving
 * generation's `server.max_config_bytes`; the default before anything serves.
 */
export function loadConfigFile(path: string, env?: NodeJS.ProcessEnv, maxBytes = DEFAULT_MAX_CONFIG_BYTES): ConfigResult {
  const read = readBoundedFileSync(path, maxBytes, 'config file');
  // An empty file is readable: the parser says what an empty config lacks.
  if (!read.ok && read.reason === 'empty') return parseConfigText('', env);
  if (!read.ok) {
    const reason =
      read.reason === 'missing'
        ? 'file not found'
        : read.reason === 'too_large'
          ? `larger than server.max_config_bytes (${maxBytes} bytes)`
          : read.message.slice(read.message.lastIndexOf(': ') + 2);
    return { ok: false, issues: [{ path: '', message: `cannot read config file ${path}: ${reason}` }] };
  }
  return parseConfigText(read.bytes.toString('utf8'), env);
}
