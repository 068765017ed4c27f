import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConfigResult, crossReferenceIssues, formatIssue, parseConfigText } from '../../src/config/index.js';
import { build, problems } from '../support/config-check.js';

// MCP servers as providers (type: mcp) and the tool routes of /mcp in the config: what a
// server may carry, what routing.tools and routing.tools_from take, the names they expose,
// what is refused (each refusal naming its path), and what a generation builds of them.

const server = { type: 'mcp', base_url: 'http://127.0.0.1:9/mcp' };

function parse(doc: Record<string, unknown>): ConfigResult {
  return parseConfigText(JSON.stringify({ server: { listen: '127.0.0.1:0' }, ...doc }));
}

describe('providers of type: mcp', () => {
  it('builds a server of its own, with its tools map, trusted annotations and credential, out of the model providers', () => {
    const { gen } = build(
      parse({
        providers: { tools: { ...server, api_key: { env: 'TK' }, tools: { search: 'web_search' }, trust_annotations: true } },
        routing: { tools: { search: { candidates: [{ provider: 'tools' }] } } },
      }),
      { TK: 'secret' },
    );
    assert.ok(gen !== null);
    assert.equal(gen.providers.tools, undefined, 'an MCP server is not a model provider');
    const s = gen.tools.servers.tools;
    assert.ok(s !== undefined);
    assert.equal(s.url, 'http://127.0.0.1:9/mcp');
    assert.equal(s.identity, 'mcp http://127.0.0.1:9/mcp');
    assert.equal(s.trustAnnotations, true);
    assert.equal(s.credential?.source, 'env:TK');
    assert.ok(gen.identities.includes(s.identity), 'its breaker is retained like a provider');
    const route = gen.tools.routes.search;
    assert.equal(route?.groups[0]?.candidates[0]?.upstreamTool, 'web_search', 'the provider maps the exposed name');
    assert.equal(route?.retrySafe, false);
  });

  it('refuses what only model providers read, and tools/trust_annotations on other types', () => {
    const refused = problems(
      parse({
        providers: {
          t: { ...server, models: { a: 'b' }, retry: { attempts: 1 }, expose_headers: ['x-a'] },
          o: { type: 'openai', base_url: 'http://127.0.0.1:9/v1', tools: { a: 'b' }, trust_annotations: true },
        },
        routing: { routes: { m: { candidates: [{ provider: 'o' }] } } },
      }),
    ).sort();
    assert.deepEqual(refused, [
      'providers.o.tools: unknown key for type openai; it is a key of type mcp',
      'providers.o.trust_annotations: unknown key for type openai; it is a key of type mcp',
      'providers.t.expose_headers: unknown key for type mcp (it serves tools); it is a key of type openai, azure_openai, anthropic, gemini, bedrock or vertex',
      'providers.t.models: unknown key for type mcp (it serves tools; map their names with tools); it is a key of type openai, azure_openai, anthropic, gemini, bedrock or vertex',
      'providers.t.retry: unknown key for type mcp (a tool call may be a write; see retry_safe on a tool route); it is a key of type openai, azure_openai, anthropic, gemini, bedrock or vertex',
    ]);
  });

  it('needs a base_url, and is named in the type hint', () => {
    assert.deepEqual(problems(parse({ providers: { t: { type: 'mcp' } }, routing: { tools_from: [{ provider: 't' }] } })), [
      'providers.t.base_url: required',
    ]);
    const hint = problems(
      parse({ providers: { t: { type: 'mpc', base_url: 'http://x/mcp' } }, routing: { tools_from: [{ provider: 't' }] } }),
    );
    assert.match(hint.join('\n'), /"mcp" \(an MCP server's Streamable HTTP endpoint\)/);
  });
});

describe('tool routes', () => {
  it('a config may route tools only, with routing.tools or routing.tools_from', () => {
    assert.ok(build(parse({ providers: { t: server }, routing: { tools_from: [{ provider: 't', prefix: 'docs_' }] } })).gen !== null);
    const { gen } = build(
      parse({
        providers: { a: server, b: { ...server, base_url: 'http://127.0.0.1:10/mcp' } },
        routing: {
          tools: { lookup: { policy: 'round_robin', retry_safe: true, candidates: [{ provider: 'a' }, { provider: 'b', tool: 'find' }] } },
        },
      }),
    );
    const route = gen?.tools.routes.lookup;
    assert.equal(route?.policy, 'round_robin');
    assert.equal(route?.retrySafe, true);
    assert.deepEqual(
      route?.groups[0]?.candidates.map((c) => [c.stableId, c.upstreamTool]),
      [
        ['a/lookup', 'lookup'],
        ['b/find', 'find'],
      ],
    );
    assert.ok(route?.groups[0]?.counterKey.startsWith('static-tool:lookup:'));
    assert.ok(gen?.counterKeys.has(route?.groups[0]?.counterKey ?? ''), 'the rotation is kept across reloads like a model route');
  });

  it('refuses an exposed name outside the specification characters or longer than 128', () => {
    const refused = problems(
      parse({
        providers: { t: server },
        routing: { tools: { 'has space': { candidates: [{ provider: 't' }] }, ['x'.repeat(129)]: { candidates: [{ provider: 't' }] } } },
      }),
    );
    assert.equal(refused.length, 2);
    for (const line of refused) assert.match(line, /must be 1-128 of A-Z a-z 0-9 _ - \./);
  });

  it('refuses a candidate or a source that names an unknown provider or one that is not an MCP server, and a model route on an MCP server', () => {
    const doc = {
      providers: { t: server, o: { type: 'openai', base_url: 'http://127.0.0.1:9/v1' } },
      routing: {
        routes: { m: { candidates: [{ provider: 't' }] } },
        tools: { a: { candidates: [{ provider: 'o' }, { provider: 'nope' }] } },
        tools_from: [{ provider: 'o', prefix: 'x_' }],
      },
    };
    assert.deepEqual(crossReferenceIssues(doc).map(formatIssue), [
      'routing.routes.m.candidates[0].provider: "t" is an MCP server (type: mcp): it serves tools (routing.tools), not models',
      'routing.tools.a.candidates[0].provider: "o" is not an MCP server (type: mcp); a tool needs one',
      'routing.tools.a.candidates[1].provider: unknown provider "nope"',
      'routing.tools_from[0].provider: "o" is not an MCP server (type: mcp); a tool needs one',
    ]);
    // A generation is refused for the same four, so a reload can never serve them.
    assert.equal(build(parse(doc)).issues.length, 4);
  });

  it('refuses two tools_from sources that could expose one name, naming both', () => {
    const refused = problems(
      parse({
        providers: { a: server, b: { ...server, base_url: 'http://127.0.0.1:10/mcp' } },
        routing: {
          tools_from: [
            { provider: 'a', prefix: 'docs_' },
            { provider: 'b', prefix: 'docs_v2_' },
          ],
        },
      }),
    );
    assert.deepEqual(refused, [
      'routing.tools_from[1].prefix: may expose the same tool names as routing.tools_from[0] (provider "a", prefix "docs_") and this one (provider "b", prefix "docs_v2_"): give each a prefix that does not start another\'s',
    ]);
    // Two sources without a prefix collide on every shared name.
    assert.equal(
      problems(
        parse({
          providers: { a: server, b: { ...server, base_url: 'http://x/mcp' } },
          routing: { tools_from: [{ provider: 'a' }, { provider: 'b' }] },
        }),
      ).length,
      1,
    );
    assert.ok(
      parse({
        providers: { a: server, b: { ...server, base_url: 'http://x/mcp' } },
        routing: {
          tools_from: [
            { provider: 'a', prefix: 'a_' },
            { provider: 'b', prefix: 'b_' },
          ],
        },
      }).ok,
    );
  });

  it('static tool routes do not mix with overlay mode: the overlay mcp_tool candidates are the tool routes there', () => {
    const refused = problems(
      parse({
        providers: { t: server },
        routing: {
          overlay: { file: '/tmp/overlay.json' },
          tools: { a: { candidates: [{ provider: 't' }] } },
          tools_from: [{ provider: 't' }],
        },
      }),
    );
    assert.deepEqual(refused, [
      'routing.tools: does not apply with routing.overlay: tool routes come from its mcp_tool candidates',
      'routing.tools_from: does not apply with routing.overlay: tool routes come from its mcp_tool candidates',
    ]);
  });
});

describe('the mcp block and tool governance', () => {
  it('has defaults, and takes origins, session bounds, the recheck and the debounce', () => {
    const result = parse({ providers: { t: server }, routing: { tools_from: [{ provider: 't' }] } });
    assert.ok(result.ok);
    assert.deepEqual(result.config.mcp, {
      allowed_origins: [],
      sessions: { ttl_s: 3600, max_entries: 10_000, max_per_key: 100 },
      catalog_recheck_ms: 60_000,
      list_changed_debounce_ms: 100,
      call_timeout_ms: 300_000,
      responses_label: 'switchyard',
      responses_self_urls: [],
      responses_max_calls: 16,
    });
    assert.deepEqual(
      problems(
        parse({
          providers: { t: server },
          routing: { tools_from: [{ provider: 't' }] },
          mcp: { allowed_origins: ['https://app.example.com/path'], sessions: { ttl_s: 0 } },
        }),
      ),
      ['mcp.allowed_origins[0]: must be an origin (scheme://host[:port], no path) or *', 'mcp.sessions.ttl_s: must be at least 1'],
    );
    assert.deepEqual(
      problems(
        parse({
          providers: { t: server },
          routing: { tools_from: [{ provider: 't' }] },
          mcp: { sessions: { max_per_key: 0 }, call_timeout_ms: 1.5 },
        }),
      ),
      ['mcp.sessions.max_per_key: must be at least 1', 'mcp.call_timeout_ms: must be a whole number'],
    );
  });

  it('teams and keys take allowed_tools and a daily tool-call quota', () => {
    const result = parse({
      providers: { t: server },
      routing: { tools_from: [{ provider: 't' }] },
      teams: { a: { allowed_tools: ['docs_*'], rate_limit: { rpm: 5 }, quota: { tool_calls_per_day: 100 } } },
      keys: [{ id: 'k', team: 'a', sha256: 'a'.repeat(64), allowed_tools: ['docs_search'], tool_calls_per_day: 10 }],
    });
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.config.teams?.a?.quota, { tool_calls_per_day: 100 });
    assert.deepEqual(result.config.keys?.[0]?.allowed_tools, ['docs_search']);
  });
});
