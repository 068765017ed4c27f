import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { prepareGeneration } from '../src/live/index.js';
import { PoolRegistry } from '../src/providers/index.js';
import { markdownFiles } from './support/markdown.js';
import { envelope } from './support/overlay.js';

// Every gateway config a reader can copy from the README, docs/ or examples/ passes
// `switchyard validate` (the same prepareGeneration), with no warning. A ```yaml block is a
// gateway config when its top level has a config section (server, providers, routing, …); a fragment is
// completed with a minimal base, secret references are supplied, and an overlay file is
// replaced by an empty revision in the snippet's expected scope. A block that must not be
// checked says so on the line above it: <!-- doc-configs: skip (why) -->.

const ROOT = resolve(import.meta.dirname, '..');
const SKIP = /<!--\s*doc-configs:\s*skip\b/;
/** The config's top-level sections: a block with any of them is (part of) a gateway config. */
const TOP_LEVEL = [
  'server',
  'log',
  'providers',
  'routing',
  'pricing',
  'resilience',
  'teams',
  'keys',
  'governance',
  'audit',
  'auth',
  'mcp',
  'database',
  'a2a',
];

interface Snippet {
  readonly where: string;
  readonly text: string;
}

function yamlBlocks(file: string): Snippet[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```ya?ml\s*$/.test(lines[i]!)) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    assert.ok(end > i, `${relative(ROOT, file)}:${i + 1}: a yaml block is never closed`);
    if (!SKIP.test(lines[i - 1] ?? ''))
      blocks.push({ where: `${relative(ROOT, file)}:${i + 1}`, text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

function isGatewayConfig(doc: unknown): doc is Record<string, unknown> {
  return doc !== null && typeof doc === 'object' && !Array.isArray(doc) && TOP_LEVEL.some((k) => k in doc);
}

const snippets: Snippet[] = markdownFiles().flatMap(yamlBlocks);
const examples: Snippet[] = readdirSync(join(ROOT, 'examples'))
  .filter((f) => /\.ya?ml$/.test(f))
  .map((f) => ({ where: `examples/${f}`, text: readFileSync(join(ROOT, 'examples', f), 'utf8') }));

const dir = mkdtempSync(join(tmpdir(), 'switchyard-doc-configs-'));
const pools = new PoolRegistry();
after(async () => {
  await pools.destroyAll();
  rmSync(dir, { recursive: true, force: true });
});

const SECRET = 'doc-snippet-secret-value-0123456789';

/** Supplies every secret reference: env names go into the environment, files are written. */
function supplySecrets(value: unknown, env: Record<string, string>, n: { files: number }): unknown {
  if (Array.isArray(value)) return value.map((v) => supplySecrets(v, env, n));
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length === 1 && typeof obj.env === 'string') {
    env[obj.env] = SECRET;
    return obj;
  }
  if (keys.length === 1 && typeof obj.file === 'string') {
    const path = join(dir, `secret-${n.files++}`);
    writeFileSync(path, `${SECRET}\n`);
    return { file: path };
  }
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, supplySecrets(v, env, n)]));
}

/**
 * The pod's environment and files a cloud identity reads, supplied here: a provider on Entra
 * ID's workload identity reads the token file the Kubernetes webhook mounts (named by
 * AZURE_FEDERATED_TOKEN_FILE), a bedrock one on IRSA the token and role the EKS webhook names
 * (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), a vertex one its service account's key file.
 */
function supplyWorkloadIdentity(doc: Record<string, unknown>, env: Record<string, string>): void {
  const providers = (doc.providers ?? {}) as Record<
    string,
    { auth?: { type?: string; client_secret?: unknown }; aws?: { web_identity?: unknown }; gcp?: { service_account?: { file?: string } } }
  >;
  for (const p of Object.values(providers)) {
    // A vertex service account's key file is JSON with the account and its key (the secret file written above is not).
    const keyFile = p.gcp?.service_account?.file;
    if (keyFile !== undefined)
      writeFileSync(
        keyFile,
        JSON.stringify({ type: 'service_account', client_email: 'gw@p.iam.gserviceaccount.com', private_key: SECRET }),
      );
  }
  // EKS IRSA's pod identity webhook names the projected token and the role.
  if (Object.values(providers).some((p) => p.aws?.web_identity === true)) {
    const path = join(dir, 'aws-web-identity-token');
    writeFileSync(path, 'web.identity.jwt.from.the.kubelet');
    env.AWS_WEB_IDENTITY_TOKEN_FILE = path;
    env.AWS_ROLE_ARN = 'arn:aws:iam::123456789012:role/switchyard';
  }
  if (!Object.values(providers).some((p) => p.auth?.type === 'entra' && p.auth.client_secret === undefined)) return;
  const path = join(dir, 'azure-federated-token');
  writeFileSync(path, 'federated.jwt.from.the.kubelet');
  env.AZURE_FEDERATED_TOKEN_FILE = path;
}

/** A fragment (say, only `routing:`) gets the missing top-level sections from a minimal base. */
function complete(doc: Record<string, unknown>): Record<string, unknown> {
  const out = { ...doc };
  out.providers ??= {
    east: { type: 'openai', base_url: 'http://127.0.0.1:9001/v1' },
    west: { type: 'openai', base_url: 'http://127.0.0.1:9002/v1' },
  };
  out.routing ??= { routes: { m: { candidates: [{ provider: Object.keys(out.providers as object)[0] }] } } };
  return out;
}

/** An overlay-mode config reads its file at start-up: point it at an empty revision in its scope. */
function provideOverlay(doc: Record<string, unknown>, where: string): void {
  const overlay = (doc.routing as { overlay?: Record<string, unknown> } | undefined)?.overlay;
  if (overlay === undefined) return;
  const scope = (overlay.expected_scope ?? {}) as Record<string, string | undefined>;
  const file = join(dir, `${where.replace(/[^A-Za-z0-9]+/g, '-')}-overlay.json`);
  const e = envelope([], { network: scope.network, localSite: scope.local_site, gateway: scope.gateway, namespace: scope.namespace });
  writeFileSync(file, JSON.stringify(e));
  overlay.file = file;
}

async function validate(snippet: Snippet): Promise<void> {
  const env: Record<string, string> = {};
  const doc = complete(supplySecrets(parse(snippet.text), env, { files: 0 }) as Record<string, unknown>);
  supplyWorkloadIdentity(doc, env);
  provideOverlay(doc, snippet.where);
  const path = join(dir, `${snippet.where.replace(/[^A-Za-z0-9]+/g, '-')}.yaml`);
  writeFileSync(path, stringify(doc));
  const prepared = await prepareGeneration({
    configPath: path,
    env,
    serving: null,
    startupConfig: null,
    poolFor: (spec) => pools.acquire(spec),
  });
  const problems =
    prepared.outcome === 'built'
      ? prepared.warnings.map((w) => `warning: ${w}`)
      : prepared.outcome === 'rejected'
        ? prepared.issues.map((i) => `${i.path}: ${i.message}`)
        : ['unchanged?'];
  assert.deepEqual(problems, [], `${snippet.where} does not validate cleanly:\n${snippet.text}`);
}

describe('config snippets in the docs', () => {
  const configs = snippets.filter((s) => isGatewayConfig(parse(s.text)));

  it("finds the README's Config block and the docs/configuration.md examples", () => {
    assert.ok(
      configs.some((s) => s.where.startsWith('README.md') && /\bproviders:/.test(s.text) && /\brouting:/.test(s.text)),
      configs.map((s) => s.where).join('\n'),
    );
    assert.ok(configs.filter((s) => s.where.startsWith('docs/configuration.md')).length >= 3, configs.map((s) => s.where).join('\n'));
  });

  for (const snippet of configs) it(`${snippet.where} validates with no error and no warning`, () => validate(snippet));
  for (const example of examples) it(`${example.where} validates with no error and no warning`, () => validate(example));
});
