import { createHash } from 'node:crypto';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { formatPath, readBoundedFileSync } from '../contract/index.js';
import { type ConfigIssue, crossReferenceIssues } from './cross-check.js';
import { configErrorMap, knownKeysAt, nearestKey } from './issue-text.js';
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

function zodIssues(error: z.ZodError): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const path = formatPath([...issue.path, key]);
        if (OVERLAY_ONLY.has(path)) {
          issues.push({ path, message: 'only allowed inside routing.overlay, and there is no overlay block' });
          continue;
        }
        const near = nearestKey(key, knownKeysAt(configSchema, issue.path));
        issues.push({ path, message: near === null ? 'unknown key' : `unknown key; did you mean ${near}?` });
      }
    } else {
      issues.push({ path: formatPath(issue.path), message: issue.message });
    }
  }
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
    const issues = zodIssues(parsed.error);
    const seen = new Set(issues.map((i) => `${i.path}\u0000${i.message}`));
    for (const issue of crossReferenceIssues(document, env)) {
      if (!seen.has(`${issue.path}\u0000${issue.message}`)) issues.push(issue);
    }
    return { ok: false, issues, sourceHash };
  }
  return { ok: true, config: parsed.data, sourceHash, warnings: configWarnings(document, parsed.data) };
}

/**
 * Parses config text. YAML is a superset of JSON, so one parser serves both; the file name
 * only improves messages. Every YAML error is reported with its line, not just the first.
 */
export function parseConfigText(text: string, env?: NodeJS.ProcessEnv): ConfigResult {
  const sourceHash = createHash('sha256').update(text).digest('hex');
  if (text.trim() === '') return { ok: false, issues: [{ path: '', message: 'config is empty' }], sourceHash };
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const issues = doc.errors.map((e) => ({
      path: '',
      // prettyErrors appends " at line N, column M:" and a source excerpt; keep our own form.
      message: `YAML/JSON syntax error${e.linePos ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : ''}: ${(e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
    }));
    return { ok: false, issues, sourceHash };
  }
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

/** `server.max_config_bytes` when nothing serves yet (start-up, `switchyard validate`). */
export const DEFAULT_MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * Reads and parses a config file. Reading the file is this folder's only I/O, and it is
 * bounded (issue 12): a FIFO or a device at the path is refused without blocking, and a
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
