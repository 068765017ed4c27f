import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfigIssue, ConfigResult } from '../../src/config/index.js';
import { checkConfig, parseConfigText } from '../../src/config/index.js';

// Config input that would be unsafe to take as given, refused with an issue at its path and
// never echoed: credentials in a provider's base_url or headers, headers the gateway owns,
// and a YAML alias bomb (an error, not an exception). The process-level side is in
// test/cli/validate-config.test.ts and test/server/rejected-reloads.test.ts.

function issuesOf(result: ConfigResult): readonly ConfigIssue[] {
  assert.equal(result.ok, false, 'the config was accepted');
  return result.ok ? [] : result.issues;
}

function accepted(result: ConfigResult): void {
  assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.issues));
}

/** A minimal static-routes config with one provider `east`, as a parsed document. */
function withProvider(provider: Record<string, unknown>): Record<string, unknown> {
  return {
    providers: { east: { type: 'openai', base_url: 'http://127.0.0.1:1/v1', ...provider } },
    routing: { routes: { m: { candidates: [{ provider: 'east' }] } } },
  };
}

function issueAt(issues: readonly ConfigIssue[], path: string): ConfigIssue {
  const found = issues.find((i) => i.path === path);
  assert.ok(found, `no issue at ${path}; issues: ${JSON.stringify(issues)}`);
  return found;
}

function assertNotEchoed(issues: readonly ConfigIssue[], secret: string): void {
  for (const i of issues) assert.ok(!`${i.path} ${i.message}`.includes(secret), `an issue echoes the secret: ${i.path}: ${i.message}`);
}

// ---------------------------------------------------------------------------------------

describe('providers.<name>.base_url carries no userinfo, query or fragment', () => {
  it('a base URL with a path (and a port) is accepted', () => {
    accepted(checkConfig(withProvider({ base_url: 'https://example.test:8443/openai/v1' })));
  });

  it('user:password@ in base_url is refused at providers.east.base_url without echoing the password', () => {
    const password = 'sk-live-abcdefghijklmnopqrstuvwx';
    const issues = issuesOf(checkConfig(withProvider({ base_url: `http://svc:${password}@127.0.0.1:1/v1` })));
    issueAt(issues, 'providers.east.base_url');
    assertNotEchoed(issues, password);
  });

  it('a query string in base_url is refused at providers.east.base_url', () => {
    issueAt(
      issuesOf(checkConfig(withProvider({ base_url: 'http://127.0.0.1:1/openai/deployments/d1?api-version=2024-06-01' }))),
      'providers.east.base_url',
    );
  });

  it('a #fragment in base_url is refused at providers.east.base_url', () => {
    issueAt(issuesOf(checkConfig(withProvider({ base_url: 'http://127.0.0.1:1/v1#section' }))), 'providers.east.base_url');
  });

  it('the same refusals come out of YAML text (parseConfigText), without the password', () => {
    const password = 'p4ssw0rd-not-for-logs';
    const text = `providers:\n  east: { type: openai, base_url: "http://user:${password}@127.0.0.1:1/v1" }\nrouting: { routes: { m: { candidates: [ { provider: east } ] } } }\n`;
    const issues = issuesOf(parseConfigText(text, {}));
    issueAt(issues, 'providers.east.base_url');
    assertNotEchoed(issues, password);
  });
});

// ---------------------------------------------------------------------------------------

describe('database.url carries no secret: neither in its userinfo nor in its query', () => {
  const withDatabase = (url: string) => ({ ...withProvider({}), database: { url } });

  it('a postgres:// URL with harmless query parameters (sslmode, application_name) is accepted', () => {
    accepted(checkConfig(withDatabase('postgres://switchyard@127.0.0.1:5432/switchyard?sslmode=require&application_name=gw')));
  });

  for (const param of ['password', 'sslpassword', 'sslkey', 'sslcert', 'sslrootcert', 'PassWord']) {
    it(`${param}= in the query is refused at database.url, pointing at database.password and database.tls, without echoing it`, () => {
      const value = 'query-secret-never-echoed';
      const issues = issuesOf(
        checkConfig(withDatabase(`postgres://switchyard@127.0.0.1:5432/switchyard?sslmode=require&${param}=${value}`)),
      );
      const issue = issueAt(issues, 'database.url');
      assert.match(issue.message, new RegExp(`must not carry ${param} in its query`));
      assert.match(issue.message, /database\.password .*database\.tls/);
      assertNotEchoed(issues, value);
    });
  }

  it('a password in the userinfo is refused at database.url too, without echoing it', () => {
    const value = 'userinfo-secret-never-echoed';
    const issues = issuesOf(checkConfig(withDatabase(`postgresql://switchyard:${value}@127.0.0.1:5432/switchyard`)));
    assert.match(issueAt(issues, 'database.url').message, /must not contain a password: give it as database\.password/);
    assertNotEchoed(issues, value);
  });
});

