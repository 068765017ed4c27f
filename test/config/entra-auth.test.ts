import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConfigResult, formatIssue, type ProviderConfigOf, parseConfigText } from '../../src/config/index.js';
import { buildGeneration } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';

// `providers.<name>.auth: {type: entra}`: refused, with its path, wherever it cannot mean
// what it says; and the secret or the assertion file it needs is checked when built.

function withAuth(provider: Record<string, unknown>): ConfigResult {
  return parseConfigText(
    JSON.stringify({
      server: { listen: '127.0.0.1:0' },
      providers: { az: { type: 'azure_openai', base_url: 'https://az.example', api_version: '2024-10-21', ...provider } },
      routing: { routes: { m: { candidates: [{ provider: 'az' }] } } },
    }),
  );
}

function problems(result: ConfigResult): string[] {
  assert.equal(result.ok, false, 'expected the config to be refused');
  return (result as Extract<ConfigResult, { ok: false }>).issues.map(formatIssue);
}

const entra = { type: 'entra', tenant_id: 'contoso.onmicrosoft.com', client_id: '00000000-0000-0000-0000-000000000001' };

describe('providers.<name>.auth (Entra ID)', () => {
  it('is accepted on azure_openai, with the public cloud as the default authority', () => {
    const r = withAuth({ auth: { ...entra, client_secret: { env: 'AZ_SECRET' } } });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal((r.config.providers.az as ProviderConfigOf<'azure_openai'>).auth?.authority_host, 'https://login.microsoftonline.com');
  });

  it('refuses an http authority_host, or one with a path', () => {
    assert.match(
      problems(withAuth({ auth: { ...entra, authority_host: 'http://login.example' } })).join('\n'),
      /providers\.az\.auth\.authority_host: .*https/,
    );
    assert.match(
      problems(withAuth({ auth: { ...entra, authority_host: 'https://login.example/tenant' } })).join('\n'),
      /providers\.az\.auth\.authority_host: .*host only/,
    );
  });

  it('refuses a literal client_secret: it must be {env} or {file}', () => {
    assert.match(
      problems(withAuth({ auth: { ...entra, client_secret: 'hunter2-literal' } })).join('\n'),
      /providers\.az\.auth\.client_secret/,
    );
  });

  it('refuses auth on any other provider type, and auth together with api_key', () => {
    const onOpenai = parseConfigText(
      JSON.stringify({
        server: { listen: '127.0.0.1:0' },
        providers: { oai: { type: 'openai', base_url: 'https://api.example/v1', auth: entra } },
        routing: { routes: { m: { candidates: [{ provider: 'oai' }] } } },
      }),
    );
    assert.match(problems(onOpenai).join('\n'), /providers\.oai\.auth: unknown key for type openai; it is a key of type azure_openai/);
    assert.match(
      problems(withAuth({ api_key: { env: 'K' }, auth: entra })).join('\n'),
      /providers\.az\.auth: cannot be set together with api_key/,
    );
  });

  it('when built: an unset client_secret reference, or no secret and no AZURE_FEDERATED_TOKEN_FILE, is an issue with its path', () => {
    const pools = new PoolRegistry();
    const build = (auth: object, env: NodeJS.ProcessEnv) => {
      const parsed = withAuth({ auth });
      assert.ok(parsed.ok);
      const built = buildGeneration({ config: parsed.config, sourceHash: 'x', number: 1, env, poolFor: (s) => pools.acquire(s) });
      return built.ok ? [] : built.issues.map((i) => `${i.path}: ${i.message}`);
    };
    assert.deepEqual(build({ ...entra, client_secret: { env: 'AZ_SECRET' } }, {}), [
      'providers.az.auth.client_secret: environment variable AZ_SECRET is not set',
    ]);
    assert.match(build(entra, {}).join('\n'), /providers\.az\.auth: has no client_secret, and AZURE_FEDERATED_TOKEN_FILE/);
    assert.deepEqual(build(entra, { AZURE_FEDERATED_TOKEN_FILE: '/var/run/secrets/azure/tokens/azure-identity-token' }), []);
  });
});
