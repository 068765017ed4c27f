import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ConfigIssue,
  type ConfigResult,
  crossReferenceIssues,
  formatIssue,
  type ProviderConfigOf,
  parseConfigText,
  responsesDefaults,
} from '../../src/config/index.js';
import { editDistance, nearestKey } from '../../src/config/issue-text.js';

const VALID_YAML = `
server: { listen: 127.0.0.1:0 }
providers:
  east: { type: openai, base_url: http://127.0.0.1:9001/v1, api_key: { env: EAST_KEY } }
  west: { type: openai, base_url: http://127.0.0.1:9002/v1 }
routing:
  routes:
    gpt-4o-mini:
      policy: round_robin
      candidates:
        - { provider: east, model: gpt-4o-mini }
        - { provider: west, weight: 2 }
`;

const VALID_JSON = JSON.stringify(
  {
    server: { listen: '127.0.0.1:0' },
    providers: {
      east: { type: 'openai', base_url: 'http://127.0.0.1:9001/v1', api_key: { env: 'EAST_KEY' } },
      west: { type: 'openai', base_url: 'http://127.0.0.1:9002/v1' },
    },
    routing: {
      routes: {
        'gpt-4o-mini': {
          policy: 'round_robin',
          candidates: [
            { provider: 'east', model: 'gpt-4o-mini' },
            { provider: 'west', weight: 2 },
          ],
        },
      },
    },
  },
  null,
  2,
);

/** A valid document as an object, to be broken one field at a time. */
function doc(): Record<string, any> {
  return JSON.parse(VALID_JSON) as Record<string, any>;
}

function issuesOf(result: ConfigResult): readonly ConfigIssue[] {
  assert.equal(result.ok, false, 'expected the config to be refused');
  return (result as Extract<ConfigResult, { ok: false }>).issues;
}

function lines(result: ConfigResult): string[] {
  return issuesOf(result).map(formatIssue);
}

function parseObject(value: object): ConfigResult {
  return parseConfigText(JSON.stringify(value));
}

