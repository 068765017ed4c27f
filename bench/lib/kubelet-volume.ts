import { existsSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

let folders = 0;

/**
 * The kubelet's atomic writer for a projected ConfigMap volume (docs/overlay-format.md,
 * "Deploying with Kubernetes"), step for step as test/support/overlay.ts kubeletWrite does it: data in a new
 * timestamped folder, `..data_tmp` pointed at it, renamed over `..data`, each key a symlink
 * to `..data/<key>`, the old folder deleted. A copy rather than a call, because apply latency
 * is measured from the rename, and only the writer itself can read the clock right there.
 * Returns performance.now() taken just before the rename.
 */
export function kubeletSwap(dir: string, files: Readonly<Record<string, string>>): number {
  mkdirSync(dir, { recursive: true });
  folders += 1;
  const stamp = `..${new Date().toISOString().replace(/[-:T]/g, '_').replace('Z', '')}${String(folders).padStart(6, '0')}`;
  mkdirSync(join(dir, stamp));
  for (const [key, text] of Object.entries(files)) writeFileSync(join(dir, stamp, key), text);
  const data = join(dir, '..data');
  const old = existsSync(data) ? readlinkSync(data) : null;
  symlinkSync(stamp, join(dir, '..data_tmp'));
  const swappedAt = performance.now();
  renameSync(join(dir, '..data_tmp'), data);
  for (const key of Object.keys(files)) {
    const link = join(dir, key);
    if (!existsSync(link)) symlinkSync(join('..data', key), link);
  }
  if (old !== null) rmSync(join(dir, old), { recursive: true, force: true });
  return swappedAt;
}
