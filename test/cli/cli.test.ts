import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../support/gateway-process.js';

// The CLI as users run it: `node dist/cli.js`, one process per command, judged by its exit
// code and what it prints.

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const DEMO_CONFIG = resolve(import.meta.dirname, '../../examples/demo.yaml');
const MISSING_ENV = 'SWITCHYARD_TEST_CLI_UNSET_KEY';

let dir: string;

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The subcommands listed by `switchyard --help`, so that a new one is covered without editing this test. */
function listedCommands(help: string): string[] {
  const section = help.split(/^Commands:\s*$/m)[1] ?? '';
  const names: string[] = [];
  for (const line of section.split('\n')) {
    const m = /^ {2}([a-z][a-z-]*)\s{2,}\S/.exec(line);
    if (m !== null) names.push(m[1]!);
  }
  return names;
}

/** Several errors of both kinds: schema ones and cross-reference ones. */
const MANY_ERRORS = `
server: { listen: 127.0.0.1:0 }
providers:
  east: { type: openai, base_url: "not a url", api_key: { env: ${MISSING_ENV} } }
  west: { type: openai, base_url: http://127.0.0.1:9002/v1, colour: blue }
routing:
  routes:
    m:
      candidates:
        - { provider: nowhere }
        - { provider: west }
`;

/** Schema-valid, but a route names an unknown provider and a secret does not resolve. */
const CROSS_ERRORS = `
server: { listen: 127.0.0.1:0 }
providers:
  east: { type: openai, base_url: http://127.0.0.1:9001/v1, api_key: { env: ${MISSING_ENV} } }
routing:
  routes:
    m:
      candidates:
        - { provider: east }
        - { provider: nowhere }
`;

/** Schema errors only. */
const SCHEMA_ERRORS = `
server: { listen: 127.0.0.1:0 }
providers:
  east: { type: openai, base_url: "not a url" }
  west: { type: openai, base_url: http://127.0.0.1:9002/v1, colour: blue }
routing:
  routes:
    m: { candidates: [ { provider: east } ] }
`;

const env = { [MISSING_ENV]: '' };