describe('parseConfigText', () => {
  it('accepts YAML and JSON, and both give the same config', () => {
    const fromYaml = parseConfigText(VALID_YAML);
    const fromJson = parseConfigText(VALID_JSON);
    assert.equal(fromYaml.ok, true, JSON.stringify(fromYaml));
    assert.equal(fromJson.ok, true, JSON.stringify(fromJson));
    if (!fromYaml.ok || !fromJson.ok) return;
    assert.deepEqual(fromYaml.config, fromJson.config);
    assert.match(fromYaml.sourceHash, /^[0-9a-f]{64}$/);
    assert.notEqual(fromYaml.sourceHash, fromJson.sourceHash, 'the source hash is of the bytes, not the meaning');
  });

  it('fills in the documented defaults', () => {
    const result = parseConfigText(`
providers:
  east: { type: openai, base_url: http://127.0.0.1:9001/v1 }
routing:
  routes:
    m: { candidates: [ { provider: east } ] }
`);
    assert.equal(result.ok, true, JSON.stringify(result));
    if (!result.ok) return;
    const { config } = result;
    assert.equal(config.server.listen, '127.0.0.1:8080');
    assert.equal(config.server.admin_listen, undefined);
    assert.equal(config.server.max_body_bytes, 10 * 1024 * 1024);
    assert.equal(config.server.drain_timeout_ms, 10_000);
    assert.equal(config.server.watch_config, false);
    const east = config.providers.east as ProviderConfigOf<'openai'>;
    assert.equal(east.timeout_ms, 60_000);
    assert.equal(east.api_key, undefined, 'api_key is optional, for local providers');
    assert.deepEqual(east.headers, {});
    const route = config.routing.routes!.m!;
    assert.equal(route.policy, 'ordered');
    assert.deepEqual(route.candidates, [{ provider: 'east', weight: 1 }]);
    assert.deepEqual(config.resilience.breaker, { failure_threshold: 5, open_base_ms: 1000, open_max_ms: 30_000 });
    assert.deepEqual(config.pricing, { models: {} });
    assert.equal(config.log.level, 'info');
  });

  it('names every problem by its dotted path, with array indices in brackets', () => {
    const d = doc();
    d.providers.east.base_url = 'not a url';
    d.providers.west.timeout_ms = -5;
    d.routing.routes['gpt-4o-mini'].candidates[1].weight = 0;
    d.routing.routes['gpt-4o-mini'].policy = 'fastest';
    d.server.listen = 'localhost';
    const paths = [...new Set(issuesOf(parseObject(d)).map((i) => i.path))].sort();
    assert.deepEqual(paths, [
      'providers.east.base_url',
      'providers.west.timeout_ms',
      'routing.routes.gpt-4o-mini.candidates[1].weight',
      'routing.routes.gpt-4o-mini.policy',
      'server.listen',
    ]);
    assert.ok(
      lines(parseObject(d)).some((l) => /^providers\.east\.base_url: invalid URL/.test(l)),
      lines(parseObject(d)).join('\n'),
    );
  });

  it('a listen address without a port gets one message, not a second one about the port range', () => {
    const d = doc();
    d.server.listen = 'localhost';
    assert.deepEqual(lines(parseObject(d)), ['server.listen: must be host:port, e.g. 127.0.0.1:8080 or [::1]:8080']);
  });

  it('refuses a base_url that is not http or https', () => {
    const d = doc();
    d.providers.east.base_url = 'ftp://127.0.0.1/v1';
    assert.deepEqual(
      issuesOf(parseObject(d)).map((i) => i.path),
      ['providers.east.base_url'],
    );
  });

  it('reports unknown keys at every depth as "<path>: unknown key", suggesting the nearest known key at that level', () => {
    const d = doc();
    d.extra = true;
    d.server.port = 8080;
    d.providers.east.apikey = { env: 'X' };
    d.routing.routes['gpt-4o-mini'].candidates[0].wieght = 3;
    d.routing.routes['gpt-4o-mini'].fallback = 'west';
    d.resilience = { breaker: { threshold: 3 } };
    assert.deepEqual(lines(parseObject(d)).sort(), [
      'extra: unknown key',
      'providers.east.apikey: unknown key; did you mean api_key?',
      'resilience.breaker.threshold: unknown key; did you mean failure_threshold?',
      'routing.routes.gpt-4o-mini.candidates[0].wieght: unknown key; did you mean weight?',
      'routing.routes.gpt-4o-mini.fallback: unknown key; did you mean fallback_on?',
      'server.port: unknown key',
    ]);
  });

  it('refuses a literal api_key with a hint to use a reference, without echoing the value', () => {
    const literal = 'test-literal-secret-0123456789';
    const d = doc();
    d.providers.east.api_key = literal;
    const issues = issuesOf(parseObject(d));
    assert.equal(issues.length, 1, JSON.stringify(issues));
    assert.equal(issues[0]!.path, 'providers.east.api_key');
    assert.match(issues[0]!.message, /reference/);
    assert.match(issues[0]!.message, /\{env: NAME\}/);
    assert.ok(!JSON.stringify(issues).includes(literal), 'the literal value is echoed');
  });

  it('refuses a malformed secret reference with the accepted shapes', () => {
    const d = doc();
    d.providers.east.api_key = { env: 'EAST_KEY', file: '/x' };
    d.providers.west.api_key = { vault: 'x' };
    const issues = issuesOf(parseObject(d));
    assert.deepEqual(issues.map((i) => i.path).sort(), ['providers.east.api_key', 'providers.west.api_key']);
    for (const issue of issues) assert.match(issue.message, /\{env: NAME\} or \{file: PATH\}/);
  });

  it('refuses an empty or blank file', () => {
    for (const text of ['', '   \n\n']) assert.deepEqual(lines(parseConfigText(text)), ['config is empty']);
  });

  it('reports YAML that does not parse with its line', () => {
    const result = lines(parseConfigText('providers:\n  east: { type: openai\nrouting: [\n'));
    assert.ok(result.length >= 1);
    assert.ok(
      result.every((l) => /syntax error at line \d+/.test(l)),
      result.join('\n'),
    );
  });

  it('refuses a duplicate key rather than silently keeping one of them', () => {
    const result = lines(parseConfigText(`${VALID_YAML}\nrouting: {}\n`));
    assert.ok(
      result.some((l) => /^routing: duplicate key \(line \d+\)/.test(l)),
      result.join('\n'),
    );
  });

  it('finds duplicates and unknown keys in one linear pass, listing 20 and counting the rest', () => {
    let dup = `${VALID_YAML}\nextra:\n`;
    for (let i = 0; i < 30_000; i += 1) dup += `  k${i % 25}: 1\n`;
    const dupLines = lines(parseConfigText(dup));
    assert.equal(dupLines.filter((l) => /^extra\.k\d+: duplicate key/.test(l)).length, 20, dupLines.slice(0, 3).join('\n'));
    assert.ok(dupLines.includes('… and 29955 more duplicate keys'), dupLines.at(-1));
    let unknown = VALID_YAML;
    for (let i = 0; i < 30_000; i += 1) unknown += `\nzz${i}: 1`;
    const unknownLines = lines(parseConfigText(unknown));
    assert.equal(unknownLines.filter((l) => /^zz\d+: unknown key/.test(l)).length, 20);
    assert.ok(unknownLines.includes('… and 29980 more unknown keys'), unknownLines.at(-1));
  });

  it('refuses a document that is not a mapping at the top level', () => {
    for (const text of ['[1, 2]', '"just a string"', '42']) {
      const result = lines(parseConfigText(text));
      assert.deepEqual(result, ['config must be a mapping (an object) at the top level'], text);
    }
  });

  it('requires providers and routing', () => {
    assert.deepEqual(
      issuesOf(parseConfigText('server: { listen: 127.0.0.1:0 }'))
        .map((i) => i.path)
        .sort(),
      ['providers', 'routing'],
    );
  });

  it('accepts the anthropic and azure_openai provider types with their own keys', () => {
    const d = doc();
    d.providers.claude = { type: 'anthropic', base_url: 'https://api.anthropic.com/v1', anthropic_version: '2023-06-01' };
    d.providers.azure = { type: 'azure_openai', base_url: 'https://r.openai.azure.com', api_version: '2024-10-21' };
    d.routing.routes['gpt-4o-mini'].candidates.push({ provider: 'claude' }, { provider: 'azure', deployment: 'gpt4o' });
    const result = parseObject(d);
    assert.equal(result.ok, true, JSON.stringify(result));
  });

  it('refuses a provider key that its type does not read, and an azure_openai provider without api_version', () => {
    const d = doc();
    d.providers.east.anthropic_version = '2023-06-01';
    d.providers.azure = { type: 'azure_openai', base_url: 'https://r.openai.azure.com' };
    d.providers.claude = { type: 'anthropic', base_url: 'https://api.anthropic.com/v1', api_version: '2024-10-21' };
    assert.deepEqual(lines(parseObject(d)).sort(), [
      'providers.azure.api_version: required for type: azure_openai (e.g. 2024-10-21)',
      'providers.claude.api_version: unknown key for type anthropic; it is a key of type azure_openai',
      'providers.east.anthropic_version: unknown key for type openai; it is a key of type anthropic or vertex',
    ]);
  });

  it('the cross-check refuses a candidate deployment on a provider that is not azure_openai', () => {
    const d = doc();
    d.routing.routes['gpt-4o-mini'].candidates[0].deployment = 'gpt4o';
    const provider = d.routing.routes['gpt-4o-mini'].candidates[0].provider;
    assert.deepEqual(crossReferenceIssues(d).map(formatIssue), [
      `routing.routes.gpt-4o-mini.candidates[0].deployment: only applies to an azure_openai provider; "${provider}" is not one`,
    ]);
  });

  it('routing.responses.store: redis needs a redis governance store, and database needs database.url', () => {
    const d = doc();
    d.routing.responses = { store: 'redis' };
    assert.deepEqual(
      crossReferenceIssues(d).map((i) => i.path),
      ['routing.responses.store'],
    );
    d.governance = { store: 'redis', redis_url: 'redis://127.0.0.1:6379' };
    assert.deepEqual(crossReferenceIssues(d), []);
    d.routing.responses = { store: 'database' };
    assert.deepEqual(
      crossReferenceIssues(d).map((i) => i.path),
      ['routing.responses.store'],
    );
    d.database = { url: 'sqlite:/tmp/switchyard.db' };
    assert.deepEqual(crossReferenceIssues(d), []);
    d.routing.responses = { store: 'disk' };
    assert.deepEqual(
      lines(parseObject(d)).map((l) => l.split(':')[0]),
      ['routing.responses.store'],
    );
  });

  it('routing.responses.retention_days without the database store is reported as having no effect', () => {
    const d = doc();
    d.routing.responses = { retention_days: 7 };
    const result = parseObject(d);
    assert.ok(result.ok);
    const about = (r: ConfigResult) => (r.ok ? r.warnings.map((w) => w.path).filter((p) => p.startsWith('routing.responses')) : null);
    assert.deepEqual(about(result), ['routing.responses.retention_days']);
    d.routing.responses = { store: 'database', retention_days: 7 };
    d.database = { url: 'sqlite:/tmp/switchyard.db' };
    assert.deepEqual(about(parseObject(d)), []);
  });

  it('routing.responses takes a TTL of up to 90 days and a positive bound, and defaults to 30 days and 100 000', () => {
    const d = doc();
    d.routing.responses = { ttl_s: 60 };
    const result = parseObject(d);
    assert.equal(result.ok, true, JSON.stringify(result));
    const defaults = { store: 'memory', retention_days: 30, max_items: 1000 };
    if (result.ok) assert.deepEqual(result.config.routing.responses, { ttl_s: 60, max_entries: 100_000, ...defaults });
    assert.deepEqual(responsesDefaults, { ttl_s: 30 * 24 * 3600, max_entries: 100_000, ...defaults });
    d.routing.responses = { ttl_s: 91 * 24 * 3600, max_entries: 0 };
    assert.deepEqual(
      lines(parseObject(d)).map((l) => l.split(':')[0]),
      ['routing.responses.ttl_s', 'routing.responses.max_entries'],
    );
  });

  it('refuses a route without candidates', () => {
    const d = doc();
    d.routing.routes['gpt-4o-mini'].candidates = [];
    assert.deepEqual(lines(parseObject(d)), ['routing.routes.gpt-4o-mini.candidates: a route needs at least one candidate']);
  });
});

