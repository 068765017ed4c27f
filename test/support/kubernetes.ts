import { readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

// Reads deploy/kubernetes/ the way `kubectl apply -k` would see it, without kustomize: the
// files kustomization.yaml lists, plus the ConfigMaps its configMapGenerator makes (one key
// per file, named by the file). Shared by the deploy tests.

export const ROOT = resolve(import.meta.dirname, '../..');
export const KUBE_DIR = join(ROOT, 'deploy/kubernetes');

// The manifests are untyped YAML: the tests read them through these loose shapes.
export type Manifest = Record<string, any>;

export interface Kustomization {
  readonly namespace?: string;
  readonly resources: readonly string[];
  readonly configMapGenerator?: ReadonlyArray<{ name: string; files: string[]; options?: { disableNameSuffixHash?: boolean } }>;
  readonly images?: ReadonlyArray<{ name: string; newName?: string; newTag?: string }>;
}

export function readYamlDocuments(path: string): Manifest[] {
  return parseAllDocuments(readFileSync(path, 'utf8')).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]!.message}`);
    return doc.toJS() as Manifest;
  });
}

export function readKustomization(): Kustomization {
  return readYamlDocuments(join(KUBE_DIR, 'kustomization.yaml'))[0] as Kustomization;
}

/** Every object the kustomization produces: its resources' documents and its generated ConfigMaps. */
export function kustomizedObjects(k: Kustomization = readKustomization()): Manifest[] {
  const objects = k.resources.flatMap((file) => readYamlDocuments(join(KUBE_DIR, file)));
  for (const generator of k.configMapGenerator ?? []) {
    const data = Object.fromEntries(generator.files.map((f) => [basename(f), readFileSync(join(KUBE_DIR, f), 'utf8')]));
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name }, data });
  }
  return objects;
}

export function find(objects: readonly Manifest[], kind: string, name: string): Manifest {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in the kustomization`);
  return found;
}

/** Whether every label of `selector` is on `labels` (a Service's or a PDB's selector against a pod). */
export function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** The data of a ConfigMap or a Secret by key (a Secret's `data` is base64). */
export function keysOf(object: Manifest): Record<string, string> {
  if (object.kind === 'Secret') {
    const decoded = Object.fromEntries(
      Object.entries((object.data ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    return { ...decoded, ...(object.stringData ?? {}) };
  }
  return { ...(object.data ?? {}) };
}
