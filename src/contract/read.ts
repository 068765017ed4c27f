// The bounded read of an overlay file: the contract's only I/O.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import type { Rejection } from './types.js';
import { reject } from './types.js';

export type ReadResult = { ok: true; bytes: Buffer } | Rejection<'missing' | 'unreadable' | 'empty' | 'too_large'>;

/**
 * Reads at most `maxBytes + 1` bytes: one byte past the limit proves the file too large
 * without reading the rest. The path is opened as given, never resolved: in a ConfigMap
 * volume it is a symlink into `..data`, which the kubelet swaps atomically, and opening the
 * link reads whichever complete version it points at (docs/overlay-format.md,
 * "Deploying with Kubernetes").
 */
export async function readOverlayFile(path: string, maxBytes: number): Promise<ReadResult> {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
  const where = `overlay file ${JSON.stringify(path)}`;
  return withRegularFile<ReadResult>(path, where, async (handle) => {
    const buffer = Buffer.allocUnsafe(maxBytes + 1);
    const filled = await fill(handle, buffer, null);
    if (filled > maxBytes) return reject('too_large', `${where}: larger than ${maxBytes} bytes`);
    if (filled === 0) return reject('empty', `${where}: the file is empty`);
    // Copy out, so the caller does not hold a maxBytes-sized buffer for a small file.
    return { ok: true, bytes: Buffer.from(buffer.subarray(0, filled)) };
  });
}

/**
 * The same bounded read, synchronous, for small files read while a generation is built
 * (secrets, the config): open without blocking, require a regular file (a FIFO or a device
 * such as /dev/zero is refused, never read), read at most `maxBytes + 1` bytes. Bounded by
 * the cap, so it never holds the event loop for long. `what` names the file in messages.
 */
export function readBoundedFileSync(path: string, maxBytes: number, what: string): ReadResult {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
  const where = `${what} ${JSON.stringify(path)}`;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    return openFailure(where, error);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return reject('unreadable', `${where}: not a regular file`);
    // Sized by the cap, not by the size fstat saw: a file that grows meanwhile is still
    // read to its end or to one byte past the cap.
    const buffer = Buffer.allocUnsafe(maxBytes + 1);
    let filled = 0;
    while (filled < buffer.length) {
      const n = readSync(fd, buffer, filled, buffer.length - filled, null);
      if (n === 0) break;
      filled += n;
    }
    if (filled > maxBytes) return reject('too_large', `${where}: larger than ${maxBytes} bytes`);
    if (filled === 0) return reject('empty', `${where}: the file is empty`);
    return { ok: true, bytes: Buffer.from(buffer.subarray(0, filled)) };
  } catch (error) {
    return reject('unreadable', `${where}: ${errorCode(error)}`);
  } finally {
    closeSync(fd);
  }
}

export type SliceResult =
  | { ok: true; bytes: Buffer /** The file's size when it was read. */; size: number }
  | Rejection<'missing' | 'unreadable'>;

/**
 * The bounded read for files that grow (the audit log): at most `maxBytes` bytes from
 * `position`, plus the file's size, so a caller reads the tail, or walks a large file in
 * slices, without ever holding more than one slice. `what` names the file in messages.
 */
export async function readFileSlice(path: string, position: number, maxBytes: number, what = 'file'): Promise<SliceResult> {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0 || !Number.isSafeInteger(position) || position < 0) {
    throw new RangeError(`position and maxBytes must be non-negative integers, got ${position}, ${maxBytes}`);
  }
  return withRegularFile<SliceResult>(path, `${what} ${JSON.stringify(path)}`, async (handle, size) => {
    const buffer = Buffer.allocUnsafe(Math.max(0, Math.min(maxBytes, size - position)));
    const filled = await fill(handle, buffer, position);
    return { ok: true, bytes: buffer.subarray(0, filled), size };
  });
}

/**
 * Opens `path` as given (never resolved) and without blocking (O_NONBLOCK: a
 * FIFO at the path must not hang the caller; it fails the regular-file check), checks that
 * it is a regular file, runs `read`, and closes it. Every failure is a rejection naming the
 * file, never an exception.
 */
async function withRegularFile<R>(
  path: string,
  where: string,
  read: (handle: FileHandle, size: number) => Promise<R | Rejection<'unreadable'>>,
): Promise<R | Rejection<'missing' | 'unreadable'>> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    return openFailure(where, error);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return reject('unreadable', `${where}: not a regular file`);
    return await read(handle, stat.size);
  } catch (error) {
    return reject('unreadable', `${where}: ${errorCode(error)}`);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Reads into `buffer` until it is full or the file ends, from `position` (null: the current offset). */
async function fill(handle: FileHandle, buffer: Buffer, position: number | null): Promise<number> {
  let filled = 0;
  while (filled < buffer.length) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, position === null ? null : position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled;
}

function openFailure(where: string, error: unknown): Rejection<'missing' | 'unreadable'> {
  const code = errorCode(error);
  if (code === 'ENOENT' || code === 'ENOTDIR') return reject('missing', `${where}: not found (${code})`);
  return reject('unreadable', `${where}: cannot open (${code})`);
}

function errorCode(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : 'read failed';
}