describe("config messages in the project's words", () => {
  const cases: Array<[name: string, change: (d: Record<string, any>) => void, line: string]> = [
    [
      'a fraction where a whole number goes',
      (d) => (d.providers.east.timeout_ms = 1.5),
      'providers.east.timeout_ms: must be a whole number',
    ],
    ['a string where a number goes', (d) => (d.providers.east.timeout_ms = '5000'), 'providers.east.timeout_ms: must be a number'],
    [
      'zero where at least 1 is required',
      (d) => (d.providers.east.max_connections = 0),
      'providers.east.max_connections: must be at least 1',
    ],
    [
      'a number over the maximum',
      (d) => (d.routing.routes['gpt-4o-mini'].candidates[1].weight = 5000),
      'routing.routes.gpt-4o-mini.candidates[1].weight: must be at most 1000',
    ],
    ['a number where a string goes', (d) => (d.server.listen = 8080), 'server.listen: must be a string'],
    ['a string where true/false goes', (d) => (d.server.watch_config = 'yes'), 'server.watch_config: must be true or false'],
    [
      'a value outside a closed set',
      (d) => (d.routing.routes['gpt-4o-mini'].policy = 'fastest'),
      'routing.routes.gpt-4o-mini.policy: must be one of: ordered, round_robin, random, weighted',
    ],
    ['a list where a mapping goes', (d) => (d.providers.east.headers = ['x']), 'providers.east.headers: must be a mapping (key: value)'],
    ['a missing required key', (d) => delete d.providers.east.base_url, 'providers.east.base_url: required'],
    [
      'an empty model name',
      (d) => (d.routing.routes['gpt-4o-mini'].candidates[0].model = ''),
      'routing.routes.gpt-4o-mini.candidates[0].model: must not be empty',
    ],
  ];
  for (const [name, change, line] of cases) {
    it(`${name}: "${line}"`, () => {
      const d = doc();
      change(d);
      assert.deepEqual(lines(parseObject(d)), [line]);
    });
  }

  it("no message uses zod's raw wording", () => {
    const d = doc();
    d.server = { listen: 1, max_body_bytes: 0.5, drain_timeout_ms: -1, watch_config: 'no' };
    d.providers.east = { type: 'gemini', base_url: 3, timeout_ms: 'x', max_connections: 1e9, headers: { a: 1 } };
    d.log = { level: 'loud' };
    const all = lines(parseObject(d));
    assert.ok(all.length >= 8, all.join('\n'));
    for (const l of all) assert.doesNotMatch(l, /Invalid input|Too small|Too big|Invalid option|expected .*, received|>=|<=/, l);
  });

  it('an unknown key with nothing close gets no suggestion', () => {
    assert.equal(
      nearestKey('colour', ['type', 'base_url', 'api_key', 'timeout_ms', 'connect_timeout_ms', 'max_connections', 'headers']),
      null,
    );
  });

  it('suggests by small edits, by case and by one word of a snake_case key', () => {
    const provider = ['type', 'base_url', 'api_key', 'timeout_ms', 'connect_timeout_ms', 'max_connections', 'headers'];
    assert.equal(nearestKey('timeout', provider), 'timeout_ms');
    assert.equal(nearestKey('timeoutMs', provider), 'timeout_ms');
    assert.equal(nearestKey('timout_ms', provider), 'timeout_ms');
    assert.equal(nearestKey('baseurl', provider), 'base_url');
    assert.equal(nearestKey('header', provider), 'headers');
    assert.equal(editDistance('wieght', 'weight'), 1, 'a transposition is one edit');
    assert.equal(editDistance('', 'abc'), 3);
    assert.equal(editDistance('kitten', 'sitting'), 3);
  });
});

