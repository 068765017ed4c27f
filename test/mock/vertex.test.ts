import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { ApiError, GoogleGenAI, Type } from '@google/genai';
import { GoogleAuth, JWT } from 'google-auth-library';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { tokensFromMock } from '../support/gcp-token-route.js';

// The mock's Vertex AI, with Google's and Anthropic's own SDKs as its clients, each getting
// its token the way it would from Google: a service account's signed JWT traded at the
// mock's token endpoint, or the metadata server. If the SDKs read every answer (and error)
// as they read Vertex's, the mock is a faithful stand-in for the gateway's Vertex tests.

const ROOT = resolve(import.meta.dirname, '../..');
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const ACCOUNT = 'switchyard-test@p1.iam.gserviceaccount.com';
const PROJECT = 'p1';
const LOCATION = 'us-central1';
/** What @anthropic-ai/vertex-sdk 1.1.4 puts in the body: the base SDK's `anthropic-version` header. */
const ANTHROPIC_VERSION = '2026-10-21';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const publicPem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;

let mock: MockProvider;
let ai: GoogleGenAI;
let claude: AnthropicVertex;

/**
 * A service account client whose token requests reach the mock. google-auth-library 10
 * posts a service account's JWT to Google's fixed token URL (a key file's `token_uri` is not
 * read), so the test sends that one URL to the mock instead, as a proxy would.
 */
function serviceAccount(origin: string, key = privatePem): JWT {
  return tokensFromMock(new JWT({ email: ACCOUNT, key, scopes: [SCOPE] }), origin);
}