// ---------------------------------------------------------------------------------------

describe('providers.<name>.headers cannot carry credentials or hop-by-hop headers', () => {
  it('an ordinary header (OpenAI-Organization: org-1) is accepted', () => {
    accepted(checkConfig(withProvider({ headers: { 'OpenAI-Organization': 'org-1' } })));
  });

  for (const name of [
    'Authorization',
    'authorization',
    'AUTHORIZATION',
    'Host',
    'Content-Length',
    'Transfer-Encoding',
    'transfer-encoding',
    'Connection',
  ]) {
    it(`a header named ${name} is refused at providers.east.headers.${name}`, () => {
      const issues = issuesOf(checkConfig(withProvider({ headers: { 'OpenAI-Organization': 'org-1', [name]: 'x' } })));
      issueAt(issues, `providers.east.headers.${name}`);
      assert.ok(!issues.some((i) => i.path === 'providers.east.headers.OpenAI-Organization'), 'the ordinary header is not blamed');
    });
  }

  it('an Authorization header with a literal bearer token is refused without echoing the token', () => {
    const token = 'Bearer sk-literal-in-config-0123456789abcdef';
    const issues = issuesOf(checkConfig(withProvider({ headers: { Authorization: token } })));
    issueAt(issues, 'providers.east.headers.Authorization');
    assertNotEchoed(issues, 'sk-literal-in-config-0123456789abcdef');
  });

  for (const [what, value] of [
    ['a Bearer token', 'Bearer xyzABCdefGHIjklMNOpqr0123456789'],
    ['an sk- key', `sk-${'a1B2c3D4e5F6g7H8i9J0'}`],
  ] as const) {
    it(`a header value that looks like a credential (${what}) is refused at providers.east.headers.X-Extra without echoing it`, () => {
      const issues = issuesOf(checkConfig(withProvider({ headers: { 'X-Extra': value } })));
      issueAt(issues, 'providers.east.headers.X-Extra');
      assertNotEchoed(issues, value);
      assertNotEchoed(issues, value.replace(/^Bearer /, ''));
    });
  }

  it('a header name that is not an HTTP token ("bad header") is refused under providers.east.headers', () => {
    const issues = issuesOf(checkConfig(withProvider({ headers: { 'bad header': 'v' } })));
    assert.ok(
      issues.some((i) => i.path.startsWith('providers.east.headers')),
      JSON.stringify(issues),
    );
  });

  it('a YAML config with an Authorization header is refused by parseConfigText too', () => {
    // Assembled at run time so that no key-shaped literal sits in the repository.
    const fakeKey = `sk-${'abcdefghijklmnopqrstuvwx'}`;
    const text = `providers:\n  east: { type: openai, base_url: "http://127.0.0.1:1/v1", headers: { Authorization: "Bearer ${fakeKey}" } }\nrouting: { routes: { m: { candidates: [ { provider: east } ] } } }\n`;
    const issues = issuesOf(parseConfigText(text, {}));
    issueAt(issues, 'providers.east.headers.Authorization');
    assertNotEchoed(issues, fakeKey);
  });
});

// ---------------------------------------------------------------------------------------

describe('a YAML alias bomb is a config error, not an exception', () => {
  // Each level multiplies the expansion: 11 aliases of 11 aliases of one mapping.
  const bomb = `providers:
  east: { type: openai, base_url: "http://127.0.0.1:1/v1", headers: &h { a: b } }
  west: { type: openai, base_url: "http://127.0.0.1:2/v1", headers: &h2 { a: *h, b: *h, c: *h, d: *h, e: *h, f: *h, g: *h, h: *h, i: *h, j: *h, k: *h } }
  central: { type: openai, base_url: "http://127.0.0.1:3/v1", headers: { a: *h2, b: *h2, c: *h2, d: *h2, e: *h2, f: *h2, g: *h2, h: *h2, i: *h2, j: *h2, k: *h2 } }
routing: { routes: { m: { candidates: [ { provider: east } ] } } }
`;

  it('parseConfigText returns an issue naming the aliases instead of throwing', () => {
    let result: ConfigResult | undefined;
    assert.doesNotThrow(() => {
      result = parseConfigText(bomb, {});
    });
    const issues = issuesOf(result!);
    assert.ok(
      issues.some((i) => /alias/i.test(i.message)),
      `a clear message about aliases: ${JSON.stringify(issues)}`,
    );
  });
});