describe('rules about the config alone are in the schema', () => {
  it('an admin listener on a non-loopback address needs server.admin_token', () => {
    const d = doc();
    d.server.admin_listen = '0.0.0.0:9090';
    assert.deepEqual(lines(parseObject(d)), [
      'server.admin_token: required when server.admin_listen (0.0.0.0:9090) is not a loopback address',
    ]);
    d.server.admin_token = { env: 'ADMIN_TOKEN' };
    assert.equal(parseObject(d).ok, true);
  });

  it('a loopback admin listener (IPv4, IPv6, localhost) needs no token', () => {
    for (const listen of ['127.0.0.1:9090', '[::1]:9090', 'localhost:9090']) {
      const d = doc();
      d.server.admin_listen = listen;
      const result = parseObject(d);
      assert.equal(result.ok, true, `${listen}: ${JSON.stringify(result)}`);
    }
  });

  it('the missing admin token is reported together with other errors in the same pass', () => {
    const d = doc();
    d.server.admin_listen = '0.0.0.0:9090';
    d.server.listen = 'nowhere';
    d.providers.east.base_url = 'not a url';
    const paths = issuesOf(parseObject(d))
      .map((i) => i.path)
      .sort();
    assert.deepEqual(paths, ['providers.east.base_url', 'server.admin_token', 'server.listen']);
  });
});

