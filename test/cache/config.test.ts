import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkConfig, crossReferenceIssues, PROVIDER_TYPES, servesEmbeddings } from '../../src/config/index.js';
import { operationProviders } from '../../src/providers/index.js';

// The cache's config: a bad value is refused naming its path, a semantic route's embedding
// route must exist and serve embeddings, a redis cache needs a Redis, and a team or key may
// only turn the cache off.

function config(extra: Record<string, unknown> = {}, routes: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    providers: {
      oai: { type: 'openai', base_url: 'http://127.0.0.1:1/v1' },
      claude: { type: 'anthropic', base_url: 'http://127.0.0.1:1/v1' },
    },
    routing: { routes: { m: { candidates: [{ provider: 'oai' }] }, ...routes } },
    ...extra,
  };
}

function paths(result: ReturnType<typeof checkConfig>): string[] {
  return result.ok ? [] : result.issues.map((i) => `${i.path}: ${i.message}`);
}

describe('the cache config', () => {
  it('refuses bad values by their path', () => {
    const bad = paths(
      checkConfig(
        config(
          { cache: { store: 'disk', scope: 'everyone', lookup_timeout_ms: 0 }, teams: { t: { cache: 'on' } } },
          {
            a: { cache: { mode: 'sometimes' }, candidates: [{ provider: 'oai' }] },
            b: { cache: { mode: 'semantic' }, candidates: [{ provider: 'oai' }] },
            c: { cache: { mode: 'exact', semantic: { embedding_route: 'm' } }, candidates: [{ provider: 'oai' }] },
          },
        ),
      ),
    ).join('\n');
    for (const path of [
      'cache.store',
      'cache.scope',
      'cache.lookup_timeout_ms',
      'teams.t.cache',
      'routing.routes.a.cache',
      'routing.routes.b.cache.semantic',
      'routing.routes.c.cache.semantic',
    ])
      assert.match(bad, new RegExp(`^${path.replaceAll('.', '\\.')}:`, 'm'), `${path} in:\n${bad}`);
    assert.match(bad, /cache\.store: .*"memory" or "redis"/);
    assert.match(bad, /teams\.t\.cache: .*only turn the cache off/);
  });

  it('checks the embedding route and the Redis across sections', () => {
    const issues = crossReferenceIssues(
      config(
        { cache: { store: 'redis' } },
        {
          s1: { cache: { mode: 'semantic', semantic: { embedding_route: 'nowhere' } }, candidates: [{ provider: 'oai' }] },
          s2: { cache: { mode: 'semantic', semantic: { embedding_route: 'chat-only' } }, candidates: [{ provider: 'oai' }] },
          'chat-only': { candidates: [{ provider: 'claude' }] },
          s3: { cache: { mode: 'semantic', semantic: { embedding_route: 'm' } }, candidates: [{ provider: 'oai' }] },
        },
      ),
    ).map((i) => `${i.path}: ${i.message}`);
    assert.deepEqual(issues, [
      'cache.store: "redis" needs a Redis: set cache.redis_url, or governance.store: redis and governance.redis_url',
      'routing.routes.s1.cache.semantic.embedding_route: unknown route "nowhere": the embedding route is one of this gateway\'s routes',
      'routing.routes.s2.cache.semantic.embedding_route: route "chat-only" has no candidate that serves embeddings',
    ]);
  });

  it('knows which provider types serve embeddings as the providers’ registry does', () => {
    for (const type of PROVIDER_TYPES) assert.equal(servesEmbeddings(type), operationProviders('embeddings').includes(type as never), type);
  });

  it('takes a valid cache, and a team or key that turns it off', () => {
    const ok = checkConfig(
      config(
        {
          cache: { store: 'memory', scope: 'key' },
          teams: { t: { cache: 'off' } },
          keys: [{ id: 'k', team: 't', sha256: 'a'.repeat(64), cache: { mode: 'off' } }],
        },
        { s: { cache: { mode: 'semantic', semantic: { embedding_route: 'm', threshold: 0.9 } }, candidates: [{ provider: 'oai' }] } },
      ),
    );
    assert.ok(ok.ok, paths(ok).join('\n'));
  });
});

describe('the cache’s Redis', () => {
  it('refuses a password in its URL or its query, and credentials without a URL of its own', () => {
    const bad = paths(checkConfig(config({ cache: { store: 'redis', redis_url: 'redis://u:pw@127.0.0.1:6379' } }))).join('\n');
    assert.match(bad, /^cache\.redis_url: must not contain a password: give it as cache\.redis_password/m);
    const query = paths(checkConfig(config({ cache: { store: 'redis', redis_url: 'redis://127.0.0.1:6379/?password=x' } }))).join('\n');
    assert.match(query, /^cache\.redis_url: must not carry a password in its query/m);
    const orphan = paths(
      checkConfig(
        config({
          cache: { store: 'redis', redis_password: { env: 'P' } },
          governance: { store: 'redis', redis_url: 'redis://127.0.0.1:6379' },
        }),
      ),
    ).join('\n');
    assert.match(orphan, /^cache\.redis_password: applies with cache\.redis_url only/m);
  });
});
