import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { GoogleGenAI } from '@google/genai';
import { GoogleAuth, type JWT } from 'google-auth-library';
import OpenAI from 'openai';
import type { GatewayProcess } from '../support/gateway-process.js';
import { startGatewayProcess } from '../support/gateway-process.js';
import { tokensFromMock } from '../support/gcp-token-route.js';

// docs/mock-provider.md's recipe, run as written: `mock-provider --protocol vertex
// --write-service-account FILE` as a real process, the page's gateway config (its ports and
// path swapped for this run's) as a real gateway process, and the written file in Google's
// own client library and SDKs. If all of them take the file, it is a service account key.

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/cli.js');
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

interface MockProcess {
  readonly child: ChildProcess;
  readonly out: string;
  readonly exited: Promise<number | null>;
}

/** Starts the mock CLI and resolves once it has printed both lines (listening, then the key). */
async function startMock(args: string[]): Promise<MockProcess & { origin: string; printed: string }> {
  const child = spawn(process.execPath, [CLI, 'mock-provider', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  let out = '';
  const printed = await new Promise<string>((res, rej) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('service account key')) res(out);
    });
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then((code) => rej(new Error(`mock-provider exited (${code}) before it was ready:\n${out}`)));
  });
  const origin = /listening on (http:\/\/\S+) /.exec(printed)?.[1] ?? '';
  return { child, out, exited, origin, printed };
}

async function stopMock(mock: MockProcess | undefined): Promise<void> {
  if (mock === undefined) return;
  if (mock.child.exitCode === null) mock.child.kill('SIGTERM');
  const timer = setTimeout(() => mock.child.kill('SIGKILL'), 15_000);
  assert.equal(await mock.exited, 0, 'mock-provider exits 0 on SIGTERM');
  clearTimeout(timer);
}

/** The page's fenced block of `lang` that follows `heading`. */
function recipeBlock(heading: string, lang: string): string {
  const page = readFileSync(join(ROOT, 'docs/mock-provider.md'), 'utf8');
  const from = page.indexOf(heading);
  assert.ok(from >= 0, `docs/mock-provider.md has "${heading}"`);
  const m = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(page.slice(from));
  assert.ok(m !== null, `a ${lang} block follows "${heading}"`);
  return m[1] as string;
}

const HEADING = "### A gateway's vertex provider on the mock";

let dir: string;
let file: string;
let mock: (MockProcess & { origin: string; printed: string }) | undefined;
let gw: GatewayProcess | undefined;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sy-vertex-sa-'));
  file = join(dir, 'vertex-sa.json');
  mock = await startMock(['--name', 'vx', '--protocol', 'vertex', '--write-service-account', file]);
});

after(async () => {
  await gw?.stop();
  await stopMock(mock);
  rmSync(dir, { recursive: true, force: true });
});

describe('mock-provider --protocol vertex --write-service-account FILE', () => {
  it('prints the bare origin as base_url, with the token URL, and writes a 0600 service account key file', () => {
    const m = mock as NonNullable<typeof mock>;
    assert.match(m.origin, /^http:\/\/127\.0\.0\.1:\d+$/, 'the base_url has no /v1: the vertex client adds its own path');
    assert.ok(m.printed.includes(`(base_url for a vertex provider; gcp.token_url: ${m.origin}/token)`), m.printed);
    assert.ok(m.printed.includes(`service account key written: ${file}`), m.printed);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const key = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    assert.equal(key.type, 'service_account');
    assert.match(key.client_email ?? '', /@.+\.iam\.gserviceaccount\.com$/);
    assert.match(key.private_key ?? '', /^-----BEGIN PRIVATE KEY-----/);
    assert.equal(key.token_uri, `${m.origin}/token`);
  });

  it("lets the page's gateway config authenticate its vertex provider, for Gemini and Claude", async () => {
    const m = mock as NonNullable<typeof mock>;
    const config = recipeBlock(HEADING, 'yaml')
      .replaceAll('http://127.0.0.1:9005', m.origin)
      .replace('./vertex-sa.json', file)
      .replace('listen: 127.0.0.1:8080', 'listen: 127.0.0.1:0');
    gw = await startGatewayProcess(config, { dir });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10_000 });
    for (const model of ['gemini-2.5-flash', 'claude-sonnet-4-5']) {
      const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(r.choices[0]?.message.content, 'Hello from vx.', model);
    }
    const tokens = (await (await fetch(`${m.origin}/__mock/tokens`)).json()) as { issuedForJwt: number; refused: number };
    assert.ok(tokens.issuedForJwt >= 1, 'the gateway traded the file’s JWT for a token');
    assert.equal(tokens.refused, 0);
  });

  it('is a key google-auth-library reads, and @google/genai and @anthropic-ai/vertex-sdk authenticate with it', async () => {
    const m = mock as NonNullable<typeof mock>;
    // GoogleAuth reads the key file as it reads GOOGLE_APPLICATION_CREDENTIALS: a JWT client for its account.
    const jwt = async () => tokensFromMock((await new GoogleAuth({ keyFile: file, scopes: [SCOPE] }).getClient()) as JWT, m.origin);
    const ai = new GoogleGenAI({
      vertexai: true,
      project: 'p1',
      location: 'us-central1',
      httpOptions: { baseUrl: m.origin },
      googleAuthOptions: { authClient: await jwt() },
    });
    assert.equal((await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' })).text, 'Hello from vx.');
    const claude = new AnthropicVertex({
      projectId: 'p1',
      region: 'us-east5',
      baseURL: `${m.origin}/v1`,
      googleAuth: new GoogleAuth({ authClient: await jwt() }),
      maxRetries: 0,
    });
    const msg = await claude.messages.create({
      model: 'claude-sonnet-4@20250514',
      max_tokens: 32,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Hello from vx.' }]);
  });

  it("refuses a JWT signed by any other key: the file's key is the one verified", async () => {
    const m = mock as NonNullable<typeof mock>;
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: 'x@p1.iam.gserviceaccount.com',
      scope: SCOPE,
      aud: 'https://oauth2.googleapis.com/token',
      iat: now,
      exp: now + 600,
    };
    const body = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64(claims)}`;
    const assertion = `${body}.${sign('RSA-SHA256', Buffer.from(body), stranger).toString('base64url')}`;
    const res = await fetch(`${m.origin}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }),
    });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /Invalid JWT Signature/);
  });

  it('a restarted mock reads the file it wrote, unchanged, and accepts its JWTs again', async () => {
    const before = readFileSync(file, 'utf8');
    const again = await startMock(['--name', 'vx2', '--protocol', 'vertex', '--write-service-account', file]);
    try {
      assert.ok(again.printed.includes(`service account key read: ${file}`), again.printed);
      assert.equal(readFileSync(file, 'utf8'), before);
      const client = (await new GoogleAuth({ keyFile: file, scopes: [SCOPE] }).getClient()) as JWT;
      const token = await tokensFromMock(client, again.origin).getAccessToken();
      assert.match(token.token ?? '', /^ya29\.mock-/);
    } finally {
      await stopMock(again);
    }
  });

  it('is refused without --protocol vertex, and beside --gcp-public-key', async () => {
    for (const args of [
      ['--write-service-account', join(dir, 'x.json')],
      ['--protocol', 'vertex', '--write-service-account', join(dir, 'x.json'), '--gcp-public-key', file],
    ]) {
      const child = spawn(process.execPath, [CLI, 'mock-provider', '--port', '0', '--name', 'x', ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      const code = await new Promise<number | null>((res) => child.once('exit', res));
      assert.equal(code, 1, err);
      assert.match(err, /--write-service-account/);
    }
  });
});
