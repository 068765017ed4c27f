// Where a published overlay goes, and the two atomic ways of putting it there. A reader
// (the gateway) must only ever see a complete old file or a complete new one.
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readlink, rename, rm, symlink, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PublishError } from './issues.js';

export type Layout = 'kubelet' | 'rename';
export const LAYOUTS: readonly Layout[] = ['kubelet', 'rename'];

export type Output =
  /** A projected-volume directory, written as the kubelet writes a ConfigMap: `dir/key -> ..data/key`. */
  | { readonly layout: 'kubelet'; readonly dir: string; readonly key: string }
  /** One plain file, replaced by rename. */
  | { readonly layout: 'rename'; readonly file: string };

/** The path a reader opens (in the kubelet layout, the key's symlink). */
export function visiblePath(output: Output): string {
  return output.layout === 'kubelet' ? join(output.dir, output.key) : output.file;
}

/**
 * The publisher's state file lives beside the output, outside the ConfigMap's keys: the
 * gateway's watch reacts only to its own file and `..data`, so writing it causes no reload.
 */
export function statePathFor(output: Output): string {
  const visible = visiblePath(output);
  return join(dirname(visible), `.${basename(visible)}.publisher-state.json`);
}

export async function writeOutput(output: Output, text: string): Promise<void> {
  try {
    if (output.layout === 'kubelet') await writeKubelet(output.dir, output.key, text);
    else await writeByRename(output.file, text);
  } catch (err) {
    if (err instanceof PublishError) throw err;
    throw new PublishError('write_failed', `cannot write ${JSON.stringify(visiblePath(output))}: ${errorCode(err)}`);
  }
}

/**
 * Temp file in the target's own directory (rename is atomic only within one file system),
 * fsynced before the rename so a crash cannot leave a renamed but empty file, and the
 * directory fsynced after it so the rename itself survives a crash.
 */
export async function writeByRename(file: string, text: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeSynced(tmp, text);
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await syncDirectory(dirname(file));
}

/**
 * The kubelet's atomic writer for a projected volume, step for step: the data goes into a new
 * timestamped folder `..YYYY_MM_DD_HH_MM_SS.NNNNNNNNN`; a `..data_tmp` symlink is pointed at it
 * and renamed over `..data` (one rename: the whole volume changes at once); the key is a
 * symlink `key -> ..data/key`, created once; then the old folder is removed. A reader that
 * opened the key before the swap keeps reading the old folder's complete file.
 */
export async function writeKubelet(dir: string, key: string, text: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  // Checked before anything is written: a plain file here (a directory once published with
  // the rename layout) would shadow the key's symlink, and the swap would change nothing.
  const link = join(dir, key);
  const existing = await lstat(link).catch(() => null);
  if (existing !== null && !existing.isSymbolicLink()) {
    throw new PublishError(
      'write_failed',
      `${JSON.stringify(link)} exists and is not a symlink into ..data; not a kubelet-layout directory`,
    );
  }
  const folder = timestampedFolder();
  await mkdir(join(dir, folder));
  await writeSynced(join(dir, folder, key), text);
  await syncDirectory(join(dir, folder));
  const data = join(dir, '..data');
  const old = await readlink(data).catch(() => null);
  const tmp = join(dir, '..data_tmp');
  await rm(tmp, { force: true }); // a crash between symlink and rename leaves one behind
  await symlink(folder, tmp);
  await rename(tmp, data);
  if (existing === null) await symlink(join('..data', key), link);
  await syncDirectory(dir);
  if (old !== null && old !== folder && old.startsWith('..')) await rm(join(dir, old), { recursive: true, force: true });
}

let lastStamp = '';
let sameStamp = 0;

/** `..2026_12_01_02_50_00.123456789`, unique within this process even within one millisecond. */
function timestampedFolder(): string {
  const iso = new Date().toISOString(); // 2026-12-01T02:50:00.123Z
  const base = `..${iso.slice(0, 19).replace(/[-:T]/g, '_')}`;
  const ms = iso.slice(20, 23);
  const stamp = `${base}.${ms}`;
  sameStamp = stamp === lastStamp ? sameStamp + 1 : 0;
  lastStamp = stamp;
  return `${stamp}${String(sameStamp).padStart(6, '0')}`;
}

async function writeSynced(path: string, text: string): Promise<void> {
  const handle = await open(path, 'wx', 0o644);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a directory (EINVAL); the rename has still happened.
  } finally {
    await handle.close();
  }
}

function errorCode(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : ((err as Error)?.message ?? 'write failed');
}
