import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { markdownFiles } from '../support/markdown.js';

// The README and docs/ link only to files inside the repository, and every such link
// resolves: a clone must not point a reader at a file it does not have. Checked: markdown
// links `[text](target)` and reference definitions `[label]: target` (a `#fragment` must
// name a heading of the target page), and `*.md` paths written as inline code.
// Web links (http, https, mailto) are left alone.

const ROOT = resolve(import.meta.dirname, '../..');

/** The text outside fenced code blocks, line numbers kept. */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(readFileSync(file, 'utf8'))) {
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (m === null) continue;
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

interface Link {
  readonly where: string;
  readonly target: string;
  readonly from: string;
}

function links(file: string): Link[] {
  const found: Link[] = [];
  prose(readFileSync(file, 'utf8')).forEach((line, i) => {
    const where = `${relative(ROOT, file)}:${i + 1}`;
    const code = line.replace(/`[^`]*`/g, (span) => ' '.repeat(span.length));
    for (const m of code.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push({ where, target: m[1] as string, from: file });
    const def = /^\s*\[[^\]]+\]:\s+(\S+)/.exec(code);
    if (def !== null) found.push({ where, target: def[1] as string, from: file });
  });
  return found;
}

/** `docs/x.md`-like paths in inline code: from the repository root, or from the page's folder. */
function codePaths(file: string): Link[] {
  const found: Link[] = [];
  prose(readFileSync(file, 'utf8')).forEach((line, i) => {
    for (const m of line.matchAll(/`([\w./-]+\.md)`/g))
      found.push({ where: `${relative(ROOT, file)}:${i + 1}`, target: m[1] as string, from: file });
  });
  return found;
}

const files = markdownFiles();

test('finds the README, the docs and their links', () => {
  assert.ok(files.length > 10, `only ${files.length} markdown files`);
  assert.ok(files.flatMap(links).length > 30, 'too few links found');
});

test('every relative link in README.md and docs/ resolves to a file in the repository', () => {
  const broken: string[] = [];
  for (const link of files.flatMap(links)) {
    if (/^(https?|mailto):/i.test(link.target)) continue;
    const [path = '', fragment] = link.target.split('#');
    if (/^[a-z][a-z0-9+.-]*:/i.test(path) || isAbsolute(path)) {
      broken.push(`${link.where}: ${link.target}: not a path inside the repository`);
      continue;
    }
    const target = path === '' ? link.from : resolve(dirname(link.from), decodeURIComponent(path));
    if (relative(ROOT, target).startsWith('..')) broken.push(`${link.where}: ${link.target}: leaves the repository`);
    else if (!existsSync(target)) broken.push(`${link.where}: ${link.target}: no such file`);
    else if (fragment !== undefined && target.endsWith('.md') && !anchors(target).has(fragment))
      broken.push(`${link.where}: ${link.target}: no heading "#${fragment}" in ${relative(ROOT, target)}`);
  }
  assert.deepEqual(broken, []);
});

test('every *.md path written as code names a file in the repository', () => {
  const broken: string[] = [];
  for (const ref of files.flatMap(codePaths)) {
    const candidates = [resolve(ROOT, ref.target), resolve(dirname(ref.from), ref.target)];
    const inside = candidates.filter((c) => !relative(ROOT, c).startsWith('..'));
    if (!inside.some((c) => existsSync(c))) broken.push(`${ref.where}: ${ref.target}`);
  }
  assert.deepEqual(broken, []);
});
