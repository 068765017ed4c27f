import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { type ConfigResult, parseConfigText } from '../../src/config/index.js';
import { build, problems } from '../support/config-check.js';
import { runCli } from '../support/gateway-process.js';

// Agents in the config: providers of type a2a, routing.agents, the a2a section and
// server.trusted_proxies. What a good config builds, and each refusal, by the path it names:
// in the schema (a value no config may hold) or in the build (a reference to the wrong kind
// of provider), which `switchyard validate` runs alike.

const agent = { type: 'a2a', base_url: 'https://planner.example' };
const model = { type: 'openai', base_url: 'http://127.0.0.1:9/v1' };
const tools = { type: 'mcp', base_url: 'http://127.0.0.1:9/mcp' };

function parse(doc: Record<string, unknown>): ConfigResult {
  return parseConfigText(JSON.stringify({ server: { listen: '127.0.0.1:0' }, ...doc }));
}

/** A config whose only routes are the given agents, over the given providers. */
function agents(providers: Record<string, unknown>, routes: Record<string, unknown>, extra: Record<string, unknown> = {}): ConfigResult {
  return parse({ providers, routing: { agents: routes }, ...extra });
}

describe('a config with agents', () => {
  it('builds each upstream agent apart from the model providers, with its card URL, identity and credential', () => {
    const { gen, issues } = build(
      agents(
        {
          east: { ...agent, base_url: 'https://planner.example/', api_key: { env: 'PK' }, timeout_ms: 120000 },
          west: { ...agent, base_url: 'https://west.example', card_path: '/agents/planner/card.json', stream_max_ms: 1000 },
        },
        {
          planner: { policy: 'weighted', candidates: [{ provider: 'east', weight: 3 }, { provider: 'west' }] },
          'research.v2': { candidates: [{ provider: 'west' }] },
        },
      ),
      { PK: 'upstream-secret' },
    );
    assert.deepEqual(issues, []);
    assert.ok(gen !== null);
    assert.equal(gen.providers.east, undefined, 'an agent is not a model provider');
    const east = gen.agents.servers.east;
    const west = gen.agents.servers.west;
    assert.ok(east !== undefined && west !== undefined);
    assert.equal(east.cardUrl, 'https://planner.example/.well-known/agent-card.json', 'the default card path');
    assert.equal(west.cardUrl, 'https://west.example/agents/planner/card.json');
    assert.equal(east.identity, 'a2a https://planner.example');
    assert.equal(east.timeoutMs, 120000);
    assert.equal(east.streamMaxMs, null);
    assert.equal(west.streamMaxMs, 1000);
    assert.equal(east.credential?.source, 'env:PK');
    assert.equal(west.credential, null);
    assert.deepEqual(gen.agents.names, ['planner', 'research.v2']);
    const planner = gen.agents.routes.planner?.groups.flatMap((g) => g.candidates) ?? [];
    assert.deepEqual(
      planner.map((c) => [c.providerName, c.weight]),
      [
        ['east', 3],
        ['west', 1],
      ],
    );
    assert.ok(gen.identities.includes(east.identity), "its breaker is kept across reloads like a provider's");
  });

  it('fills the a2a section and trusted_proxies with their defaults', () => {
    const parsed = agents({ a: agent }, { a: { candidates: [{ provider: 'a' }] } });
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.config.a2a, {
      card_recheck_ms: 300_000,
      max_card_bytes: 1024 * 1024,
      max_event_bytes: 4 * 1024 * 1024,
      stream_max_ms: 3_600_000,
      call_timeout_ms: 300_000,
      push_urls: [],
      tasks: { ttl_s: 7 * 24 * 3600, terminal_ttl_s: 24 * 3600, max_entries: 100_000 },
    });
    assert.deepEqual(parsed.config.server.trusted_proxies, []);
  });

  it('takes IPv4 and IPv6 addresses and ranges as trusted proxies, and push URL prefixes of either scheme', () => {
    const parsed = agents(
      { a: agent },
      { a: { candidates: [{ provider: 'a' }] } },
      {
        server: { listen: '127.0.0.1:0', trusted_proxies: ['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '::1', '0.0.0.0/0'] },
        a2a: { push_urls: ['https://hooks.internal.example/a2a/', 'http://10.1.2.3:8080/'] },
      },
    );
    assert.ok(parsed.ok, JSON.stringify(parsed));
  });

  it('routes agents beside model routes, and beside an overlay, whose contract has no agent candidates', () => {
    assert.ok(
      parse({
        providers: { a: agent, o: model },
        routing: { routes: { m: { candidates: [{ provider: 'o' }] } }, agents: { a: { candidates: [{ provider: 'a' }] } } },
      }).ok,
    );
    const overlay = parse({
      providers: { a: agent },
      routing: { overlay: { file: '/overlay/routing-overlay.json' }, agents: { a: { candidates: [{ provider: 'a' }] } } },
    });
    assert.ok(overlay.ok, JSON.stringify(overlay));
  });
});

describe('what the schema refuses, by path', () => {
  it('refuses a card_path that is not a plain absolute path', () => {
    for (const card_path of ['card.json', '', '/card.json?v=1', '/card.json#x', '/a b']) {
      assert.deepEqual(
        problems(agents({ a: { ...agent, card_path } }, { a: { candidates: [{ provider: 'a' }] } })),
        ['providers.a.card_path: must be a path starting with / (no query, no fragment)'],
        card_path,
      );
    }
  });

  it('refuses an agent name that is not one URL path segment', () => {
    for (const name of ['a/b', '../x', '-lead', 'a b', 'x'.repeat(65)]) {
      const found = problems(agents({ a: agent }, { [name]: { candidates: [{ provider: 'a' }] } }));
      assert.equal(found.length, 1, `${name}: ${found.join('; ')}`);
      assert.match(found[0] as string, /^routing\.agents.*: .*it is a URL path segment/, name);
    }
  });

  it('refuses an agent route with no candidate, and a weight out of range', () => {
    assert.deepEqual(problems(agents({ a: agent }, { a: { candidates: [] } })), [
      'routing.agents.a.candidates: an agent needs at least one candidate',
    ]);
    const weight = problems(agents({ a: agent }, { a: { candidates: [{ provider: 'a', weight: 0 }] } }));
    assert.equal(weight.length, 1);
    assert.match(weight[0] as string, /^routing\.agents\.a\.candidates\[0\]\.weight: /);
  });

  it('refuses what only model providers read, naming why an agent has none of it', () => {
    const refused = problems(
      agents(
        { a: { ...agent, max_event_bytes: 4096, models: { m: 'n' }, retry: { attempts: 1 }, expose_headers: ['x-a'] } },
        { a: { candidates: [{ provider: 'a' }] } },
      ),
    ).sort();
    assert.deepEqual(refused, [
      'providers.a.expose_headers: unknown key for type a2a (it serves an agent); it is a key of type openai, azure_openai, anthropic, gemini, bedrock or vertex',
      "providers.a.max_event_bytes: unknown key for type a2a (a2a.max_event_bytes bounds every agent's events); it is a key of every other type",
      'providers.a.models: unknown key for type a2a (it serves an agent (routing.agents)); it is a key of type openai, azure_openai, anthropic, gemini, bedrock or vertex',
      'providers.a.retry: unknown key for type a2a (a message may start work; a new task fails over only when it never reached the agent); it is a key of type openai, azure_openai, anthropic, gemini, bedrock or vertex',
    ]);
  });

  it('refuses card_path on any other type, and needs a base_url', () => {
    assert.deepEqual(
      problems(parse({ providers: { o: { ...model, card_path: '/c' } }, routing: { routes: { m: { candidates: [{ provider: 'o' }] } } } })),
      ['providers.o.card_path: unknown key for type openai; it is a key of type a2a'],
    );
    assert.deepEqual(problems(agents({ a: { type: 'a2a' } }, { a: { candidates: [{ provider: 'a' }] } })), [
      'providers.a.base_url: required',
    ]);
  });

  it('refuses a trusted proxy that is not an IP address or a CIDR range', () => {
    for (const bad of ['10.0.0.0/33', '::1/129', 'proxy.internal', '10.0.0/8', '10.0.0.0/', '10.0.0.0/8/8', '']) {
      assert.deepEqual(
        problems(
          agents(
            { a: agent },
            { a: { candidates: [{ provider: 'a' }] } },
            { server: { listen: '127.0.0.1:0', trusted_proxies: ['127.0.0.1', bad] } },
          ),
        ),
        ['server.trusted_proxies[1]: must be an IP address or a CIDR range such as 10.0.0.0/8 or fd00::/8'],
        bad,
      );
    }
  });

  it('refuses a push URL prefix that is not an http(s) URL, or that carries a password', () => {
    const refusal = (prefix: string) =>
      problems(agents({ a: agent }, { a: { candidates: [{ provider: 'a' }] } }, { a2a: { push_urls: [prefix] } }));
    for (const bad of ['ftp://hooks.example/', 'hooks.example/a2a/', '/a2a/', 'javascript:alert(1)'])
      assert.deepEqual(refusal(bad), ['a2a.push_urls[0]: must be an http:// or https:// URL prefix'], bad);
    assert.deepEqual(refusal('https://user:pw@hooks.example/'), ['a2a.push_urls[0]: must not contain user:password@']);
  });

  it('refuses out-of-range bounds and unknown keys in the a2a section, by path', () => {
    const refused = problems(
      agents(
        { a: agent },
        { a: { candidates: [{ provider: 'a' }] } },
        { a2a: { max_event_bytes: 100, call_timeout_ms: 0, tasks: { ttl_s: 0, terminal_ttl_s: 1.5 }, card_ttl_ms: 1 } },
      ),
    );
    const paths = refused.map((line) => line.slice(0, line.indexOf(':'))).sort();
    assert.deepEqual(paths, [
      'a2a.call_timeout_ms',
      'a2a.card_ttl_ms',
      'a2a.max_event_bytes',
      'a2a.tasks.terminal_ttl_s',
      'a2a.tasks.ttl_s',
    ]);
  });
});

describe('what the build refuses: references to the wrong kind of provider', () => {
  it('refuses an agent candidate naming a model provider, an MCP server or no provider at all', () => {
    const { issues } = build(
      agents(
        { a: agent, o: model, t: tools },
        { lead: { candidates: [{ provider: 'a' }, { provider: 'o' }, { provider: 't' }, { provider: 'nope' }] } },
      ),
    );
    assert.deepEqual(issues.sort(), [
      'routing.agents.lead.candidates[1].provider: "o" is not an agent (type: a2a); an agent route needs one',
      'routing.agents.lead.candidates[2].provider: "t" is not an agent (type: a2a); an agent route needs one',
      'routing.agents.lead.candidates[3].provider: unknown provider "nope"',
    ]);
  });

  it('refuses a model route naming an agent', () => {
    const { issues } = build(
      parse({
        providers: { a: agent, o: model },
        routing: { routes: { m: { candidates: [{ provider: 'o' }, { provider: 'a' }] } } },
      }),
    );
    assert.deepEqual(issues, [
      'routing.routes.m.candidates[1].provider: "a" is an agent (type: a2a): it serves agents (routing.agents), not models',
    ]);
  });

  it('refuses a tool route naming an agent', () => {
    const { issues } = build(
      parse({ providers: { a: agent, t: tools }, routing: { tools: { search: { candidates: [{ provider: 'a' }] } } } }),
    );
    assert.equal(issues.length, 1, issues.join('\n'));
    assert.match(issues[0] as string, /^routing\.tools\.search\.candidates\[0\]\.provider: "a" /);
  });
});

describe('switchyard validate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-a2a-config-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, config: object): string => {
    const path = join(dir, name);
    writeFileSync(path, stringify(config));
    return path;
  };

  it('exits 0 on a config of two agents with a fallback, without reading a card', async () => {
    const path = write('good.yaml', {
      server: { listen: '127.0.0.1:0', trusted_proxies: ['10.0.0.0/8'] },
      // Port 9 on loopback: nothing listens, and validate must not try.
      providers: {
        east: { type: 'a2a', base_url: 'http://127.0.0.1:9', api_key: { env: 'A2A_DOCS_KEY' } },
        west: { type: 'a2a', base_url: 'http://127.0.0.1:9', card_path: '/west/.well-known/agent-card.json' },
      },
      routing: {
        agents: {
          planner: { candidates: [{ provider: 'east' }, { provider: 'west' }] },
          research: { candidates: [{ provider: 'west' }] },
        },
      },
      a2a: { push_urls: ['https://hooks.internal.example/a2a/'] },
    });
    const { code, stdout, stderr } = await runCli(['validate', '--config', path], { A2A_DOCS_KEY: 'k' });
    assert.equal(code, 0, stdout + stderr);
  });

  it('exits 1 naming every refused path: a schema error and a wrong reference in one pass', async () => {
    const path = write('bad.yaml', {
      server: { listen: '127.0.0.1:0', trusted_proxies: ['10.0.0.0/33'] },
      providers: { east: { type: 'a2a', base_url: 'http://127.0.0.1:9', max_event_bytes: 4096 }, o: model },
      routing: { agents: { planner: { candidates: [{ provider: 'o' }] } } },
    });
    const { code, stdout, stderr } = await runCli(['validate', '--config', path]);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /server\.trusted_proxies\[0\]/);
    assert.match(stderr, /providers\.east\.max_event_bytes: unknown key for type a2a \(a2a\.max_event_bytes bounds every agent's events\)/);
    assert.match(stderr, /routing\.agents\.planner\.candidates\[0\]\.provider: "o" is not an agent/);
  });
});
