import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { ignored, readIgnoreRules, readStages, type Stage } from '../support/dockerfile.js';
import { baseConfig } from '../support/gateway-process.js';
import { ROOT } from '../support/kubernetes.js';

// image.test.ts reads the Dockerfile; this one runs what it would build. There is no Docker
// daemon here, so the image is emulated: the Dockerfile's stages are replayed in a temporary
// folder (WORKDIR, ENV, COPY from the build context as .dockerignore filters it, COPY --from an
// earlier stage, and the RUN steps it uses), and `serve` is started from the runtime stage's
// tree. A file that serve reads but the Dockerfile never copies is then missing here as it
// would be in the image, instead of being found in the repository beside dist/.

/** Every file under a context path that .dockerignore lets in, as context-relative paths. */
function contextFiles(path: string, rules: readonly string[]): string[] {
  const full = join(ROOT, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return ignored(path, rules) ? [] : [path];
  // An ignored folder is still walked when a later `!` rule could let in something beneath it.
  if (ignored(path, rules) && !rules.some((r) => r.startsWith(`!${path}/`))) return [];
  return readdirSync(full).flatMap((name) => contextFiles(posix.join(path, name), rules));
}

/** One emulated stage: its root folder stands for `/`, with the WORKDIR and ENV it has set. */
interface StageTree {
  readonly root: string;
  workdir: string;
  readonly env: Record<string, string>;
}

/** Where a path in the stage's filesystem (relative to WORKDIR or absolute) is on this machine. */
function hostPath(tree: StageTree, path: string): string {
  return join(tree.root, posix.resolve(tree.workdir, path));
}

/** COPY's destination for one source: into dest when dest is a folder, else dest itself. */
function copyTarget(tree: StageTree, source: string, dest: string, many: boolean, sourceIsDir: boolean): string {
  const target = hostPath(tree, dest);
  if (sourceIsDir) return target;
  return dest.endsWith('/') || many ? join(target, posix.basename(source)) : target;
}

/** `COPY [--from=stage] [--chown=…] src… dest`, in shell or exec (JSON array) form. */
function parseCopy(args: string): { from: string | null; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  let from: string | null = null;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift() as string;
    const m = /^--from=(\S+)$/.exec(flag);
    if (m !== null) from = m[1] as string;
    // Ownership, mode and layer linking do not change which files the image holds.
    else assert.match(flag, /^--(chown|chmod|link)\b/, `COPY ${flag}: not understood by this emulation`);
  }
  const rest = words.join(' ');
  const paths = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
  assert.ok(paths.length >= 2, `COPY ${args}: needs a source and a destination`);
  const dest = paths.pop() as string;
  for (const s of paths) assert.ok(!/[*?[]/.test(s), `COPY ${s}: wildcards are not emulated`);
  return { from, sources: paths, dest };
}

/**
 * The RUN steps the Dockerfile uses. Installing is emulated: `npm ci` (with or without
 * --omit=dev) becomes a symlink to the repository's node_modules, which holds the dev
 * dependencies too, so this cannot catch a runtime import of a dev-only package; it checks
 * the lock file npm ci needs is there. The build itself is really run, in the stage's tree:
 * `npm run build` is tsc and then the postbuild step that copies the .lua files into dist/.
 */
function run(tree: StageTree, command: string): void {
  for (const step of command.split('&&').map((s) => s.trim())) {
    const cwd = hostPath(tree, '.');
    if (/^npm ci\b/.test(step)) {
      assert.ok(existsSync(join(cwd, 'package-lock.json')), `RUN ${step}: npm ci needs package-lock.json in ${tree.workdir}`);
      symlinkSync(join(ROOT, 'node_modules'), join(cwd, 'node_modules'), 'dir');
    } else if (/^npm cache clean\b/.test(step)) {
      // Nothing cached here.
    } else if (/^npm run [\w:-]+$/.test(step)) {
      const result = spawnSync('npm', step.split(' ').slice(1), {
        cwd,
        env: { ...process.env, ...tree.env },
        encoding: 'utf8',
        timeout: 180_000,
      });
      assert.equal(result.status, 0, `RUN ${step} failed:\n${result.stdout}\n${result.stderr}`);
    } else {
      assert.fail(`RUN ${step}: this emulation does not know this step; teach it what the step adds to the image`);
    }
  }
}

/** Replays every stage in order and returns the last (runtime) stage's tree. */
function buildImage(base: string, stages: readonly Stage[], rules: readonly string[]): StageTree {
  const trees = new Map<string, StageTree>();
  let tree: StageTree | undefined;
  for (const stage of stages) {
    tree = { root: join(base, stage.name), workdir: '/', env: {} };
    mkdirSync(tree.root, { recursive: true });
    trees.set(stage.name, tree);
    for (const { op, args } of stage.instructions) {
      if (op === 'WORKDIR') {
        tree.workdir = posix.resolve(tree.workdir, args);
        mkdirSync(hostPath(tree, '.'), { recursive: true });
      } else if (op === 'ENV') {
        const m = /^(\w+)(?:=|\s+)(.*)$/.exec(args);
        assert.ok(m !== null, `ENV ${args}`);
        tree.env[m[1] as string] = (m[2] as string).replace(/^"(.*)"$/, '$1');
      } else if (op === 'RUN') {
        run(tree, args);
      } else if (op === 'COPY' || op === 'ADD') {
        const { from, sources, dest } = parseCopy(args);
        const many = sources.length > 1;
        for (const source of sources) {
          if (from === null) {
            const path = posix.normalize(source);
            const files = contextFiles(path, rules);
            assert.ok(files.length > 0, `${op} ${source}: not in the build context (missing, or left out by .dockerignore)`);
            const isDir = statSync(join(ROOT, path)).isDirectory();
            const target = copyTarget(tree, path, dest, many, isDir);
            for (const file of files) {
              const to = isDir ? join(target, relative(path, file)) : target;
              mkdirSync(dirname(to), { recursive: true });
              copyFileSync(join(ROOT, file), to);
            }
          } else {
            const origin = trees.get(from);
            assert.ok(origin !== undefined && origin !== tree, `COPY --from=${from}: no earlier stage of that name`);
            const src = hostPath(origin, source);
            assert.ok(existsSync(src), `COPY --from=${from} ${source}: stage ${from} has no such path`);
            const isDir = statSync(src).isDirectory();
            const target = copyTarget(tree, source, dest, many, isDir);
            mkdirSync(dirname(target), { recursive: true });
            // The emulated node_modules is a symlink to the repository's: it stays one.
            if (lstatSync(src).isSymbolicLink()) symlinkSync(readlinkSync(src), target, 'dir');
            else cpSync(src, target, { recursive: true });
          }
        }
      }
      // USER, EXPOSE, ENTRYPOINT, CMD, ARG and LABEL add no files.
    }
  }
  assert.ok(tree !== undefined, 'the Dockerfile has a stage');
  return tree;
}

function execForm(stage: Stage, op: string): string[] {
  const i = stage.instructions.filter((x) => x.op === op).at(-1);
  assert.ok(i !== undefined, `the runtime stage has ${op}`);
  return JSON.parse(i.args) as string[];
}

/** The image's ENTRYPOINT, with this machine's node for `node`. */
function entrypoint(stage: Stage): string[] {
  const words = execForm(stage, 'ENTRYPOINT');
  assert.equal(words[0], 'node');
  return [process.execPath, ...words.slice(1)];
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(dir, f)).isFile());
}

