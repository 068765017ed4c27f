import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, startGatewayProcess } from '../support/gateway-process.js';
import { candidate, envelope } from '../support/overlay.js';

// `switchyard validate` promises what `switchyard serve` will do with the same file. Both run
// as real processes over the same configs; a bad one must fail both with the same errors
// (path and message), a good one must pass both with the same warnings.

const UNSET = 'SWITCHYARD_TEST_VS_UNSET';
const KEY = 'SWITCHYARD_TEST_VS_KEY';
const env = { [UNSET]: '', [KEY]: 'test-key-value-0123456789' };

let dir: string;

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const provider = 'east: { type: openai, base_url: http://127.0.0.1:9/v1 }';
const route = 'routing: { routes: { m: { candidates: [ { provider: east } ] } } }';

function staticConfig(parts: { server?: string; providers?: string; routing?: string } = {}): string {
  return `server: { listen: 127.0.0.1:0${parts.server ?? ''} }\nproviders:\n  ${parts.providers ?? provider}\n${parts.routing ?? route}\n`;
}

function overlayConfig(overlayFile: string, extra = ''): string {
  return `server: { listen: 127.0.0.1:0 }\nproviders:\n  ${provider}\nrouting:\n  overlay: { file: ${overlayFile}${extra} }\n`;
}

/** validate's error lines (the summary line dropped). */
function validateErrors(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l !== '' && !/: \d+ error\(s\)$/.test(l))
    .sort();
}

/** serve's error lines: the indented ones under "cannot start with …". */
function serveErrors(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('  '))
    .map((l) => l.slice(2))
    .sort();
}

interface BadCase {
  readonly name: string;
  readonly config: () => string;
  /** A path that must be named, with a pattern its message must match. */
  readonly path: string;
  readonly message: RegExp;
}

const badCases: BadCase[] = [
  {
    name: 'an admin listener on 0.0.0.0 without admin_token',
    config: () => staticConfig({ server: ', admin_listen: 0.0.0.0:0' }),
    path: 'server.admin_token',
    message: /required when server\.admin_listen \(0\.0\.0\.0:0\) is not a loopback address/,
  },
  {
    name: 'an admin token in a file that does not exist',
    config: () => staticConfig({ server: `, admin_listen: 0.0.0.0:0, admin_token: { file: ${join(dir, 'no-token')} }` }),
    path: 'server.admin_token',
    message: /cannot be read \(file not found\)/,
  },
  {
    name: 'a route naming an unknown provider',
    config: () => staticConfig({ routing: 'routing: { routes: { m: { candidates: [ { provider: west } ] } } }' }),
    path: 'routing.routes.m.candidates[0].provider',
    message: /unknown provider "west"/,
  },
  {
    name: 'an api_key from an unset environment variable',
    config: () => staticConfig({ providers: `east: { type: openai, base_url: http://127.0.0.1:9/v1, api_key: { env: ${UNSET} } }` }),
    path: 'providers.east.api_key',
    message: new RegExp(`environment variable ${UNSET} is not set`),
  },
  {
    name: 'a literal api_key',
    config: () =>
      staticConfig({ providers: 'east: { type: openai, base_url: http://127.0.0.1:9/v1, api_key: sk-literal-0123456789abcdef }' }),
    path: 'providers.east.api_key',
    message: /literal secret is not allowed/,
  },
  {
    name: 'an unknown key',
    config: () => staticConfig({ providers: 'east: { type: openai, base_url: http://127.0.0.1:9/v1, timeout: 5000 }' }),
    path: 'providers.east.timeout',
    message: /^unknown key; did you mean timeout_ms\?$/,
  },
  {
    name: 'values of the wrong type',
    config: () =>
      staticConfig({ providers: 'east: { type: openai, base_url: http://127.0.0.1:9/v1, timeout_ms: 1.5, max_connections: many }' }),
    path: 'providers.east.timeout_ms',
    message: /^must be a whole number$/,
  },
  {
    name: 'a number below its minimum',
    config: () => staticConfig({ providers: 'east: { type: openai, base_url: http://127.0.0.1:9/v1, connect_timeout_ms: 0 }' }),
    path: 'providers.east.connect_timeout_ms',
    message: /^must be at least 1$/,
  },
  {
    name: 'routes and an overlay at once',
    config: () =>
      `${staticConfig({ routing: `routing:\n  routes: { m: { candidates: [ { provider: east } ] } }\n  overlay: { file: ${join(dir, 'overlay.json')} }` })}`,
    path: 'routing',
    message: /mutually exclusive/,
  },
  {
    name: 'an overlay file that does not exist',
    config: () => overlayConfig(join(dir, 'missing-overlay.json')),
    path: 'routing.overlay.file',
    message: /^missing: /,
  },
  {
    name: 'an overlay file that is not JSON',
    config: () => overlayConfig(file('not-json.json', '{ "candidates": [')),
    path: 'routing.overlay.file',
    message: /^invalid_json: /,
  },
  {
    name: 'an overlay whose digest does not match',
    config: () => {
      const e = envelope([candidate('m', 'east')]) as { content_digest: { value: string }; revision: { value: string } };
      e.content_digest.value = e.revision.value = '0'.repeat(64);
      return overlayConfig(file('bad-digest.json', JSON.stringify(e)));
    },
    path: 'routing.overlay.file',
    message: /^digest_mismatch: /,
  },
  {
    name: 'an overlay outside the expected scope',
    config: () =>
      overlayConfig(
        file('other-scope.json', JSON.stringify(envelope([candidate('m', 'east')], { network: 'staging' }))),
        ', expected_scope: { network: prod }',
      ),
    path: 'routing.overlay.file',
    message: /^scope_mismatch: /,
  },
  {
    name: 'YAML that does not parse',
    config: () => 'providers:\n  east: { type: openai\nrouting: [\n',
    path: '',
    message: /syntax error at line \d+/,
  },
];

