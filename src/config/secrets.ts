import { readBoundedFileSync } from '../contract/index.js';
import type { SecretRef } from './schema.js';

/** A credential or token is a few hundred bytes; a secret file past this is a mistake. */
export const MAX_SECRET_BYTES = 64 * 1024;

export type SecretResult = { readonly ok: true; readonly value: string } | { readonly ok: false; readonly message: string };

/**
 * Resolves a secret reference. The message names the reference (variable name or path),
 * never a value. A file's trailing newline is dropped, as Kubernetes secret files and
 * `echo key > file` both leave one.
 */
export function resolveSecret(ref: SecretRef, env: NodeJS.ProcessEnv): SecretResult {
  if ('env' in ref) {
    const value = env[ref.env];
    if (value === undefined || value === '') return { ok: false, message: `environment variable ${ref.env} is not set` };
    return { ok: true, value };
  }
  // Bounded and non-blocking (ADR 0013): a FIFO or a device at the path is refused, never
  // waited on or read without end.
  const read = readBoundedFileSync(ref.file, MAX_SECRET_BYTES, 'secret file');
  if (!read.ok) {
    const why =
      read.reason === 'missing'
        ? 'file not found'
        : read.reason === 'empty'
          ? 'empty'
          : read.message.slice(read.message.lastIndexOf(': ') + 2);
    return { ok: false, message: `secret file ${ref.file} cannot be read (${why})` };
  }
  const value = read.bytes.toString('utf8').replace(/\r?\n$/, '');
  if (value === '') return { ok: false, message: `secret file ${ref.file} is empty` };
  return { ok: true, value };
}

/** Where a secret comes from (`env:EAST_KEY`, `file:/run/secrets/k`): safe to show, never the value. */
export function describeSecretRef(ref: SecretRef): string {
  return 'env' in ref ? `env:${ref.env}` : `file:${ref.file}`;
}