const stages = readStages(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const runtimeStage = stages.at(-1) as Stage;
const rules = readIgnoreRules(readFileSync(join(ROOT, '.dockerignore'), 'utf8'));
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('the image, emulated from the Dockerfile and .dockerignore', () => {
  let base: string;
  let image: StageTree;
  let app: string;
  let gateway: ChildProcess | undefined;
  let adminUrl: string;
  const output: string[] = [];

  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'switchyard-image-'));
    image = buildImage(join(base, 'stages'), stages, rules);
    app = hostPath(image, '.');
    // The config stands in for the mounted ConfigMap: nothing listens on port 9, and nothing
    // here needs a provider to answer.
    const configPath = join(base, 'gateway.yaml');
    writeFileSync(configPath, stringify(baseConfig({ east: 'http://127.0.0.1:9/v1' }, { m: { candidates: [{ provider: 'east' }] } })));
    const [node, ...args] = entrypoint(runtimeStage);
    const child = spawn(node as string, [...args, 'serve', '--config', configPath], {
      cwd: app,
      env: { ...process.env, ...image.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    gateway = child;
    const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not log "listening":\n${output.join('\n')}`)), 20_000);
      let partial = '';
      const onData = (chunk: Buffer): void => {
        partial += chunk.toString('utf8');
        const lines = partial.split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          output.push(line);
          if (!line.startsWith('{')) continue;
          const parsed = JSON.parse(line) as Record<string, unknown>;
          if (parsed.msg === 'listening') {
            clearTimeout(timer);
            resolve(parsed);
          }
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`serve exited (${code}) from the image's tree:\n${output.join('\n')}`));
      });
    });
    adminUrl = listening.admin_url as string;
    assert.match(adminUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  after(async () => {
    if (gateway !== undefined && gateway.exitCode === null && gateway.signalCode === null) {
      const exited = new Promise((r) => gateway?.once('exit', r));
      gateway.kill('SIGTERM');
      const timer = setTimeout(() => gateway?.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    if (base !== undefined) rmSync(base, { recursive: true, force: true });
  });

  it("the runtime stage holds everything serve reads: the status page and its assets answer from a tree built from the Dockerfile's COPY lines and .dockerignore", async () => {
    // The tree is the image's own: its dist/ is the build stage's output, not the repository's.
    assert.ok(!realpathSync(join(app, 'dist')).startsWith(ROOT), 'dist/ is a copy inside the emulated image');
    const root = await fetch(`${adminUrl}/`);
    const html = await root.text();
    assert.equal(root.status, 200, `GET / on the admin listener: ${html}`);
    assert.match(root.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(html, readFileSync(join(ROOT, 'static/status-page/index.html'), 'utf8'));
    // Whatever the page loads must load too: its stylesheet, script and icon.
    const refs = [...html.matchAll(/\b(?:href|src)="([^"]+)"/g)].map((m) => m[1] as string).filter((r) => !/^(?:[a-z]+:|\/\/|#)/i.test(r));
    assert.ok(refs.length >= 3, `the page references its assets: ${refs.join(', ')}`);
    for (const ref of refs) {
      const url = new URL(ref, `${adminUrl}/`);
      const res = await fetch(url);
      const body = Buffer.from(await res.arrayBuffer());
      assert.equal(res.status, 200, `GET ${url.pathname}: ${body.toString('utf8')}`);
      assert.deepEqual(body, readFileSync(join(ROOT, 'static', url.pathname)), `${url.pathname} is the repository's file`);
    }
    const warned = output.some((l) => l.includes('the status page cannot be served'));
    assert.ok(!warned, `serve warned about the status page:\n${output.join('\n')}`);
  });

  it("the build stage's npm run build, postbuild included, puts every non-TypeScript file under src/ into the image's dist/", () => {
    // The redis store reads its Lua scripts from beside its compiled module when it loads.
    const assets = filesUnder(join(ROOT, 'src')).filter((f) => !f.endsWith('.ts'));
    assert.ok(
      assets.some((f) => f.endsWith('.lua')),
      'src/ has the Lua scripts',
    );
    for (const asset of assets) assert.ok(existsSync(join(app, 'dist', asset)), `dist/${asset} is in the image`);
  });

  it("`--version` run from the image's tree prints package.json's version", () => {
    const [node, ...args] = entrypoint(runtimeStage);
    const result = spawnSync(node as string, [...args, '--version'], { cwd: app, env: { ...process.env, ...image.env }, encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout.trim(), version);
  });
});
