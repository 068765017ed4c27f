import { existsSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { computeRevision } from '../../src/contract/index.js';

export interface EnvelopeOptions {
  network?: string;
  localSite?: string;
  gateway?: string;
  namespace?: string;
  sourceUid?: string;
  sourceGeneration?: number;
  renderedAt?: string;
  selectionMode?: 'deterministic' | 'roundRobin' | 'random' | 'weightedRandom';
}

/** A candidate with defaults: kind inference_model, fresh, site from the cluster. */
export function candidate(name: string, cluster: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { kind: 'inference_model', name, site: `${cluster}-site`, cluster, fresh: true, ...extra };
}

/** A legacy overlay payload: one candidate per model, each on cluster `east`. */
export function legacyOverlay(...models: string[]): string {
  return JSON.stringify({ local_site: 'east', candidates: models.map((m) => candidate(m, 'east')) });
}

/** Renders a valid v1 envelope (digest computed with the project's contract code). */
export function envelope(candidates: unknown[], o: EnvelopeOptions = {}): Record<string, unknown> {
  const network = o.network ?? 'test-net';
  const localSite = o.localSite ?? 'east';
  const payload: Record<string, unknown> = { network, local_site: localSite, candidates };
  if (o.selectionMode !== undefined) payload.selection_policy = { mode: o.selectionMode };
  const digest = computeRevision(payload as unknown as Parameters<typeof computeRevision>[0]);
  return {
    schema_version: '1.0.0',
    revision: { kind: 'content_addressed', algorithm: 'sha256', value: digest },
    content_digest: { algorithm: 'sha256', value: digest },
    scope: { network, gateway: o.gateway ?? 'test-gw', namespace: o.namespace ?? 'ai', local_site: localSite },
    provenance: {
      producer: 'switchyard-tests',
      producer_version: '0.0.0',
      source_name: network,
      source_uid: o.sourceUid ?? 'uid-1',
      source_generation: o.sourceGeneration ?? 1,
      rendered_at: o.renderedAt ?? '2026-11-29T00:00:00Z',
    },
    overlay: { ...payload, generated_at: o.renderedAt ?? '2026-11-29T00:00:00Z' },
  };
}

/**
 * Writes `files` into a kubelet-style projected volume at `dir`: data in a timestamped
 * folder, `..data` -> that folder, each key a symlink to `..data/<key>`. An update writes a
 * new folder, points `..data_tmp` at it, renames it over `..data`, then deletes the old one.
 */
export function kubeletWrite(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  const stamp = `..${new Date().toISOString().replace(/[-:T]/g, '_').replace('Z', '')}${Math.random().toString(36).slice(2, 8)}`;
  const folder = join(dir, stamp);
  mkdirSync(folder);
  for (const [key, text] of Object.entries(files)) writeFileSync(join(folder, key), text);
  const data = join(dir, '..data');
  const old = existsSync(data) ? readlinkSync(data) : null;
  symlinkSync(stamp, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), data);
  for (const key of Object.keys(files)) {
    const link = join(dir, key);
    if (!existsSync(link)) symlinkSync(join('..data', key), link);
  }
  if (old !== null) rmSync(join(dir, old), { recursive: true, force: true });
}