describe('switchyard CLI', () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-cli-'));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('--help exits 0 and lists the subcommands', async () => {
    const r = await runCli(['--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Usage: switchyard <command>/);
    const names = listedCommands(r.stdout);
    for (const name of ['serve', 'validate', 'mock-provider', 'demo'])
      assert.ok(names.includes(name), `${name} is not listed in:\n${r.stdout}`);
  });

  it("every subcommand's --help (and -h) exits 0 and prints its usage", async () => {
    const names = listedCommands((await runCli(['--help'])).stdout);
    assert.ok(names.length >= 4);
    // A few at a time: thirty CLIs loading at once on two cores can take longer than runCli's hang bound.
    const runs = names.flatMap(
      (name) =>
        [
          [name, '--help'],
          [name, '-h'],
        ] as const,
    );
    const results: Array<{ name: string; r: Awaited<ReturnType<typeof runCli>> }> = [];
    for (let i = 0; i < runs.length; i += 4) {
      const batch = runs.slice(i, i + 4);
      results.push(...(await Promise.all(batch.map(async ([name, flag]) => ({ name, r: await runCli([name, flag]) })))));
    }
    for (const { name, r } of results) {
      assert.equal(r.code, 0, `${name}: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^switchyard ${name}\\b`), `${name} printed no usage:\n${r.stdout}`);
      assert.equal(r.stderr, '', `${name} --help wrote to stderr`);
    }
  });

  it('--version and -v print the package.json version and exit 0', async () => {
    const { version } = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const r = await runCli([flag]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${version}\n`);
    }
  });

  it('an unknown command exits 1, names it and prints the command list', async () => {
    const r = await runCli(['frobnicate']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /unknown command "frobnicate"/);
    assert.match(r.stderr, /Commands:/);
  });

  it("an unknown option or a missing --config exits 1 with the subcommand's usage", async () => {
    for (const args of [['validate'], ['serve'], ['validate', '--config', DEMO_CONFIG, '--colour']]) {
      const r = await runCli(args);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, new RegExp(`switchyard ${args[0]} --config FILE`), `${args.join(' ')} printed no usage:\n${r.stderr}`);
    }
  });

  it('validate exits 0 on examples/demo.yaml', async () => {
    const r = await runCli(['validate', '--config', DEMO_CONFIG]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /valid/);
  });

  it('validate exits 0 on a valid JSON config', async () => {
    const path = file(
      'valid.json',
      JSON.stringify({
        server: { listen: '127.0.0.1:0' },
        providers: { east: { type: 'openai', base_url: 'http://127.0.0.1:9001/v1', api_key: { env: 'SWITCHYARD_TEST_CLI_KEY' } } },
        routing: { routes: { m: { policy: 'round_robin', candidates: [{ provider: 'east' }] } } },
      }),
    );
    const r = await runCli(['validate', '--config', path], { SWITCHYARD_TEST_CLI_KEY: 'test-secret-value-0123456789' });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('test-secret-value-0123456789'));
  });

  it('validate prints every error of a config with several (schema and cross-reference) with its path, and exits 1', async () => {
    const r = await runCli(['validate', '--config', file('many-errors.yaml', MANY_ERRORS)], env);
    assert.equal(r.code, 1, r.stdout);
    const expected = [
      /^providers\.east\.base_url: invalid URL/m,
      /^providers\.west\.colour: unknown key/m,
      /^routing\.routes\.m\.candidates\[0\]\.provider: .*nowhere/m,
      new RegExp(`^providers\\.east\\.api_key: .*${MISSING_ENV}`, 'm'),
    ];
    const missing = expected.filter((re) => !re.test(r.stderr)).map(String);
    assert.deepEqual(missing, [], `validate did not print every error:\n${r.stderr}`);
  });

  it('validate reports cross-reference errors (unknown provider, unset secret) with their paths', async () => {
    const r = await runCli(['validate', '--config', file('cross-errors.yaml', CROSS_ERRORS)], env);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /^routing\.routes\.m\.candidates\[1\]\.provider: .*nowhere/m);
    assert.match(r.stderr, new RegExp(`^providers\\.east\\.api_key: .*${MISSING_ENV}`, 'm'));
  });

  it('serve with a bad config exits 1 and prints its errors with their paths', async () => {
    const schema = await runCli(['serve', '--config', file('schema-errors.yaml', SCHEMA_ERRORS)], env);
    assert.equal(schema.code, 1, schema.stdout);
    assert.match(schema.stderr, /providers\.east\.base_url: invalid URL/);
    assert.match(schema.stderr, /providers\.west\.colour: unknown key/);
    const cross = await runCli(['serve', '--config', file('cross-errors-serve.yaml', CROSS_ERRORS)], env);
    assert.equal(cross.code, 1, cross.stdout);
    assert.match(cross.stderr, /routing\.routes\.m\.candidates\[1\]\.provider: .*nowhere/);
    assert.match(cross.stderr, new RegExp(`providers\\.east\\.api_key: .*${MISSING_ENV}`));
  });

  it('serve exits 1 with a clear message on YAML that does not parse', async () => {
    const r = await runCli(['serve', '--config', file('broken.yaml', 'providers:\n  east: { type: openai\nrouting: [\n')]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /syntax error/i);
  });

  it('serve exits 1 with a clear message on an empty file', async () => {
    const r = await runCli(['serve', '--config', file('empty.yaml', '')]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /config is empty/);
  });

  it('serve exits 1 with a clear message on a missing file, naming it', async () => {
    const path = join(dir, 'does-not-exist.yaml');
    const r = await runCli(['serve', '--config', path]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /file not found/);
    assert.ok(r.stderr.includes(path), r.stderr);
  });

  it('mock-provider --port 0 --name x starts, answers as x, and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, [CLI, 'mock-provider', '--port', '0', '--name', 'x'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    try {
      const baseUrl = await new Promise<string>((res, rej) => {
        let out = '';
        let err = '';
        child.stderr.on('data', (c: Buffer) => (err += c.toString()));
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m !== null) res(m[1]!);
        });
        void exited.then((code) => rej(new Error(`mock-provider exited (${code}) before listening:\n${out}${err}`)));
      });
      assert.match(baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      assert.doesNotMatch(baseUrl, /:0\//, 'port 0 was resolved to a real port');

      const models = await fetch(`${baseUrl}/models`);
      assert.equal(models.status, 200);
      assert.equal(((await models.json()) as { object: string }).object, 'list');

      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-mock-provider'), 'x');
      const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
      assert.equal(body.choices[0]!.message.content, 'Hello from x.');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      clearTimeout(killer);
      assert.equal(code, 0, 'mock-provider did not exit 0 on SIGTERM');
    }
  });

  it('mock-provider --api-key KEY wants that key on its Gemini endpoints', async () => {
    const child = spawn(process.execPath, [CLI, 'mock-provider', '--port', '0', '--name', 'g', '--api-key', 'AIza-cli-key'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    try {
      const baseUrl = await new Promise<string>((res, rej) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const m = /listening on (http:\/\/\S+)\/v1/.exec(out);
          if (m !== null) res(m[1]!);
        });
        void exited.then((code) => rej(new Error(`mock-provider exited (${code}) before listening:\n${out}`)));
      });
      const call = (key: string) =>
        fetch(`${baseUrl}/v1beta/models/gemini-2.5-flash:generateContent`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
          body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
        });
      const ok = await call('AIza-cli-key');
      assert.equal(ok.status, 200);
      assert.equal(
        ((await ok.json()) as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }).candidates[0]!.content.parts[0]!.text,
        'Hello from g.',
      );
      const wrong = await call('AIza-other');
      assert.equal(wrong.status, 400);
      assert.match(await wrong.text(), /API_KEY_INVALID/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      clearTimeout(killer);
    }
  });
});