function genai(origin: string, client = serviceAccount(origin)): GoogleGenAI {
  return new GoogleGenAI({
    vertexai: true,
    project: PROJECT,
    location: LOCATION,
    httpOptions: { baseUrl: origin },
    googleAuthOptions: { authClient: client },
  });
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** A service account's assertion, made by hand so each claim can be got wrong on purpose. */
function assertion(claims: Record<string, unknown> = {}, key: Parameters<typeof sign>[2] = privateKey): string {
  const now = Math.floor(Date.now() / 1000);
  const body = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ iss: ACCOUNT, scope: SCOPE, aud: 'https://oauth2.googleapis.com/token', iat: now, exp: now + 3600, ...claims })}`;
  return `${body}.${sign('RSA-SHA256', Buffer.from(body), key).toString('base64url')}`;
}

function postToken(origin: string, form: Record<string, string>): Promise<Response> {
  return fetch(`${origin}/token`, { method: 'POST', body: new URLSearchParams(form) });
}

async function tokenFrom(origin: string): Promise<{ access_token: string; expires_in: number; token_type: string }> {
  const res = await postToken(origin, { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: assertion() });
  assert.equal(res.status, 200);
  return (await res.json()) as { access_token: string; expires_in: number; token_type: string };
}

const geminiPath = `/v1beta1/projects/${PROJECT}/locations/${LOCATION}/publishers/google/models/gemini-2.5-flash:generateContent`;
const claudePath = `/v1/projects/${PROJECT}/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict`;
const hello = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });

function call(origin: string, path: string, body: string, token?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return fetch(`${origin}${path}`, { method: 'POST', headers, body });
}

before(async () => {
  mock = await startMockProvider({ name: 'vx', protocol: 'vertex', gcpPublicKeyPem: publicPem });
  ai = genai(mock.origin);
  claude = new AnthropicVertex({
    projectId: PROJECT,
    region: 'us-east5',
    baseURL: `${mock.origin}/v1`,
    googleAuth: new GoogleAuth({ authClient: serviceAccount(mock.origin) }),
    maxRetries: 0,
  });
});
after(() => mock.close());
beforeEach(() => mock.reset());

describe('Gemini on the mock Vertex AI, through @google/genai', () => {
  it('answers generateContent on v1beta1 with a bearer token the mock issued for the signed JWT', async () => {
    const res = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi there' });
    assert.equal(res.text, 'Hello from vx.');
    assert.equal(res.candidates?.[0]?.finishReason, 'STOP');
    const seen = mock.stats().recent.at(-1);
    assert.equal(seen?.path, geminiPath);
    assert.match(String(seen?.headers.authorization), /^Bearer ya29\.mock-/);
    assert.ok(mock.tokenStats().issuedForJwt <= 1, 'a cached token is reused, not re-issued per request');
  });

  it('calls a function when asked to use a tool', async () => {
    const res = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Use the tool for Oslo',
      config: {
        tools: [
          {
            functionDeclarations: [
              { name: 'get_weather', parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] } },
            ],
          },
        ],
      },
    });
    assert.equal(res.functionCalls?.[0]?.name, 'get_weather');
    assert.equal(typeof res.functionCalls?.[0]?.args?.city, 'string');
  });

  it('answers JSON of the responseSchema with responseMimeType application/json', async () => {
    const res = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Describe Oslo',
      config: {
        responseMimeType: 'application/json',
        responseSchema: {
          type: Type.OBJECT,
          properties: { city: { type: Type.STRING }, rank: { type: Type.INTEGER } },
          required: ['city', 'rank'],
        },
      },
    });
    const parsed = JSON.parse(res.text ?? '') as { city: unknown; rank: unknown };
    assert.equal(typeof parsed.city, 'string');
    assert.equal(typeof parsed.rank, 'number');
  });

  it('counts an inline image in the prompt tokens', async () => {
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    const res = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: [
        { role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: png.toString('base64') } }, { text: 'What is this?' }] },
      ],
    });
    assert.equal(res.text, 'Hello from vx.');
    assert.ok((res.usageMetadata?.promptTokenCount ?? 0) >= 258);
  });

  it('streams with generateContentStream (alt=sse), the whole usage in the last chunk', async () => {
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Hi' });
    let text = '';
    let last: Awaited<ReturnType<typeof ai.models.generateContent>> | undefined;
    for await (const chunk of stream) {
      text += chunk.text ?? '';
      last = chunk;
    }
    assert.equal(text, 'Hello from vx.');
    assert.ok((last?.usageMetadata?.candidatesTokenCount ?? 0) > 0);
    const seen = mock.stats().recent.at(-1);
    assert.match(seen?.path ?? '', /\/publishers\/google\/models\/gemini-2\.5-flash:streamGenerateContent$/);
  });

  it('answers a 429 fault as RESOURCE_EXHAUSTED, which the SDK raises with status 429', async () => {
    mock.addFault({ mode: 'status', status: 429, count: 1 });
    await assert.rejects(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' }), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 429);
      assert.match(err.message, /RESOURCE_EXHAUSTED/);
      return true;
    });
  });

  it('answers a 503 fault as UNAVAILABLE in Google shape', async () => {
    const { access_token } = await tokenFrom(mock.origin);
    mock.addFault({ mode: 'status', status: 503, count: 1 });
    const res = await call(mock.origin, geminiPath, hello, access_token);
    assert.equal(res.status, 503);
    assert.deepEqual(((await res.json()) as { error: { status: string } }).error.status, 'UNAVAILABLE');
  });

  it('serves a model named in full (projects/.../models/m) and a tuned model path', async () => {
    const full = `projects/${PROJECT}/locations/${LOCATION}/publishers/google/models/gemini-2.5-pro`;
    const res = await ai.models.generateContent({ model: full, contents: 'Hi' });
    assert.equal(res.text, 'Hello from vx.');
    assert.equal(mock.stats().recent.at(-1)?.path, `/v1beta1/${full}:generateContent`);
    const { access_token } = await tokenFrom(mock.origin);
    const tuned = await call(
      mock.origin,
      `/v1/projects/${PROJECT}/locations/${LOCATION}/endpoints/1234:generateContent`,
      hello,
      access_token,
    );
    assert.equal(tuned.status, 200);
  });
});

describe('Claude on the mock Vertex AI, through @anthropic-ai/vertex-sdk', () => {
  it('answers rawPredict with the model from the path; the body had no model and the SDK anthropic_version', async () => {
    const msg = await claude.messages.create({
      model: 'claude-sonnet-4@20250514',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello from vx.' }]);
    assert.equal(msg.model, 'claude-sonnet-4@20250514');
    assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0);
    const seen = mock.stats().recent.at(-1);
    assert.equal(seen?.path, claudePath);
    const body = JSON.parse(seen?.body ?? '{}') as Record<string, unknown>;
    assert.equal('model' in body, false);
    assert.equal(body.anthropic_version, ANTHROPIC_VERSION);
  });

  it('streams with streamRawPredict, and reports cache_control usage', async () => {
    const system = [{ type: 'text' as const, text: 'x'.repeat(4000), cache_control: { type: 'ephemeral' as const } }];
    const first = await claude.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      system,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    assert.ok((first.usage.cache_creation_input_tokens ?? 0) > 0);
    const stream = claude.messages.stream({
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      system,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    let text = '';
    stream.on('text', (t) => {
      text += t;
    });
    const final = await stream.finalMessage();
    assert.equal(text, 'Hello from vx.');
    assert.ok((final.usage.cache_read_input_tokens ?? 0) > 0);
    assert.match(mock.stats().recent.at(-1)?.path ?? '', /\/publishers\/anthropic\/models\/claude-haiku-4-5:streamRawPredict$/);
  });

  it('uses a tool when asked to', async () => {
    const msg = await claude.messages.create({
      model: 'claude-sonnet-4@20250514',
      max_tokens: 64,
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
      messages: [{ role: 'user', content: 'Use the tool for Oslo' }],
    });
    assert.equal(msg.stop_reason, 'tool_use');
    const block = msg.content[0];
    assert.ok(block?.type === 'tool_use' && block.name === 'get_weather');
  });

  it('works with GoogleAuth reading a service account key file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vertex-sa-'));
    const keyFile = join(dir, 'sa.json');
    const account = { type: 'service_account', project_id: PROJECT, private_key_id: 'k1', private_key: privatePem, client_email: ACCOUNT };
    writeFileSync(keyFile, JSON.stringify({ ...account, token_uri: `${mock.origin}/token` }));
    try {
      const auth = new GoogleAuth({ keyFile, scopes: [SCOPE] });
      // The key file's token_uri is not read (see serviceAccount), so the cached client's requests are sent to the mock.
      const client = await auth.getClient();
      client.transporter.interceptors.request.add({
        resolved: async (opts) => {
          const url = String(opts.url);
          if (url.startsWith('https://oauth2.googleapis.com/'))
            opts.url = new URL(url.replace('https://oauth2.googleapis.com', mock.origin));
          return opts;
        },
      });
      const vertex = new AnthropicVertex({ region: 'europe-west1', baseURL: `${mock.origin}/v1`, googleAuth: auth, maxRetries: 0 });
      const msg = await vertex.messages.create({ model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] });
      assert.equal(msg.model, 'claude-haiku-4-5');
      // The SDK took the project from the key file.
      assert.match(mock.stats().recent.at(-1)?.path ?? '', /^\/v1\/projects\/p1\/locations\/europe-west1\//);
      assert.equal(mock.tokenStats().issuedForJwt, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts tokens at count-tokens:rawPredict', async () => {
    const res = await claude.messages.countTokens({ model: 'claude-sonnet-4@20250514', messages: [{ role: 'user', content: 'Hi' }] });
    assert.ok(res.input_tokens > 0);
  });

  it('answers a status fault Anthropic-shaped, which the SDK raises with that status', async () => {
    mock.addFault({ mode: 'status', status: 529, count: 1 });
    await assert.rejects(
      claude.messages.create({ model: 'claude-sonnet-4@20250514', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }),
      (err: { status?: number; error?: { type?: string; error?: { type?: string } } }) => {
        assert.equal(err.status, 529);
        assert.equal(err.error?.type, 'error');
        assert.equal(err.error?.error?.type, 'overloaded_error');
        return true;
      },
    );
  });

  it('refuses a body naming a model, or without anthropic_version, with 400', async () => {
    const { access_token } = await tokenFrom(mock.origin);
    const base = { max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
    const withModel = await call(
      mock.origin,
      claudePath,
      JSON.stringify({ ...base, model: 'x', anthropic_version: 'vertex-2023-10-16' }),
      access_token,
    );
    assert.equal(withModel.status, 400);
    assert.equal(((await withModel.json()) as { error: { type: string } }).error.type, 'invalid_request_error');
    const noVersion = await call(mock.origin, claudePath, JSON.stringify(base), access_token);
    assert.equal(noVersion.status, 400);
    assert.match(((await noVersion.json()) as { error: { message: string } }).error.message, /anthropic_version/);
    const badVersion = await call(mock.origin, claudePath, JSON.stringify({ ...base, anthropic_version: 'latest' }), access_token);
    assert.equal(badVersion.status, 400);
    const documented = await call(
      mock.origin,
      claudePath,
      JSON.stringify({ ...base, anthropic_version: 'vertex-2023-10-16' }),
      access_token,
    );
    assert.equal(documented.status, 200);
  });
});

describe('the tokens the mock Vertex AI issues and checks', () => {
  it('refuses a missing, unknown or expired bearer with 401 UNAUTHENTICATED, before any fault', async () => {
    mock.addFault({ mode: 'status', status: 500 });
    for (const token of [undefined, 'ya29.not-issued-here']) {
      const res = await call(mock.origin, geminiPath, hello, token);
      assert.equal(res.status, 401);
      const body = (await res.json()) as { error: { code: number; status: string; message: string } };
      assert.equal(body.error.status, 'UNAUTHENTICATED');
      assert.match(body.error.message, /authentication credential/);
    }
    mock.clearFaults();
    const expiring = await startMockProvider({ name: 'ttl0', protocol: 'vertex', tokenTtlS: 0 });
    try {
      const { access_token, expires_in } = await tokenFrom(expiring.origin);
      assert.equal(expires_in, 0);
      const res = await call(expiring.origin, claudePath, '{}', access_token);
      assert.equal(res.status, 401);
      const body = (await res.json()) as { error: { status: string; details: { reason: string; metadata: { method: string } }[] } };
      assert.equal(body.error.details[0]?.reason, 'ACCESS_TOKEN_EXPIRED');
      assert.equal(body.error.details[0]?.metadata.method, 'google.cloud.aiplatform.v1.PredictionService.RawPredict');
    } finally {
      await expiring.close();
    }
  });

  it('refuses a JWT with a bad signature, a wrong aud, a stale exp or no cloud-platform scope', async () => {
    const grant = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, string][] = [
      [assertion({}, stranger), 'invalid_grant'],
      [assertion({ aud: 'https://example.com/token' }), 'invalid_grant'],
      [assertion({ iat: now - 7200, exp: now - 3600 }), 'invalid_grant'],
      [assertion({ scope: 'https://www.googleapis.com/auth/userinfo.email' }), 'invalid_scope'],
      ['not.a-jwt', 'invalid_grant'],
    ];
    for (const [jwt, error] of cases) {
      const res = await postToken(mock.origin, { grant_type: grant, assertion: jwt });
      assert.equal(res.status, 400);
      const body = (await res.json()) as { error: string; error_description: string };
      assert.equal(body.error, error, body.error_description);
    }
    const wrongGrant = await postToken(mock.origin, { grant_type: 'client_credentials', assertion: assertion() });
    assert.equal(((await wrongGrant.json()) as { error: string }).error, 'unsupported_grant_type');
    // aud may also be the URL the JWT was posted to.
    const local = await postToken(mock.origin, { grant_type: grant, assertion: assertion({ aud: `${mock.origin}/token` }) });
    assert.equal(local.status, 200);
    assert.equal(mock.tokenStats().refused, cases.length + 1);
  });

  it('the SDK signing with another key than the mock knows gets invalid_grant', async () => {
    const other = stranger.export({ type: 'pkcs8', format: 'pem' }) as string;
    await assert.rejects(
      genai(mock.origin, serviceAccount(mock.origin, other)).models.generateContent({ model: 'm', contents: 'hi' }),
      /invalid_grant/,
    );
  });

  it('honours tokenTtlS: a short-lived token makes google-auth-library fetch a fresh one for each request', async () => {
    const short = await startMockProvider({ name: 'ttl', protocol: 'vertex', tokenTtlS: 120 });
    try {
      const { expires_in, token_type } = await tokenFrom(short.origin);
      assert.equal(expires_in, 120);
      assert.equal(token_type, 'Bearer');
      short.reset();
      // google-auth-library refreshes a token within five minutes of its expiry, so each call refreshes.
      const client = genai(short.origin);
      for (let i = 0; i < 3; i++) await client.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
      assert.equal(short.tokenStats().issuedForJwt, 3);
      const stats = (await (await fetch(`${short.origin}/__mock/tokens`)).json()) as { issued: number };
      assert.equal(stats.issued, 3);
    } finally {
      await short.close();
    }
  });

  it('token faults make the token endpoint refuse until cleared; model requests never take them', async () => {
    const faults = `${mock.origin}/__mock/token-faults`;
    assert.equal((await fetch(faults, { method: 'POST', body: JSON.stringify({ mode: 'status', status: 503 }) })).status, 200);
    // google-auth-library retries a token request on a 5xx (three times), so a down endpoint is a standing fault.
    const client = genai(mock.origin);
    await assert.rejects(client.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }), /internal_failure/);
    assert.ok(mock.tokenStats().refused >= 2);
    assert.equal(mock.tokenStats().issued, 0);
    assert.equal((await fetch(faults, { method: 'DELETE' })).status, 200);
    const res = await client.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
    assert.equal(res.text, 'Hello from vx.');

    // A refusal that is not retried: one 400 fails the SDK's call at once.
    await fetch(faults, { method: 'POST', body: JSON.stringify({ mode: 'status', status: 400, count: 1 }) });
    await assert.rejects(genai(mock.origin).models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }), /invalid_grant/);
    assert.deepEqual(((await (await fetch(faults)).json()) as { faults: unknown[] }).faults, []);
  });
});

describe('the mock metadata server', () => {
  it('refuses a token request without Metadata-Flavor: Google with 403', async () => {
    const res = await fetch(`${mock.origin}/computeMetadata/v1/instance/service-accounts/default/token`);
    assert.equal(res.status, 403);
    const ok = await fetch(`${mock.origin}/computeMetadata/v1/instance/service-accounts/default/token`, {
      headers: { 'metadata-flavor': 'Google' },
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('metadata-flavor'), 'Google');
    const body = (await ok.json()) as { access_token: string; expires_in: number; token_type: string };
    assert.equal(body.token_type, 'Bearer');
    assert.equal((await call(mock.origin, geminiPath, hello, body.access_token)).status, 200);
  });

  it('gives google-auth-library (GCE_METADATA_HOST) a token @google/genai then uses on the Vertex path', async () => {
    // gcp-metadata reads GCE_METADATA_HOST and caches what it detects per process: a child process gets a clean one.
    const home = mkdtempSync(join(tmpdir(), 'vertex-md-'));
    const script = `
      import { GoogleGenAI } from '@google/genai';
      const ai = new GoogleGenAI({ vertexai: true, project: 'p1', location: 'us-central1', httpOptions: { baseUrl: ${JSON.stringify(mock.origin)} } });
      const res = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
      process.stdout.write(JSON.stringify({ text: res.text }));`;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: home,
      GCE_METADATA_HOST: mock.origin.slice('http://'.length),
    };
    try {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      const code = await new Promise<number | null>((res) => child.once('exit', res));
      clearTimeout(killer);
      assert.equal(code, 0, err);
      assert.deepEqual(JSON.parse(out), { text: 'Hello from vx.' });
      assert.equal(mock.tokenStats().issuedByMetadata, 1);
      const paths = mock.stats().recent.map((r) => r.path);
      assert.ok(paths.includes('/computeMetadata/v1/instance'), paths.join('\n'));
      assert.ok(paths.includes(geminiPath), paths.join('\n'));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('the mock Vertex AI otherwise', () => {
  it('answers an unknown path 404 NOT_FOUND in Google shape', async () => {
    const res = await call(mock.origin, '/v1/projects/p/locations/l/publishers/google/models/m:predictLater', hello);
    assert.equal(res.status, 401, 'the credential is checked first');
    const { access_token } = await tokenFrom(mock.origin);
    for (const path of ['/v1/nothing', '/v1/projects/p/locations/l/publishers/google/models/m:predictLater']) {
      const notFound = await call(mock.origin, path, hello, access_token);
      assert.equal(notFound.status, 404);
      assert.equal(((await notFound.json()) as { error: { status: string } }).error.status, 'NOT_FOUND');
    }
  });

  it('the CLI takes --protocol vertex, --token-ttl-s and --gcp-public-key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vertex-cli-'));
    const keyFile = join(dir, 'sa.pub.pem');
    writeFileSync(keyFile, publicPem);
    const args = ['--import', 'tsx', join(ROOT, 'src/cli.ts'), 'mock-provider', '--port', '0', '--name', 'c'];
    const child = spawn(process.execPath, [...args, '--protocol', 'vertex', '--token-ttl-s', '7', '--gcp-public-key', keyFile], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    try {
      const origin = await new Promise<string>((res, rej) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          // What a vertex provider's base_url takes: the bare origin, never .../v1.
          const m = /listening on (http:\/\/127\.0\.0\.1:\d+) \(base_url for a vertex provider/.exec(out);
          if (m !== null) res(m[1] as string);
        });
        void exited.then((code) => rej(new Error(`mock-provider exited (${code}) before listening`)));
      });
      const { expires_in } = await tokenFrom(origin);
      assert.equal(expires_in, 7);
      const forged = await postToken(origin, {
        grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
        assertion: assertion({}, stranger),
      });
      assert.equal(forged.status, 400);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      clearTimeout(killer);
      rmSync(dir, { recursive: true, force: true });
      assert.equal(code, 0);
    }
  });
});
