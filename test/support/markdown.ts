import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The repository root. */
export const ROOT = resolve(import.meta.dirname, '../..');

/** README.md and every Markdown file under docs/: the documents the doc tests keep true. */
export function markdownFiles(): string[] {
  const files = [join(ROOT, 'README.md')];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith('.md')) files.push(join(dir, entry.name));
    }
  };
  walk(join(ROOT, 'docs'));
  return files;
}
