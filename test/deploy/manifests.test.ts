import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix } from 'node:path';
import { after, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { type GatewayConfig, parseConfigText, splitHostPort } from '../../src/config/index.js';
import { prepareGeneration } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';
import { baseConfig } from '../support/gateway-process.js';
import { find, KUBE_DIR, keysOf, kustomizedObjects, type Manifest, readKustomization, selects } from '../support/kubernetes.js';
import { fileResources } from '../support/resources.js';

// deploy/kubernetes/ cannot be applied here, so this reads it as the cluster would and checks
// what matters (ADR 0016): the probes reach the listener that serves them, nothing is mounted
// with subPath, the grace period covers the drain the config asks for, every container is
// non-root on a read-only root filesystem with limits, the credentials come from the Secret as
// files, governance counts in the Redis the manifests run, and the gateway config in the
// ConfigMap passes the same prepareGeneration that `switchyard validate` and `serve` run.

const kustomization = readKustomization();
const objects = kustomizedObjects(kustomization);
const deployment = find(objects, 'Deployment', 'switchyard');
const pod = deployment.spec.template as Manifest;
const container = (pod.spec.containers as Manifest[]).find((c) => c.name === 'switchyard') as Manifest;
const volumes = pod.spec.volumes as Manifest[];
const mounts = container.volumeMounts as Manifest[];

/** The config path from `serve --config PATH`. */
const args = [...(container.command ?? []), ...(container.args ?? [])] as string[];
const configPath = args[args.indexOf('--config') + 1] as string;

/** The volume mounted at the directory holding `path`, and the key inside it. */
function volumeFor(path: string): { volume: Manifest; mount: Manifest; key: string } {
  const mount = mounts.find((m) => path.startsWith(`${m.mountPath}/`));
  assert.ok(mount !== undefined, `${path} lies under no volume mount of the gateway container`);
  const volume = volumes.find((v) => v.name === mount.name) as Manifest;
  return { volume, mount, key: path.slice(mount.mountPath.length + 1) };
}

/** The ConfigMap or Secret behind a volume. */
function sourceOf(volume: Manifest): Manifest {
  if (volume.configMap !== undefined) return find(objects, 'ConfigMap', volume.configMap.name);
  if (volume.secret !== undefined) return find(objects, 'Secret', volume.secret.secretName);
  throw new Error(`volume ${volume.name} is neither a ConfigMap nor a Secret`);
}

const configSource = volumeFor(configPath);
const configText = keysOf(sourceOf(configSource.volume))[configSource.key];
assert.ok(configText !== undefined, `the ConfigMap behind ${configPath} has no key ${configSource.key}`);
const parsed = parseConfigText(configText);
assert.ok(parsed.ok, `the gateway config in the ConfigMap does not parse: ${JSON.stringify(!parsed.ok && parsed.issues)}`);
const config: GatewayConfig = parsed.config;

/** Every `{file: PATH}` secret reference in the config, with its place. */
function fileReferences(value: unknown, path = ''): Array<{ path: string; file: string }> {
  if (Array.isArray(value)) return value.flatMap((v, i) => fileReferences(v, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  const obj = value as Record<string, unknown>;
  if (Object.keys(obj).length === 1 && typeof obj.file === 'string') return [{ path, file: obj.file }];
  return Object.entries(obj).flatMap(([k, v]) => fileReferences(v, path === '' ? k : `${path}.${k}`));
}

/** Every object anywhere under `value` that has `key`, with where it is. */
function withKey(value: unknown, key: string, where: string): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => withKey(v, key, `${where}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
    k === key ? [`${where}.${k}`] : withKey(v, key, `${where}.${k}`),
  );
}

function portNumber(port: string | number, c: Manifest): number {
  if (typeof port === 'number') return port;
  const named = (c.ports as Manifest[] | undefined)?.find((p) => p.name === port);
  assert.ok(named !== undefined, `container ${c.name} has no port named ${port}`);
  return named.containerPort as number;
}

const workloads = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');

const resources = fileResources('switchyard-deploy-');

describe('deploy/kubernetes', () => {
  it('every file kustomization.yaml lists exists and parses, and the image it sets is the one the gateway runs', () => {
    for (const file of [...kustomization.resources, ...(kustomization.configMapGenerator ?? []).flatMap((g) => g.files)])
      assert.ok(existsSync(join(KUBE_DIR, file)), `kustomization.yaml lists ${file}, which does not exist`);
    assert.ok(objects.length >= 8, 'Namespace, Secret, Deployment, Services, PDB, Redis, NetworkPolicy, ConfigMaps');
    for (const o of objects) assert.ok(typeof o.kind === 'string' && typeof o.metadata?.name === 'string', JSON.stringify(o).slice(0, 200));
    assert.ok(
      (kustomization.images ?? []).some((i) => i.name === container.image),
      `kustomization.yaml sets no image for ${container.image}`,
    );
  });

  it('the ConfigMaps keep their names (no hash suffix), so an edit reaches the running pods through their mounts', () => {
    for (const g of kustomization.configMapGenerator ?? []) assert.equal(g.options?.disableNameSuffixHash, true, g.name);
  });

  it('nothing is mounted with subPath: a subPath mount never receives a ConfigMap or Secret update', () => {
    for (const o of objects) {
      const where = `${o.kind}/${o.metadata.name}`;
      assert.deepEqual([...withKey(o, 'subPath', where), ...withKey(o, 'subPathExpr', where)], []);
    }
  });

  it('the gateway config and the overlay are ConfigMaps mounted as the directories the config names', () => {
    assert.equal(args[0] === 'serve' || args.includes('serve'), true, `the container runs ${args.join(' ')}`);
    assert.ok(configSource.volume.configMap !== undefined, 'the config comes from a ConfigMap');
    assert.equal(configSource.mount.mountPath, dirname(configPath));
    const overlayFile = config.routing.overlay?.file;
    assert.ok(overlayFile !== undefined, 'the deployed gateway runs in overlay mode');
    const overlay = volumeFor(overlayFile);
    assert.ok(overlay.volume.configMap !== undefined, 'the overlay comes from a ConfigMap');
    assert.equal(overlay.mount.mountPath, dirname(overlayFile), 'the overlay ConfigMap is mounted as the directory the gateway watches');
    assert.notEqual(overlay.volume.name, configSource.volume.name, 'the overlay has a ConfigMap of its own');
    assert.ok(overlay.key in keysOf(sourceOf(overlay.volume)), `the overlay ConfigMap has no key ${overlay.key}`);
    assert.equal(config.server.watch_config, true, 'an edited config ConfigMap is applied live');
  });

  it('the provider credentials come from the Secret, mounted as files and named with {file:} under that mount', () => {
    const refs = fileReferences(parse(configText));
    assert.ok(refs.length >= 1, 'the config references its credentials as files');
    for (const ref of refs) {
      const { volume, mount, key } = volumeFor(ref.file);
      assert.ok(volume.secret !== undefined, `${ref.path} (${ref.file}) is not under a Secret's mount`);
      assert.equal(mount.readOnly, true, `the Secret at ${mount.mountPath} is mounted read-only`);
      assert.ok(key in keysOf(sourceOf(volume)), `${ref.path}: the Secret has no key ${key}`);
    }
    for (const p of Object.values(config.providers))
      assert.ok('api_key' in p && p.api_key !== undefined && 'file' in p.api_key, 'every provider key is a file');
    const fromEnv = [...(container.env ?? []), ...(container.envFrom ?? [])].filter(
      (e: Manifest) => e.valueFrom?.secretKeyRef !== undefined || e.secretRef !== undefined,
    );
    assert.deepEqual(fromEnv, [], 'no credential reaches the gateway through its environment');
  });

  it('readiness probes /readyz and liveness /healthz on the API listener, reachable from the kubelet', () => {
    assert.equal(container.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(container.livenessProbe?.httpGet?.path, '/healthz');
    const { host, port } = splitHostPort(config.server.listen);
    assert.ok(!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host), `server.listen ${config.server.listen} is loopback only`);
    assert.equal(portNumber(container.readinessProbe.httpGet.port, container), Number(port));
    assert.equal(portNumber(container.livenessProbe.httpGet.port, container), Number(port));
    if (config.server.admin_listen !== undefined) assert.notEqual(Number(splitHostPort(config.server.admin_listen).port), Number(port));
  });

  it('the API listener is the one that answers /readyz and /healthz (a running gateway, both listeners asked)', async () => {
    const east = await resources.startMock({ name: 'east' });
    const gw = await resources.startGw(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    assert.equal((await fetch(`${gw.url}/readyz`)).status, 200);
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${gw.adminUrl}/readyz`)).status, 404, 'readiness is not the admin listener’s');
  });

  it('drains with server.drain_delay_ms instead of a preStop sleep, within terminationGracePeriodSeconds', () => {
    const { drain_delay_ms: delayMs, drain_timeout_ms: timeoutMs } = config.server;
    assert.ok(delayMs > 0, 'server.drain_delay_ms is set');
    assert.equal(container.lifecycle?.preStop, undefined, 'no preStop hook');
    const graceMs = (pod.spec.terminationGracePeriodSeconds as number) * 1000;
    assert.ok(
      graceMs >= delayMs + timeoutMs + 5000,
      `terminationGracePeriodSeconds ${graceMs / 1000} s < drain_delay_ms ${delayMs} + drain_timeout_ms ${timeoutMs} + 5 s`,
    );
  });

  it('every container runs as non-root on a read-only root filesystem, with no capabilities, and has requests and limits', () => {
    assert.ok(workloads.length >= 2);
    for (const w of workloads) {
      const podSecurity = (w.spec.template.spec.securityContext ?? {}) as Manifest;
      for (const c of w.spec.template.spec.containers as Manifest[]) {
        const where = `${w.kind}/${w.metadata.name} ${c.name}`;
        const s = (c.securityContext ?? {}) as Manifest;
        assert.equal(s.runAsNonRoot ?? podSecurity.runAsNonRoot, true, `${where}: runAsNonRoot`);
        const uid = s.runAsUser ?? podSecurity.runAsUser;
        assert.ok(typeof uid === 'number' && uid > 0, `${where}: runAsUser ${uid}`);
        assert.equal(s.readOnlyRootFilesystem, true, `${where}: readOnlyRootFilesystem`);
        assert.equal(s.allowPrivilegeEscalation, false, `${where}: allowPrivilegeEscalation`);
        assert.ok((s.capabilities?.drop ?? []).includes('ALL'), `${where}: capabilities.drop [ALL]`);
        for (const kind of ['requests', 'limits'])
          for (const r of ['cpu', 'memory']) assert.ok(c.resources?.[kind]?.[r] !== undefined, `${where}: resources.${kind}.${r}`);
      }
    }
  });

  it('a Service and a PodDisruptionBudget select the gateway pods, and the budget lets a drain proceed', () => {
    const labels = pod.metadata.labels as Record<string, string>;
    assert.ok(selects(deployment.spec.selector.matchLabels, labels));
    const service = find(objects, 'Service', 'switchyard');
    assert.ok(selects(service.spec.selector, labels), 'the Service selects the gateway pods');
    const target = service.spec.ports[0].targetPort as string | number;
    assert.equal(portNumber(target, container), Number(splitHostPort(config.server.listen).port));
    const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget') as Manifest;
    assert.ok(pdb !== undefined && selects(pdb.spec.selector.matchLabels, labels), 'a PodDisruptionBudget selects the gateway pods');
    const replicas = deployment.spec.replicas as number;
    assert.ok(replicas >= 2, 'more than one replica');
    if (pdb.spec.maxUnavailable !== undefined) assert.ok(pdb.spec.maxUnavailable >= 1);
    else assert.ok(pdb.spec.minAvailable < replicas, 'minAvailable below replicas, or no node could ever drain');
  });

  it('governance counts in the Redis the manifests run, reachable only from the gateway pods', () => {
    assert.equal(config.governance.store, 'redis', 'limits and budgets hold across replicas');
    const url = new URL(config.governance.redis_url as string);
    const service = find(objects, 'Service', url.hostname);
    assert.equal(service.spec.ports[0].port, Number(url.port || 6379));
    const redis = workloads.find((w) => selects(service.spec.selector, w.spec.template.metadata.labels)) as Manifest;
    assert.ok(redis !== undefined, `the Service ${url.hostname} selects no workload`);
    const redisContainer = redis.spec.template.spec.containers[0] as Manifest;
    assert.equal(portNumber(service.spec.ports[0].targetPort, redisContainer), 6379);
    const policy = objects.find(
      (o) => o.kind === 'NetworkPolicy' && selects(o.spec.podSelector.matchLabels, redis.spec.template.metadata.labels),
    );
    assert.ok(policy !== undefined, 'a NetworkPolicy guards Redis, besides its password');
    const from = (policy.spec.ingress as Manifest[]).flatMap((r) => r.from as Manifest[]);
    assert.ok(
      from.length > 0 && from.every((f) => selects(f.podSelector?.matchLabels, pod.metadata.labels)),
      'only gateway pods reach Redis',
    );
  });

  it('Redis requires the password the gateway reads: --requirepass from the Secret key governance.redis_password names', () => {
    const redis = find(objects, 'StatefulSet', 'switchyard-redis');
    const c = redis.spec.template.spec.containers[0] as Manifest;
    const redisArgs = [...(c.command ?? []), ...(c.args ?? [])] as string[];
    // Protected mode keeps its default (on); with a password it refuses nothing the gateway sends.
    assert.ok(!redisArgs.includes('--protected-mode'), `redis runs ${redisArgs.join(' ')}`);
    assert.ok(redisArgs.includes('--requirepass'), `redis runs ${redisArgs.join(' ')}`);
    const variable = /^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$/.exec(redisArgs[redisArgs.indexOf('--requirepass') + 1] ?? '')?.[1];
    assert.ok(variable !== undefined, '--requirepass takes $(NAME), an environment variable, never a literal');
    const secretOf = (name: string): { name: string; key: string } | undefined =>
      (c.env as Manifest[] | undefined)?.find((e) => e.name === name)?.valueFrom?.secretKeyRef;
    const fromSecret = secretOf(variable);
    assert.ok(fromSecret !== undefined, `${variable} comes from a Secret`);
    assert.ok(
      fromSecret.key in keysOf(find(objects, 'Secret', fromSecret.name)),
      `the Secret ${fromSecret.name} has no key ${fromSecret.key}`,
    );
    const ref = config.governance.redis_password;
    assert.ok(ref !== undefined && 'file' in ref, 'the gateway reads governance.redis_password from a file');
    const { volume, key } = volumeFor(ref.file);
    assert.deepEqual({ name: volume.secret?.secretName, key }, fromSecret, 'the gateway reads the password Redis requires');
    // The readiness probe's redis-cli must authenticate too: REDISCLI_AUTH, from the same key.
    assert.deepEqual(c.readinessProbe?.exec?.command, ['redis-cli', 'ping']);
    assert.deepEqual(secretOf('REDISCLI_AUTH'), fromSecret, 'redis-cli ping authenticates with REDISCLI_AUTH');
  });

  it('the gateway config in the ConfigMap passes validation (prepareGeneration, as validate and serve) with no warning', async () => {
    // The pod's ConfigMap and Secret volumes, written under a temp root, and the config's
    // in-container paths pointed there: nothing else changes.
    const root = mkdtempSync(join(tmpdir(), 'switchyard-pod-'));
    after(() => rmSync(root, { recursive: true, force: true }));
    const relocate = (path: string): string => join(root, path);
    for (const m of mounts) {
      const volume = volumes.find((v) => v.name === m.name) as Manifest;
      if (volume.configMap === undefined && volume.secret === undefined) continue;
      mkdirSync(relocate(m.mountPath), { recursive: true });
      for (const [key, text] of Object.entries(keysOf(sourceOf(volume)))) writeFileSync(relocate(posix.join(m.mountPath, key)), text);
    }
    const doc = parse(configText) as Record<string, unknown>;
    const walk = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(walk);
      if (typeof value === 'string' && mounts.some((m) => value.startsWith(`${m.mountPath}/`))) return relocate(value);
      if (value === null || typeof value !== 'object') return value;
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    };
    const path = relocate(configPath);
    writeFileSync(path, stringify(walk(doc)));
    assert.equal(basename(path), basename(configPath));
    const pools = new PoolRegistry();
    try {
      const prepared = await prepareGeneration({
        configPath: path,
        env: {},
        serving: null,
        startupConfig: null,
        poolFor: (s) => pools.acquire(s),
      });
      assert.equal(prepared.outcome, 'built', JSON.stringify(prepared.outcome === 'rejected' ? prepared.issues : prepared));
      if (prepared.outcome === 'built') {
        assert.deepEqual(prepared.warnings, []);
        assert.ok((prepared.generation.overlay?.candidateCount ?? 0) > 0, 'the seed overlay routes something');
      }
    } finally {
      await pools.destroyAll();
    }
  });
});
