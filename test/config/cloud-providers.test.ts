import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ConfigResult, crossReferenceIssues, formatIssue, parseConfigText } from '../../src/config/index.js';
import { build, problems } from '../support/config-check.js';

// Types bedrock and vertex in the config: what each needs, what only it may carry, the
// addresses they default to, and what is checked when a generation is built (the secrets,
// the key file, the web identity's environment), each refusal naming its path.

function parse(providers: Record<string, unknown>, candidates: unknown[] = [{ provider: Object.keys(providers)[0] }]): ConfigResult {
  return parseConfigText(JSON.stringify({ server: { listen: '127.0.0.1:0' }, providers, routing: { routes: { m: { candidates } } } }));
}

const keys = { access_key_id: { env: 'AK' }, secret_access_key: { env: 'SK' } };

describe('type: bedrock', () => {
  it('needs a region and aws; defaults to the region Bedrock Runtime endpoint; its identity names the region', () => {
    assert.deepEqual(problems(parse({ b: { type: 'bedrock' } })).sort(), [
      'providers.b.aws: required for type: bedrock',
      'providers.b.region: required for type: bedrock',
    ]);
    const { gen } = build(parse({ b: { type: 'bedrock', region: 'eu-central-1', aws: keys } }), { AK: 'AKID', SK: 'secret' });
    const p = gen?.providers.b;
    assert.equal(p?.baseUrl, 'https://bedrock-runtime.eu-central-1.amazonaws.com');
    assert.equal(p?.identity, 'bedrock https://bedrock-runtime.eu-central-1.amazonaws.com eu-central-1');
    assert.equal(p?.protocol, 'bedrock');
    // Two regions behind one proxy are two providers to the breakers and the pools.
    const two = build(
      parse({
        east: { type: 'bedrock', region: 'us-east-1', base_url: 'http://127.0.0.1:9/', aws: keys },
        west: { type: 'bedrock', region: 'us-west-2', base_url: 'http://127.0.0.1:9/', aws: keys },
      }),
      { AK: 'AKID', SK: 'secret' },
    );
    assert.notEqual(two.gen?.providers.east?.identity, two.gen?.providers.west?.identity);
  });

  it('refuses a malformed region, an api_key, keys with web_identity, half a key pair, and aws on another type', () => {
    assert.match(
      problems(parse({ b: { type: 'bedrock', region: 'Virginia', aws: keys } })).join('\n'),
      /providers\.b\.region: must be an AWS region/,
    );
    assert.match(
      problems(parse({ b: { type: 'bedrock', region: 'us-east-1', aws: keys, api_key: { env: 'K' } } })).join('\n'),
      /providers\.b\.api_key: unknown key for type bedrock \(it authenticates with aws\); it is a key of type openai, azure_openai, anthropic, gemini, mcp or a2a/,
    );
    assert.match(
      problems(parse({ b: { type: 'bedrock', region: 'us-east-1', aws: { ...keys, web_identity: true } } })).join('\n'),
      /providers\.b\.aws\.web_identity: cannot be set together with access keys/,
    );
    assert.match(
      problems(parse({ b: { type: 'bedrock', region: 'us-east-1', aws: { access_key_id: { env: 'AK' } } } })).join('\n'),
      /providers\.b\.aws\.secret_access_key: required \(or web_identity: true\)/,
    );
    assert.match(
      problems(parse({ b: { type: 'bedrock', region: 'us-east-1', aws: { ...keys, sts_endpoint: 'http://127.0.0.1:1' } } })).join('\n'),
      /providers\.b\.aws\.sts_endpoint: only applies with web_identity: true/,
    );
    // Every type has a free-text region (where it runs); bedrock's alone is an AWS region, checked as one.
    assert.equal(parse({ o: { type: 'openai', base_url: 'http://x/v1', region: 'Frankfurt', zones: ['eu'] } }).ok, true);
    assert.match(
      problems(parse({ o: { type: 'openai', base_url: 'http://x/v1', aws: keys } })).join('\n'),
      /providers\.o\.aws: unknown key for type openai; it is a key of type bedrock/,
    );
  });

  it('when built: an unset key reference is an issue with its path, and so is a web identity without the IRSA environment', () => {
    assert.deepEqual(build(parse({ b: { type: 'bedrock', region: 'us-east-1', aws: keys } }), { AK: 'AKID' }).issues, [
      'providers.b.aws.secret_access_key: environment variable SK is not set',
    ]);
    const irsa = parse({ b: { type: 'bedrock', region: 'us-east-1', aws: { web_identity: true } } });
    assert.match(build(irsa).issues.join('\n'), /providers\.b\.aws\.web_identity: needs AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN/);
    const ok = build(irsa, {
      AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/eks.amazonaws.com/serviceaccount/token',
      AWS_ROLE_ARN: 'arn:aws:iam::1:role/r',
    });
    assert.deepEqual(ok.issues, []);
    assert.equal(ok.gen?.providers.b?.signer?.keys.source, 'aws:web_identity arn:aws:iam::1:role/r');
  });

  it('validate finds an unset aws key reference too (the cross-check)', () => {
    const doc = { providers: { b: { type: 'bedrock', region: 'us-east-1', aws: keys } }, routing: { routes: {} } };
    assert.deepEqual(crossReferenceIssues(doc, { AK: 'x' }).map(formatIssue), [
      'providers.b.aws.secret_access_key: environment variable SK is not set',
    ]);
  });
});