describe('config warnings', () => {
  it('a weight under a policy other than weighted is a warning with its path, not an error', () => {
    const result = parseConfigText(VALID_YAML);
    assert.equal(result.ok, true, JSON.stringify(result));
    if (!result.ok) return;
    assert.deepEqual(result.warnings.map(formatIssue), [
      'routing.routes.gpt-4o-mini.candidates[1].weight: ignored: policy "round_robin" does not use weights (only "weighted" does)',
    ]);
  });

  it('a weight under the weighted policy, or a defaulted one, warns about nothing', () => {
    const d = doc();
    d.routing.routes['gpt-4o-mini'].policy = 'weighted';
    const weighted = parseObject(d);
    assert.ok(weighted.ok);
    assert.deepEqual(weighted.warnings, []);
    const e = doc();
    delete e.routing.routes['gpt-4o-mini'].candidates[1].weight;
    const unweighted = parseObject(e);
    assert.ok(unweighted.ok);
    assert.deepEqual(unweighted.warnings, []);
  });
});

describe('providers.<name>.retry and fallback_on', () => {
  it('a retry block needs only attempts, and defaults its backoff to 100 ms doubling up to 2000 ms', () => {
    const d = doc();
    d.providers.east.retry = { attempts: 2 };
    const result = parseObject(d);
    assert.equal(result.ok, true, JSON.stringify(result));
    if (result.ok)
      assert.deepEqual((result.config.providers.east as ProviderConfigOf<'openai'>).retry, {
        attempts: 2,
        backoff_ms: 100,
        max_backoff_ms: 2000,
      });
  });

  it('refuses retry values out of bounds, each named by its path', () => {
    const cases: Array<[retry: Record<string, unknown>, line: string]> = [
      [{ attempts: 11 }, 'providers.east.retry.attempts: must be at most 10'],
      [{ attempts: -1 }, 'providers.east.retry.attempts: must be at least 0'],
      [{ attempts: 1.5 }, 'providers.east.retry.attempts: must be a whole number'],
      [{}, 'providers.east.retry.attempts: required'],
      [{ attempts: 1, backoff_ms: -5 }, 'providers.east.retry.backoff_ms: must be at least 0'],
      [{ attempts: 1, backoff_ms: 500, max_backoff_ms: 100 }, 'providers.east.retry.max_backoff_ms: must be at least backoff_ms (500)'],
      [{ attempts: 1, max_backoff_ms: 50 }, 'providers.east.retry.max_backoff_ms: must be at least backoff_ms (100)'],
    ];
    for (const [retry, line] of cases) {
      const d = doc();
      d.providers.east.retry = retry;
      assert.deepEqual(lines(parseObject(d)), [line], JSON.stringify(retry));
    }
    const d = doc();
    d.providers.east.retry = { attempts: 1, jitter: true };
    assert.match(lines(parseObject(d))[0] ?? '', /^providers\.east\.retry\.jitter: unknown key/);
  });

  it('fallback_on takes context_length and content_filter, on a route and for every overlay model', () => {
    const d = doc();
    d.routing.routes['gpt-4o-mini'].fallback_on = ['context_length', 'content_filter'];
    const result = parseObject(d);
    assert.equal(result.ok, true, JSON.stringify(result));
    if (result.ok) assert.deepEqual(result.config.routing.routes?.['gpt-4o-mini']?.fallback_on, ['context_length', 'content_filter']);
    const overlay = doc();
    delete overlay.routing.routes;
    overlay.routing.overlay = { file: '/overlay/routing-overlay.json', fallback_on: ['content_filter'] };
    const fromOverlay = parseObject(overlay);
    assert.equal(fromOverlay.ok, true, JSON.stringify(fromOverlay));
    if (fromOverlay.ok) assert.deepEqual(fromOverlay.config.routing.overlay?.fallback_on, ['content_filter']);
  });

  it('refuses an unknown class and a class listed twice, naming the path', () => {
    const d = doc();
    d.routing.routes['gpt-4o-mini'].fallback_on = ['context_length', 'prompt_too_long'];
    assert.deepEqual(lines(parseObject(d)), ['routing.routes.gpt-4o-mini.fallback_on[1]: must be "context_length" or "content_filter"']);
    d.routing.routes['gpt-4o-mini'].fallback_on = ['context_length', 'context_length'];
    assert.deepEqual(lines(parseObject(d)), ['routing.routes.gpt-4o-mini.fallback_on: lists a class twice']);
    const overlay = doc();
    delete overlay.routing.routes;
    overlay.routing.overlay = { file: '/o.json', fallback_on: 'context_length' };
    assert.match(lines(parseObject(overlay))[0] ?? '', /^routing\.overlay\.fallback_on: /);
  });
});
