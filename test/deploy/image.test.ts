import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Instruction, ignored, readIgnoreRules, readStages, type Stage } from '../support/dockerfile.js';
import { find, kustomizedObjects, type Manifest, ROOT } from '../support/kubernetes.js';

// The Dockerfile cannot be built here (no registry for its base image), so it is read: its
// stages, what the runtime stage holds, the user it runs as and the command it starts, and
// the .dockerignore that decides what the build can see at all. The Kubernetes Deployment
// must agree with it (the user, the config path).

/** An exec-form (JSON array) instruction's words. */
function execForm(i: Instruction | undefined): string[] {
  assert.ok(i !== undefined);
  const words = JSON.parse(i.args) as unknown;
  assert.ok(Array.isArray(words), `${i.op} is in exec form (a JSON array), so node gets the signals itself`);
  return words as string[];
}

const stages = readStages(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const runtime = stages.at(-1) as Stage;
const run = (s: Stage): string[] => s.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
const dockerignore = readIgnoreRules(readFileSync(join(ROOT, '.dockerignore'), 'utf8'));

const deployment = find(kustomizedObjects(), 'Deployment', 'switchyard');
const container = (deployment.spec.template.spec.containers as Manifest[]).find((c) => c.name === 'switchyard') as Manifest;

describe('Dockerfile', () => {
  it('is multi-stage: one stage installs every dependency and compiles with tsc, the runtime stage does neither', () => {
    assert.ok(stages.length >= 2, 'more than one stage');
    const build = stages.find((s) => run(s).some((r) => /\bnpm ci\b/.test(r) && !/--omit=dev/.test(r)));
    assert.ok(build !== undefined, 'a stage runs npm ci with the dev dependencies');
    assert.ok(
      run(build).some((r) => /\bnpm run build\b|\btsc\b/.test(r)),
      'that stage compiles (npm run build is tsc -p tsconfig.build.json)',
    );
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.match(pkg.scripts.build ?? '', /^tsc -p tsconfig\.build\.json$/);
    const outDir = (JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: { outDir: string } })
      .compilerOptions.outDir;
    assert.equal(outDir, 'dist', 'the build writes dist/, where the image runs dist/cli.js from');
    assert.ok(existsSync(join(ROOT, 'src/cli.ts')));
    assert.deepEqual(run(runtime), [], 'the runtime stage runs nothing at build time (no npm, no compiler)');
    assert.notEqual(build, runtime);
  });

  it('the runtime stage holds production dependencies only, and dist from the build stage', () => {
    const copies = runtime.instructions.filter((i) => i.op === 'COPY' && i.args.startsWith('--from='));
    const modules = copies.filter((i) => /\bnode_modules\b/.test(i.args));
    assert.ok(modules.length >= 1, 'node_modules comes from another stage');
    for (const copy of modules) {
      const from = stages.find((s) => s.name === /^--from=(\S+)/.exec(copy.args)?.[1]);
      assert.ok(from !== undefined, copy.args);
      assert.ok(
        run(from).some((r) => /\bnpm ci\b.*--omit=dev/.test(r)),
        `node_modules is copied from stage ${from.name}, which must install with npm ci --omit=dev`,
      );
    }
    assert.ok(
      copies.some((i) => /\bdist\b/.test(i.args)),
      'dist/ is copied from the build stage',
    );
  });

  it('the runtime stage copies every path the npm package ships (package.json "files"): the status page\'s static/ included', () => {
    // The package and the image run the same dist/cli.js, which finds package.json, examples/
    // and static/ beside dist/: what the package needs at runtime, the image needs too.
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    const destinations = runtime.instructions
      .filter((i) => i.op === 'COPY')
      .map((i) => (i.args.split(/\s+/).at(-1) as string).replace(/^\.\//, '').replace(/\/$/, ''));
    for (const path of pkg.files) assert.ok(destinations.includes(path), `the runtime stage has no COPY … ./${path}`);
  });

  it('runs as a numeric non-root user, the one the Deployment runs as', () => {
    const user = runtime.instructions.filter((i) => i.op === 'USER').at(-1)?.args;
    assert.ok(user !== undefined, 'the runtime stage sets USER');
    const uid = user.split(':')[0] as string;
    assert.match(uid, /^\d+$/, 'numeric, so runAsNonRoot can verify it');
    assert.notEqual(Number(uid), 0);
    const podUser = container.securityContext?.runAsUser ?? deployment.spec.template.spec.securityContext?.runAsUser;
    assert.equal(podUser, Number(uid));
  });

  it('starts node dist/cli.js serve --config, with the config path the Deployment mounts', () => {
    const entrypoint = execForm(runtime.instructions.filter((i) => i.op === 'ENTRYPOINT').at(-1));
    const cmd = execForm(runtime.instructions.filter((i) => i.op === 'CMD').at(-1));
    assert.deepEqual(entrypoint, ['node', 'dist/cli.js']);
    assert.equal(cmd[0], 'serve');
    assert.equal(cmd[1], '--config');
    assert.equal(container.command, undefined, 'the Deployment keeps the image entrypoint');
    assert.deepEqual(container.args, cmd, 'the Deployment passes the same serve --config path');
  });

  it('.dockerignore lets in only what the Dockerfile copies: never node_modules, dist, .git or local secrets', () => {
    const sources = stages
      .flatMap((s) => s.instructions)
      .filter((i) => (i.op === 'COPY' || i.op === 'ADD') && !i.args.startsWith('--from='))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    assert.ok(sources.length >= 3);
    for (const source of sources) {
      assert.ok(existsSync(join(ROOT, source)), `COPY ${source}: not in the repository`);
      assert.ok(!ignored(source, dockerignore), `COPY ${source}: excluded by .dockerignore`);
    }
    for (const path of ['node_modules', 'dist', '.git', 'test', '.env', 'deploy/kubernetes/secret.yaml', 'key.pem'])
      assert.ok(ignored(path, dockerignore), `${path} is not excluded by .dockerignore`);
  });
});
