import { readFileSync } from 'node:fs';
import type { SecretRef } from './schema.js';

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
  let text: string;
  try {
    text = readFileSync(ref.file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { ok: false, message: `secret file ${ref.file} cannot be read (${code === 'ENOENT' ? 'file not found' : code})` };
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') return { ok: false, message: `secret file ${ref.file} is empty` };
  return { ok: true, value };
}

/** Where a secret comes from (`env:EAST_KEY`, `file:/run/secrets/k`): safe to show, never the value. */
export function describeSecretRef(ref: SecretRef): string {
  return 'env' in ref ? `env:${ref.env}` : `file:${ref.file}`;
}