describe('type: vertex', () => {
  let dir: string;
  let keyFile: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sy-vertex-'));
    keyFile = join(dir, 'sa.json');
    writeFileSync(
      keyFile,
      JSON.stringify({
        type: 'service_account',
        client_email: 'gw@p.iam.gserviceaccount.com',
        private_key: '-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----\n',
      }),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('needs a project, a location and gcp; defaults to the location endpoint (global: the global one)', () => {
    assert.deepEqual(problems(parse({ v: { type: 'vertex' } })).sort(), [
      'providers.v.gcp: required for type: vertex',
      'providers.v.location: required for type: vertex',
      'providers.v.project: required for type: vertex',
    ]);
    const regional = build(
      parse({ v: { type: 'vertex', project: 'my-project', location: 'europe-west4', gcp: { metadata_server: true } } }),
    );
    assert.equal(regional.gen?.providers.v?.baseUrl, 'https://europe-west4-aiplatform.googleapis.com');
    assert.equal(regional.gen?.providers.v?.identity, 'vertex https://europe-west4-aiplatform.googleapis.com my-project/europe-west4');
    const global = build(parse({ v: { type: 'vertex', project: 'my-project', location: 'global', gcp: { metadata_server: true } } }));
    assert.equal(global.gen?.providers.v?.baseUrl, 'https://aiplatform.googleapis.com');
  });

  it('a candidate speaks its publisher: anthropic for claude-*, google otherwise, unless the route says', () => {
    const v = { type: 'vertex', project: 'my-project', location: 'us-east5', gcp: { metadata_server: true } };
    const { gen } = build(
      parse({ v }, [
        { provider: 'v', model: 'claude-sonnet-4-5@20250929' },
        { provider: 'v', model: 'gemini-2.5-pro' },
        { provider: 'v', model: 'my-tuned-claude', publisher: 'google' },
      ]),
    );
    assert.deepEqual(
      gen?.routes.m?.groups[0]?.candidates.map((c) => c.protocol),
      ['anthropic', 'gemini', 'gemini'],
    );
    assert.match(
      crossReferenceIssues({
        providers: { o: { type: 'openai' } },
        routing: { routes: { m: { candidates: [{ provider: 'o', publisher: 'google' }] } } },
      })
        .map(formatIssue)
        .join('\n'),
      /routing\.routes\.m\.candidates\[0\]\.publisher: only applies to a vertex provider/,
    );
  });

  it('gcp needs exactly one of service_account and metadata_server; token_url goes with service_account', () => {
    const base = { type: 'vertex', project: 'my-project', location: 'us-central1' };
    assert.match(problems(parse({ v: { ...base, gcp: {} } })).join('\n'), /providers\.v\.gcp: needs exactly one of service_account/);
    assert.match(
      problems(parse({ v: { ...base, gcp: { metadata_server: true, token_url: 'http://127.0.0.1:1/token' } } })).join('\n'),
      /providers\.v\.gcp\.token_url: only applies with service_account/,
    );
    assert.match(
      problems(parse({ v: { ...base, project: 'P!', gcp: { metadata_server: true } } })).join('\n'),
      /providers\.v\.project: must be a Google Cloud project id/,
    );
  });

  it('when built: the service account key file is read, and one that cannot be read or is not a key is an issue that never quotes it', () => {
    const base = { type: 'vertex', project: 'my-project', location: 'us-central1' };
    const ok = build(parse({ v: { ...base, gcp: { service_account: { file: keyFile } } } }));
    assert.deepEqual(ok.issues, []);
    assert.equal(ok.gen?.providers.v?.bearer?.source, `gcp:service_account gw@p.iam.gserviceaccount.com (file:${keyFile})`);
    const missing = build(parse({ v: { ...base, gcp: { service_account: { file: join(dir, 'none.json') } } } }));
    assert.match(missing.issues.join('\n'), /providers\.v\.gcp\.service_account\.file: service account key file .*none\.json/);
    const notJson = join(dir, 'bad.json');
    writeFileSync(notJson, '{"private_key": "-----BEGIN PRIVATE KEY----- secret-bytes');
    const bad = build(parse({ v: { ...base, gcp: { service_account: { file: notJson } } } }));
    assert.match(bad.issues.join('\n'), /is not a JSON service account key/);
    assert.ok(!bad.issues.join('\n').includes('secret-bytes'));
  });
});