describe('switchyard validate and switchyard serve agree', () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-validate-serve-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [i, bad] of badCases.entries()) {
    it(`${bad.name}: both exit 1 with the same errors, naming ${bad.path || 'the file'}`, async () => {
      const path = file(`bad-${i}.yaml`, bad.config());
      const [validate, serve] = await Promise.all([runCli(['validate', '--config', path], env), runCli(['serve', '--config', path], env)]);
      assert.equal(validate.code, 1, `validate: ${validate.stdout}${validate.stderr}`);
      assert.equal(serve.code, 1, `serve: ${serve.stdout}${serve.stderr}`);
      assert.doesNotMatch(serve.stdout, /"msg":"listening"/, 'serve never listened');
      const fromValidate = validateErrors(validate.stderr);
      assert.deepEqual(
        serveErrors(serve.stderr),
        fromValidate,
        `serve and validate print different errors:\n${serve.stderr}\n---\n${validate.stderr}`,
      );
      const prefix = bad.path === '' ? '' : `${bad.path}: `;
      const named = fromValidate.find((l) => l.startsWith(prefix) && bad.message.test(l.slice(prefix.length)));
      assert.ok(named !== undefined, `no error at ${bad.path || '(the file)'} matching ${bad.message}:\n${validate.stderr}`);
      assert.ok(!`${validate.stderr}${serve.stderr}`.includes('sk-literal-0123456789abcdef'), 'a literal secret is never echoed');
    });
  }

  const goodCases: Array<{ name: string; config: () => string; warnings: RegExp[] }> = [
    {
      name: 'a static config with an api_key from a set variable and an ignored weight',
      config: () =>
        staticConfig({
          providers: `east: { type: openai, base_url: http://127.0.0.1:9/v1, api_key: { env: ${KEY} } }`,
          routing: 'routing: { routes: { m: { policy: round_robin, candidates: [ { provider: east, weight: 3 } ] } } }',
        }),
      warnings: [/^routing\.routes\.m\.candidates\[0\]\.weight: ignored: policy "round_robin" does not use weights/],
    },
    {
      name: 'an overlay-mode config whose overlay names a cluster that is not configured',
      config: () => overlayConfig(file('good-overlay.json', JSON.stringify(envelope([candidate('m', 'east'), candidate('m', 'nowhere')])))),
      warnings: [/names cluster "nowhere", which is not a configured provider/],
    },
  ];

  for (const [i, good] of goodCases.entries()) {
    it(`${good.name}: validate exits 0 printing the warnings that serve logs at start-up`, async () => {
      const text = good.config();
      const path = file(`good-${i}.yaml`, text);
      const validate = await runCli(['validate', '--config', path], env);
      assert.equal(validate.code, 0, validate.stderr);
      assert.match(validate.stdout, /: valid \(\d+ warning\(s\)\)$/m);
      const printed = validate.stderr
        .split('\n')
        .filter((l) => l.startsWith('warning: '))
        .map((l) => l.slice('warning: '.length));
      for (const re of good.warnings)
        assert.ok(
          printed.some((w) => re.test(w)),
          `validate printed no warning matching ${re}:\n${validate.stderr}`,
        );

      const gw = await startGatewayProcess(text, { env, dir: mkdtempSync(join(dir, 'serve-')) });
      try {
        const startup = await gw.waitForLog((l) => l.msg === 'reload' && l.trigger === 'startup');
        assert.equal(startup.result, 'applied');
        assert.deepEqual(
          [...((startup.warnings as string[] | undefined) ?? [])].sort(),
          [...printed].sort(),
          'serve logs the warnings validate printed',
        );
      } finally {
        assert.equal(await gw.stop(), 0);
      }
    });
  }
});

describe('switchyard serve on an address another process holds', () => {
  let holder: Server;
  let busy: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-vs-bind-'));
    holder = createServer();
    await new Promise<void>((res) => holder.listen(0, '127.0.0.1', res));
    busy = `127.0.0.1:${(holder.address() as AddressInfo).port}`;
  });
  after(() => {
    holder.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the failure first, naming server.listen and the address, announces no generation, and exits 1', async () => {
    const path = file('busy-listen.yaml', staticConfig().replace('listen: 127.0.0.1:0', `listen: ${busy}`));
    const r = await runCli(['serve', '--config', path]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.equal(r.stdout, '', 'nothing is announced before the failure');
    const [first, second] = r.stderr.split('\n');
    assert.equal(first, `switchyard: cannot start with ${path}:`);
    assert.equal(second, `  server.listen: cannot listen on ${busy}: the address is already in use by another process (EADDRINUSE)`);
  });

  it('with the admin address taken and a Redis store connected, releases what it built and exits 1 naming server.admin_listen', async () => {
    const server = `, admin_listen: ${busy} }\ngovernance: { store: redis, redis_url: "redis://127.0.0.1:6379", key_prefix: "sy-bind-${process.pid}:"`;
    const path = file('busy-admin.yaml', staticConfig({ server }));
    // runCli kills a process still running after 20 s: one that hangs on its Redis connection gets code null.
    const r = await runCli(['serve', '--config', path]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.doesNotMatch(r.stdout, /"generation"|"msg":"listening"/, 'no generation is announced and nothing says listening');
    assert.match(r.stderr, new RegExp(`\\n {2}server\\.admin_listen: cannot listen on ${busy.replaceAll('.', '\\.')}: .*\\(EADDRINUSE\\)`));
  });
});
