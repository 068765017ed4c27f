import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import type { ReloadResult } from '../../src/server/index.js';
import { startGateway } from '../../src/server/index.js';
import { createLogger } from '../../src/telemetry/index.js';
import type { AdminStatus } from '../support/admin.js';
import { adminReload, adminStatus } from '../support/admin.js';
import type { GatewayProcess } from '../support/gateway-process.js';
import { baseConfig, configText, runCli, startGatewayProcess } from '../support/gateway-process.js';
import type { Reply } from '../support/http.js';
import { chatBody, postChat } from '../support/http.js';
import { chatCount, metricValue, SseReader, scrapeMetrics, waitUntil } from '../support/observe.js';

// Live generations through real gateway processes and in-process mock providers: every
// reload trigger, the reload invariants (each describe below gives its number and states it), breakers
// keyed by identity, the admin API and the reload metrics. What served a request is read
// from its attribution headers, the mock's own x-mock-provider header and the access log.

let east: MockProvider;
let west: MockProvider;
let central: MockProvider;
/** Where a re-pointed `east` goes: a different base URL, so a different provider identity. */
let eastNew: MockProvider;

const cleanup: Array<() => Promise<unknown>> = [];

before(async () => {
  [east, west, central, eastNew] = await Promise.all([
    startMockProvider({ name: 'east' }),
    startMockProvider({ name: 'west' }),
    startMockProvider({ name: 'central' }),
    startMockProvider({ name: 'east-new' }),
  ]);
});

after(async () => {
  // Gateways first (they hold connections to the mocks), then the mocks.
  for (const close of cleanup.splice(0).reverse()) await close();
  await Promise.all([east, west, central, eastNew].map((m) => m?.close()));
});

async function startGw(config: object | string, options: Parameters<typeof startGatewayProcess>[1] = {}): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(config, options);
  cleanup.push(() => gw.stop());
  return gw;
}

function resetMocks(): void {
  for (const m of [east, west, central, eastNew]) m.reset();
}

function assertServed(r: Reply, provider: string, generation?: number): void {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-switchyard-provider'), provider, r.text);
  if (generation !== undefined) assert.equal(r.headers.get('x-switchyard-generation'), String(generation));
}

function generationOf(r: Reply | Response): number {
  return Number(r.headers.get('x-switchyard-generation'));
}

async function servingGeneration(gw: GatewayProcess, token?: string): Promise<number> {
  const s = await adminStatus(gw.adminUrl!, token);
  assert.equal(s.status, 200, s.text);
  return s.body.generation!.number;
}

async function reloadApplied(gw: GatewayProcess, config: object | string): Promise<ReloadResult> {
  gw.writeConfig(config);
  const r = await adminReload(gw.adminUrl!);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.result, 'applied', r.text);
  return r.body;
}

function accessLine(gw: GatewayProcess, requestId: string): Promise<Record<string, unknown>> {
  return gw.waitForLog((l) => l.msg === 'request' && l.request_id === requestId);
}

function reloadLines(gw: GatewayProcess, trigger: string): Array<Record<string, unknown>> {
  return gw.logs().filter((l) => l.msg === 'reload' && l.trigger === trigger);
}

function formatIssue(issue: { path: string; message: string }): string {
  return issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`;
}

function costOf(price: { input_usd_per_mtok: number; output_usd_per_mtok: number }, line: Record<string, unknown>): number {
  return (line.input_tokens as number) * price.input_usd_per_mtok + (line.output_tokens as number) * price.output_usd_per_mtok;
}

function providerIn(status: AdminStatus, name: string) {
  return status.providers.find((p) => p.name === name);
}

// ---------------------------------------------------------------------------------------

describe('Invariant 2 — validate, then swap', () => {
  let gw: GatewayProcess;
  let goodText: string;
  /** Where every bad input would send model m if it were applied even in part. */
  const next = (): Record<string, any> =>
    baseConfig({ east: east.baseUrl, west: west.baseUrl }, { m: { candidates: [{ provider: 'west' }] } }) as Record<string, any>;

  interface BadInput {
    readonly name: string;
    write(configPath: string): void;
    readonly path: string;
    readonly message: RegExp;
    /** A value that must never be echoed anywhere. */
    readonly secret?: string;
    readonly trigger?: 'sighup';
  }

  const literal = 'sk-literal-do-not-echo-4242';
  const unsetVar = 'SWITCHYARD_TEST_SURELY_UNSET_KEY';
  const badInputs: BadInput[] = [
    {
      name: 'YAML that does not parse',
      write: (p) => writeFileSync(p, 'server:\n  listen: "127.0.0.1:0"\nproviders: [unclosed, {\n'),
      path: '',
      message: /YAML\/JSON syntax error at line \d+/,
    },
    {
      name: 'a schema violation (a base_url that is not a URL)',
      write: (p) => {
        const c = next();
        c.providers.west.base_url = 'not a url';
        writeFileSync(p, configText(c));
      },
      path: 'providers.west.base_url',
      message: /invalid URL/,
      trigger: 'sighup',
    },
    {
      name: 'a route to an unknown provider',
      write: (p) => {
        const c = next();
        c.routing.routes.m.candidates = [{ provider: 'west' }, { provider: 'nowhere' }];
        writeFileSync(p, configText(c));
      },
      path: 'routing.routes.m.candidates[1].provider',
      message: /unknown provider "nowhere"/,
    },
    {
      name: 'a literal secret string for api_key',
      write: (p) => {
        const c = next();
        c.providers.west.api_key = literal;
        writeFileSync(p, configText(c));
      },
      path: 'providers.west.api_key',
      message: /literal secret is not allowed/,
      secret: literal,
    },
    {
      name: 'a missing {env} secret',
      write: (p) => {
        const c = next();
        c.providers.west.api_key = { env: unsetVar };
        writeFileSync(p, configText(c));
      },
      path: 'providers.west.api_key',
      message: new RegExp(`environment variable ${unsetVar} is not set`),
    },
    {
      name: 'a missing {file} secret',
      write: (p) => {
        const c = next();
        c.providers.west.api_key = { file: join(gw.dir, 'no-such-secret') };
        writeFileSync(p, configText(c));
      },
      path: 'providers.west.api_key',
      message: /secret file \S*no-such-secret cannot be read \(file not found\)/,
    },
    {
      // A regression: a FIFO froze the whole process until something wrote into it.
      name: 'a FIFO as a {file} secret',
      write: (p) => {
        const fifo = join(gw.dir, 'fifo-secret');
        rmSync(fifo, { force: true });
        execFileSync('mkfifo', [fifo]);
        const c = next();
        c.providers.west.api_key = { file: fifo };
        writeFileSync(p, configText(c));
      },
      path: 'providers.west.api_key',
      message: /secret file \S*fifo-secret cannot be read \(not a regular file\)/,
    },
    {
      // A regression: a secret linked to /dev/zero grew the process to gigabytes.
      name: 'a secret file with no end (a link to /dev/zero)',
      write: (p) => {
        const zero = join(gw.dir, 'zero-secret');
        rmSync(zero, { force: true });
        symlinkSync('/dev/zero', zero);
        const c = next();
        c.providers.west.api_key = { file: zero };
        writeFileSync(p, configText(c));
      },
      path: 'providers.west.api_key',
      message: /secret file \S*zero-secret cannot be read \(not a regular file\)/,
    },
    {
      name: 'a config file over server.max_config_bytes',
      write: (p) => writeFileSync(p, `${configText(next())}\n# ${'x'.repeat(4 * 1024 * 1024)}\n`),
      path: '',
      message: /cannot read config file \S*gateway\.yaml: larger than server\.max_config_bytes \(4194304 bytes\)/,
    },
    {
      name: 'a FIFO as the config file',
      write: (p) => {
        rmSync(p, { force: true });
        execFileSync('mkfifo', [p]);
      },
      path: '',
      message: /cannot read config file \S*gateway\.yaml: not a regular file/,
    },
    {
      name: 'a deleted config file',
      write: (p) => unlinkSync(p),
      path: '',
      message: /cannot read config file \S*gateway\.yaml: file not found/,
    },
    {
      name: 'an empty config file',
      write: (p) => writeFileSync(p, ''),
      path: '',
      message: /config is empty/,
    },
  ];

  before(async () => {
    const good = baseConfig({ east: east.baseUrl, west: west.baseUrl }, { m: { candidates: [{ provider: 'east' }] } });
    goodText = configText(good);
    gw = await startGw(good, { env: { [unsetVar]: '' } });
  });

  for (const bad of badInputs) {
    it(`${bad.name}: the reload is rejected naming the reason and path, routing is unchanged, and start-up exits 1 with the same message`, async () => {
      const generation = await servingGeneration(gw);
      try {
        bad.write(gw.configPath);
        let result: ReloadResult;
        let resultText: string;
        if (bad.trigger === 'sighup') {
          const seen = reloadLines(gw, 'sighup').length;
          gw.child.kill('SIGHUP');
          const line = await gw.waitForLog(() => reloadLines(gw, 'sighup').length > seen);
          const last = reloadLines(gw, 'sighup').at(-1)!;
          assert.equal(last.result, 'rejected', JSON.stringify(line));
          assert.ok(
            (last.errors as string[]).some((e) => e.startsWith(`${bad.path}: `) && bad.message.test(e)),
            `the log line names the path and reason: ${JSON.stringify(last)}`,
          );
          const status = await adminStatus(gw.adminUrl!);
          result = status.body.reloads[0]!;
          resultText = status.text;
          assert.equal(result.trigger, 'sighup');
        } else {
          const r = await adminReload(gw.adminUrl!);
          assert.equal(r.status, 422, r.text);
          result = r.body;
          resultText = r.text;
          assert.equal(result.trigger, 'admin');
        }
        assert.equal(result.result, 'rejected');
        assert.equal(result.generation, generation, 'the serving generation is kept');
        assert.equal(result.previous_generation, generation);
        const issue = result.errors.find((e) => e.path === bad.path && bad.message.test(e.message));
        assert.ok(issue !== undefined, `an error names ${bad.path || '(the file)'} and the reason: ${JSON.stringify(result.errors)}`);

        assert.equal(await servingGeneration(gw), generation, '/admin/status still serves the same generation');
        const served = await postChat(gw.url, chatBody('m'));
        assertServed(served, 'east', generation);
        assert.equal(served.headers.get('x-mock-provider'), 'east');

        // The same input at start-up: exit 1 with the same message.
        const cli = await runCli(['serve', '--config', gw.configPath], { [unsetVar]: '' });
        assert.equal(cli.code, 1, cli.stdout + cli.stderr);
        assert.ok(cli.stderr.includes(formatIssue(issue)), `start-up prints "${formatIssue(issue)}":\n${cli.stderr}`);

        if (bad.secret !== undefined) {
          assert.ok(!resultText.includes(bad.secret), 'the reload result does not echo the secret');
          assert.ok(!cli.stderr.includes(bad.secret) && !cli.stdout.includes(bad.secret), 'start-up output does not echo the secret');
          assert.ok(!gw.output.join('\n').includes(bad.secret), 'the gateway log does not echo the secret');
        }
      } finally {
        // Replaced, not written through: the bad input may be a FIFO.
        rmSync(gw.configPath, { force: true });
        writeFileSync(gw.configPath, goodText);
      }
    });
  }

  it('after every rejection the original generation still serves, and a valid config still reloads', async () => {
    const before = await adminStatus(gw.adminUrl!);
    assert.equal(before.body.generation!.number, 1, 'no bad input ever produced a generation');
    const rejected = before.body.reloads.filter((r) => r.result === 'rejected');
    assert.equal(rejected.length, badInputs.length);
    const result = await reloadApplied(gw, next());
    assert.equal(result.generation, 2);
    assertServed(await postChat(gw.url, chatBody('m')), 'west', 2);
  });
});

// ---------------------------------------------------------------------------------------

describe('Invariant 1 — atomicity under a reload storm', () => {
  it('200 reloads alternating two configs under steady traffic: every response matches the config of the generation that served it, and none fails', async () => {
    resetMocks();
    // A: m -> {east, west} round-robin as upstream model-a. B: m -> central only, as model-b,
    // and east/west are removed, so each swap also retires and re-creates pools.
    const configA = baseConfig(
      { east: east.baseUrl, west: west.baseUrl },
      {
        m: {
          policy: 'round_robin',
          candidates: [
            { provider: 'east', model: 'model-a' },
            { provider: 'west', model: 'model-a' },
          ],
        },
      },
    );
    const configB = baseConfig({ central: central.baseUrl }, { m: { candidates: [{ provider: 'central', model: 'model-b' }] } });
    const expected = {
      A: { providers: new Set(['east', 'west']), model: 'model-a' },
      B: { providers: new Set(['central']), model: 'model-b' },
    } as const;
    const textA = configText(configA);
    const textB = configText(configB);
    const gw = await startGw(textA);

    const genConfig = new Map<number, 'A' | 'B'>([[1, 'A']]);
    interface Seen {
      readonly requestId: string;
      readonly generation: number;
      readonly provider: string | null;
      readonly model: string | null;
      readonly upstream: string | null;
      readonly bodyModel: unknown;
    }
    const seen: Seen[] = [];
    const failures: string[] = [];
    let storming = true;
    const client = async (id: number): Promise<void> => {
      let last = 0;
      for (let i = 0; i < 20_000 && storming; i++) {
        const requestId = `storm-${id}-${i}`;
        let r: Reply;
        try {
          r = await postChat(gw.url, chatBody('m'), { 'x-request-id': requestId });
        } catch (err) {
          failures.push(`${requestId}: ${(err as Error).message}`);
          continue;
        }
        if (r.status !== 200) {
          failures.push(`${requestId}: HTTP ${r.status} ${r.text}`);
          continue;
        }
        const generation = generationOf(r);
        if (generation < last) failures.push(`${requestId}: generation went back from ${last} to ${generation} on one client`);
        last = generation;
        seen.push({
          requestId,
          generation,
          provider: r.headers.get('x-switchyard-provider'),
          model: r.headers.get('x-switchyard-model'),
          upstream: r.headers.get('x-mock-provider'),
          bodyModel: r.json().model,
        });
      }
    };

    const clients = [0, 1, 2, 3].map(client);
    try {
      await waitUntil(() => seen.length >= 8 || failures.length > 0, 'traffic flows before the storm');
      let generation = 1;
      for (let k = 1; k <= 200; k++) {
        const config = k % 2 === 1 ? 'B' : 'A';
        writeFileSync(gw.configPath, config === 'A' ? textA : textB);
        const r = await adminReload(gw.adminUrl!);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.result, 'applied');
        assert.equal(r.body.previous_generation, generation);
        assert.equal(r.body.generation, generation + 1);
        generation += 1;
        genConfig.set(generation, config);
      }
    } finally {
      storming = false;
      await Promise.all(clients);
    }

    assert.deepEqual(failures, [], 'no request failed');
    assert.equal(await servingGeneration(gw), 201);
    const generationsSeen = new Set<number>();
    const configsSeen = new Set<string>();
    for (const s of seen) {
      const config = genConfig.get(s.generation);
      assert.ok(config !== undefined, `${s.requestId}: generation ${s.generation} was produced by a reload`);
      const want = expected[config];
      const where = `${s.requestId} (generation ${s.generation}, config ${config})`;
      assert.ok(s.provider !== null && want.providers.has(s.provider), `${where}: provider ${s.provider}`);
      assert.equal(s.upstream, s.provider, `${where}: the upstream that answered is the attributed provider`);
      assert.equal(s.model, want.model, `${where}: upstream model`);
      assert.equal(s.bodyModel, want.model, `${where}: the upstream received the model of the same generation`);
      generationsSeen.add(s.generation);
      configsSeen.add(config);
    }
    assert.ok(configsSeen.has('A') && configsSeen.has('B'), 'traffic was served by both configs during the storm');
    assert.ok(generationsSeen.size >= 3, `traffic spanned many generations (${generationsSeen.size})`);

    // The access log agrees: each line's generation, provider and upstream model belong together.
    const byId = new Map(seen.map((s) => [s.requestId, s]));
    let lines: Array<Record<string, unknown>> = [];
    await waitUntil(
      () => {
        lines = gw.logs().filter((l) => l.msg === 'request' && typeof l.request_id === 'string' && byId.has(l.request_id));
        return lines.length >= byId.size;
      },
      'every storm request has its access log line',
      20_000,
    );
    for (const line of lines) {
      const s = byId.get(line.request_id as string)!;
      assert.equal(line.generation, s.generation, `${s.requestId}: the log and the response name the same generation`);
      const want = expected[genConfig.get(s.generation)!];
      assert.ok(want.providers.has(line.provider as string));
      assert.equal(line.upstream_model, want.model);
      assert.equal(line.status, 200);
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('Invariant 4 — a request in flight across a swap finishes on its generation', () => {
  const p1 = { input_usd_per_mtok: 2, output_usd_per_mtok: 3 };
  const p2 = { input_usd_per_mtok: 50, output_usd_per_mtok: 70 };
  /** East streams 10 chunks 100 ms apart: the swap lands mid-stream. */
  const slowEast = () => ({
    type: 'openai',
    base_url: east.baseUrl,
    timeout_ms: 5000,
    headers: { 'x-mock-chunks': '10', 'x-mock-chunk-delay-ms': '100' },
  });

  function configA(): Record<string, any> {
    const c = baseConfig(
      { east: east.baseUrl, west: west.baseUrl },
      { 'chat-model': { candidates: [{ provider: 'east' }] } },
      { pricing: { models: { 'chat-model': p1 } } },
    ) as Record<string, any>;
    c.providers.east = slowEast();
    return c;
  }

  async function startStream(gw: GatewayProcess, requestId: string): Promise<{ res: Response; reader: SseReader }> {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': requestId },
      body: chatBody('chat-model', { stream: true, stream_options: { include_usage: true } }),
    });
    assert.equal(res.status, 200);
    const reader = new SseReader(res);
    // The role chunk and the first content chunk: the stream has started.
    const role = JSON.parse((await reader.next())!) as { choices: Array<{ delta: { role?: string } }> };
    assert.equal(role.choices[0]!.delta.role, 'assistant');
    const first = JSON.parse((await reader.next())!) as { choices: Array<{ delta: { content?: string } }> };
    assert.equal(typeof first.choices[0]!.delta.content, 'string');
    return { res, reader };
  }

  /** Reads the rest of the stream; returns its usage after checking it ended cleanly. */
  async function finishStream(reader: SseReader): Promise<{ prompt_tokens: number; completion_tokens: number }> {
    const rest = await reader.rest();
    assert.equal(reader.error, undefined, 'the stream was not cut');
    assert.equal(rest.at(-1), '[DONE]');
    const events = rest.slice(0, -1).map(
      (d) =>
        JSON.parse(d) as {
          error?: unknown;
          choices: Array<{ delta: { content?: string }; finish_reason: string | null }>;
          usage: unknown;
        },
    );
    assert.ok(
      events.every((e) => e.error === undefined),
      'no error event',
    );
    const content = events.filter((e) => typeof e.choices[0]?.delta.content === 'string');
    assert.equal(content.length, 9, 'the other 9 content chunks arrived after the swap');
    assert.ok(events.some((e) => e.choices[0]?.finish_reason === 'stop'));
    const usage = events.at(-1)!.usage as { prompt_tokens: number; completion_tokens: number };
    assert.equal(typeof usage.prompt_tokens, 'number');
    return usage;
  }

  async function assertAttributedToFirst(
    gw: GatewayProcess,
    requestId: string,
    usage: { prompt_tokens: number; completion_tokens: number },
  ): Promise<void> {
    const line = await accessLine(gw, requestId);
    assert.equal(line.generation, 1, 'logged on the generation it started with');
    assert.equal(line.provider, 'east');
    assert.equal(line.status, 200);
    assert.equal(line.partial, false);
    assert.equal(line.input_tokens, usage.prompt_tokens);
    assert.equal(line.output_tokens, usage.completion_tokens);
    assert.equal(line.cost_micro_usd, costOf(p1, line), "priced with its own generation's price");
    assert.notEqual(line.cost_micro_usd, costOf(p2, line));
  }

  async function assertNewRequestUsesB(gw: GatewayProcess): Promise<void> {
    const after = await postChat(gw.url, chatBody('chat-model'), { 'x-request-id': 'after-swap' });
    assertServed(after, 'west', 2);
    const line = await accessLine(gw, 'after-swap');
    assert.equal(line.generation, 2);
    assert.equal(line.cost_micro_usd, costOf(p2, line));
  }

  it("a slow stream started on generation A completes from A's provider, attributed to A and billed at A's price, while new requests use B", async () => {
    resetMocks();
    const gw = await startGw(configA());
    const { res, reader } = await startStream(gw, 'inflight-kept');
    assert.equal(res.headers.get('x-switchyard-generation'), '1');
    assert.equal(res.headers.get('x-switchyard-provider'), 'east');

    // B keeps east as a provider but routes chat-model to west, at another price.
    const configB = configA();
    configB.routing.routes['chat-model'] = { candidates: [{ provider: 'west' }] };
    configB.pricing.models['chat-model'] = p2;
    const result = await reloadApplied(gw, configB);
    assert.equal(result.generation, 2);
    assert.ok(result.changes?.pricingChanged);
    // Order, not time: after the swap, east's pool still has the stream in flight.
    const status = await adminStatus(gw.adminUrl!);
    assert.equal(providerIn(status.body, 'east')!.inflight, 1, 'the stream is still in flight after the swap');

    await assertNewRequestUsesB(gw);
    const usage = await finishStream(reader);
    await assertAttributedToFirst(gw, 'inflight-kept', usage);
    assert.equal(east.stats().aborted, 0);
  });

  it('a stream in flight on a provider that the swap removes still completes, on its generation and at its price', async () => {
    resetMocks();
    const gw = await startGw(configA());
    const { res, reader } = await startStream(gw, 'inflight-removed');
    assert.equal(res.headers.get('x-switchyard-generation'), '1');

    // B drops east altogether: its pool is retired, and must close only after this stream.
    const configB = baseConfig(
      { west: west.baseUrl },
      { 'chat-model': { candidates: [{ provider: 'west' }] } },
      { pricing: { models: { 'chat-model': p2 } } },
    );
    const result = await reloadApplied(gw, configB);
    assert.deepEqual(result.changes?.providersRemoved, ['east']);

    await assertNewRequestUsesB(gw);
    const usage = await finishStream(reader);
    await assertAttributedToFirst(gw, 'inflight-removed', usage);
    assert.equal(east.stats().aborted, 0, 'east saw no aborted request');
  });
});

// ---------------------------------------------------------------------------------------

describe('Invariant 5 — pricing swaps together with routes', () => {
  it('a reload that adds a provider, a route and its price at once: every request on the new route is priced, the first one included', async () => {
    resetMocks();
    const price = { input_usd_per_mtok: 7, output_usd_per_mtok: 11 };
    const configA = baseConfig(
      { east: east.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      { pricing: { models: { m: { input_usd_per_mtok: 1, output_usd_per_mtok: 1 } } } },
    );
    const configB = baseConfig(
      { east: east.baseUrl, central: central.baseUrl },
      { m: { candidates: [{ provider: 'east' }] }, 'm-new': { candidates: [{ provider: 'central', model: 'new-upstream' }] } },
      { pricing: { models: { m: { input_usd_per_mtok: 1, output_usd_per_mtok: 1 }, 'central/new-upstream': price } } },
    );
    const gw = await startGw(configA);

    // One client asks for the new model in a loop while the reload happens: before the swap
    // it is unknown (404), from the swap on it is served, and never served unpriced.
    const outcomes: Array<{ id: string; status: number; code?: string }> = [];
    let served = 0;
    let reloaded = false;
    const clientDone = (async () => {
      for (let i = 0; i < 5000 && (served < 5 || !reloaded); i++) {
        const id = `new-route-${i}`;
        const r = await postChat(gw.url, chatBody('m-new'), { 'x-request-id': id });
        outcomes.push({ id, status: r.status, code: r.status === 200 ? undefined : r.json().error?.code });
        if (r.status === 200) served += 1;
      }
    })();
    try {
      await waitUntil(() => outcomes.length >= 3, 'the new model is asked for before the reload');
      const result = await reloadApplied(gw, configB);
      assert.deepEqual(result.changes?.providersAdded, ['central']);
      assert.deepEqual(result.changes?.routesAdded, ['m-new']);
      assert.equal(result.changes?.pricingChanged, true);
    } finally {
      reloaded = true;
      await clientDone;
    }

    const firstServed = outcomes.findIndex((o) => o.status === 200);
    assert.ok(firstServed > 0, 'requests before the swap were not served, requests after it were');
    for (const o of outcomes.slice(0, firstServed)) assert.deepEqual([o.status, o.code], [404, 'model_not_found'], o.id);
    for (const o of outcomes.slice(firstServed)) assert.equal(o.status, 200, `${o.id}: once served, always served`);
    for (const o of outcomes.slice(firstServed)) {
      const line = await accessLine(gw, o.id);
      assert.equal(line.generation, 2);
      assert.equal(line.provider, 'central');
      assert.equal(typeof line.cost_micro_usd, 'number', `${o.id} is priced`);
      assert.equal(line.cost_micro_usd, costOf(price, line), `${o.id} is priced with the new route's price`);
      assert.ok((line.cost_micro_usd as number) > 0);
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('Invariant 3 — stateful services survive reloads', () => {
  /** Every stateful service: built once at start-up, never rebuilt. A service added to Services later must join this list. */
  const STATEFUL = [
    'holder',
    'breakers',
    'counters',
    'affinity',
    'pools',
    'tokens',
    'metrics',
    'logger',
    'accessLog',
    'governance',
    'audit',
    'responseStore',
    'cache',
  ] as const;

  async function requestsCounted(metrics: { requests: { get(): Promise<{ values: ReadonlyArray<{ value: number }> }> } }): Promise<number> {
    return (await metrics.requests.get()).values.reduce((sum, v) => sum + v.value, 0);
  }

  it('invariant 3: after 50 real reloads each stateful service is the object captured before them, and the request path still uses it and its state', async () => {
    resetMocks();
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-inproc-'));
    const configPath = join(dir, 'gateway.yaml');
    // Every variant changes model m's fallback (west, then central), so each reload applies a
    // new generation. Route rr is the same in every variant, so its rotation may be kept.
    const variant = (n: number): object =>
      baseConfig(
        { east: east.baseUrl, west: west.baseUrl, central: central.baseUrl },
        {
          m: { policy: 'ordered', candidates: [{ provider: 'east' }, { provider: n % 2 === 0 ? 'west' : 'central' }] },
          rr: { policy: 'round_robin', candidates: [{ provider: 'east' }, { provider: 'west' }] },
        },
        { log: { level: 'silent' }, audit: { file: join(dir, 'audit.jsonl') } },
      );
    const withSessions = (n: number): object => {
      const c = variant(n) as Record<string, any>;
      c.routing.session_affinity = { header: 'x-session-id' };
      return c;
    };
    writeFileSync(configPath, configText(withSessions(0)));
    const ownLogger = createLogger({ level: 'silent' });
    const gateway = await startGateway({ configPath, logger: ownLogger, env: {} });
    try {
      // The references, captured once, before any reload.
      const captured = { ...gateway.services };
      for (const name of STATEFUL) assert.ok(captured[name] !== undefined && captured[name] !== null, `Services has ${name}`);
      const { breakers, affinity, counters, pools, metrics, holder } = captured;
      const startGeneration = holder.current().number;
      const eastIdentity = holder.current().providers.east!.identity;
      const eastPool = holder.current().providers.east!.pool;
      const poolCount = pools.size;

      // Give the services some state: a round-robin position, one east failure (served by
      // the fallback), one session.
      assertServed(await postChat(gateway.url, chatBody('rr')), 'east');
      const rotations = counters.size;
      assert.ok(rotations >= 1, 'the round-robin route has a counter');
      east.addFault({ mode: 'status', status: 500, count: 1 });
      const failed = await postChat(gateway.url, chatBody('m'));
      assertServed(failed, 'west');
      const bound = await postChat(gateway.url, chatBody('m'), { 'x-session-id': 'session-1' });
      assertServed(bound, 'east');
      assert.equal(breakers.view(eastIdentity)?.consecutiveFailures, 0, 'the success reset the count');
      east.addFault({ mode: 'status', status: 500, count: 1 });
      assertServed(await postChat(gateway.url, chatBody('m')), 'west');
      assert.equal(breakers.view(eastIdentity)?.consecutiveFailures, 1);
      const sessions = affinity.size;
      assert.ok(sessions >= 1);
      const countedBefore = await requestsCounted(metrics);
      assert.ok(countedBefore >= 4, 'the requests so far are counted');

      // The real reload path: the config file changes, then POST /admin/reload.
      for (let n = 1; n <= 50; n++) {
        writeFileSync(configPath, configText(withSessions(n)));
        const r = await adminReload(gateway.adminUrl!);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.result, 'applied', JSON.stringify(r.body.errors));
        assert.equal(r.body.generation, startGeneration + n);
        assert.equal(
          holder.current().routes.m!.groups.flatMap((g) => g.candidates)[1]!.providerName,
          n % 2 === 0 ? 'west' : 'central',
          `reload ${n} applied its config`,
        );
      }

      // The same objects, by reference: none was rebuilt or replaced by a reload.
      assert.equal(holder.current().number, startGeneration + 50);
      for (const name of STATEFUL)
        assert.equal(gateway.services[name], captured[name], `${name} is the object captured before the reloads`);
      assert.equal(gateway.services.logger, ownLogger, 'the logger is still the one the caller passed in');
      assert.equal(holder.current().providers.east!.pool, eastPool, "east's pool is the same object in the 50th generation");
      assert.equal(pools.size, poolCount, 'no pool was added or dropped');

      // Their state survived ...
      assert.equal(breakers.view(eastIdentity)?.consecutiveFailures, 1, "east's breaker kept its count across 50 reloads");
      assert.equal(affinity.size, sessions, 'the session table kept its entries');
      assert.equal(counters.size, rotations, 'the round-robin counters kept their keys');

      // ... and the request path after the reloads reads and writes these same objects.
      east.addFault({ mode: 'status', status: 500, count: 1 });
      assertServed(await postChat(gateway.url, chatBody('m')), 'west', startGeneration + 50);
      assert.equal(
        breakers.view(eastIdentity)?.consecutiveFailures,
        2,
        'a failure after the reloads is recorded in the captured breaker registry',
      );
      const again = await postChat(gateway.url, chatBody('m'), { 'x-session-id': 'session-1' });
      assertServed(again, 'east', startGeneration + 50);
      assertServed(await postChat(gateway.url, chatBody('rr')), 'west');
      assertServed(await postChat(gateway.url, chatBody('m'), { 'x-session-id': 'session-2' }), 'east');
      assert.equal(affinity.size, sessions + 1, 'a session bound after the reloads is in the captured affinity table');
      assert.ok(
        (await requestsCounted(metrics)) > countedBefore,
        'requests after the reloads are counted by the captured metrics registry',
      );
    } finally {
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('Invariant 6 — breakers follow provider identity', () => {
  const breaker = { failure_threshold: 5, open_base_ms: 120_000, open_max_ms: 120_000 };
  const config = (providers: Record<string, string>, candidates: string[], extraRoutes: Record<string, unknown> = {}): object =>
    baseConfig(
      providers,
      { m: { policy: 'ordered', candidates: candidates.map((provider) => ({ provider })) }, ...extraRoutes },
      { resilience: { breaker } },
    );

  /** Five failures on east with ordered [east, west]: east's breaker opens. */
  async function openEast(gw: GatewayProcess): Promise<void> {
    east.addFault({ mode: 'status', status: 500, count: 5 });
    for (let i = 0; i < 5; i++) {
      const r = await postChat(gw.url, chatBody('m'));
      assertServed(r, 'west');
      assert.equal(r.headers.get('x-switchyard-fallback'), 'east');
    }
    const s = await adminStatus(gw.adminUrl!);
    assert.equal(providerIn(s.body, 'east')!.breaker?.state, 'open');
    const before = chatCount(east);
    assertServed(await postChat(gw.url, chatBody('m')), 'west');
    assert.equal(chatCount(east), before, 'an open breaker skips east');
  }

  it('a re-pointed provider starts with a fresh breaker: it serves from the new base URL at once', async () => {
    resetMocks();
    const gw = await startGw(config({ east: east.baseUrl, west: west.baseUrl }, ['east', 'west']));
    try {
      await openEast(gw);
      const oldIdentity = providerIn((await adminStatus(gw.adminUrl!)).body, 'east')!.identity;

      const result = await reloadApplied(gw, config({ east: eastNew.baseUrl, west: west.baseUrl }, ['east', 'west']));
      assert.deepEqual(result.changes?.providersChanged, ['east']);
      const r = await postChat(gw.url, chatBody('m'));
      assertServed(r, 'east');
      assert.equal(r.headers.get('x-mock-provider'), 'east-new', 'served by the new upstream');
      assert.equal(r.headers.get('x-switchyard-fallback'), null);
      assert.equal(chatCount(eastNew), 1);

      const s = (await adminStatus(gw.adminUrl!)).body;
      const p = providerIn(s, 'east')!;
      assert.notEqual(p.identity, oldIdentity);
      assert.ok(p.identity.includes(eastNew.baseUrl.replace(/\/+$/, '')), p.identity);
      assert.equal(p.breaker?.state, 'closed');
      assert.equal(p.breaker?.opens, 0);
      assert.ok(!JSON.stringify(s.providers).includes(oldIdentity), 'the old identity is gone from /admin/status');
    } finally {
      east.clearFaults();
    }
  });

  it('a removed provider loses its breaker; re-added later, it starts closed', async () => {
    resetMocks();
    const full = config({ east: east.baseUrl, west: west.baseUrl }, ['east', 'west']);
    const gw = await startGw(full);
    try {
      await openEast(gw);
      const oldIdentity = providerIn((await adminStatus(gw.adminUrl!)).body, 'east')!.identity;

      await reloadApplied(gw, config({ west: west.baseUrl }, ['west']));
      const s = (await adminStatus(gw.adminUrl!)).body;
      assert.equal(providerIn(s, 'east'), undefined);
      assert.ok(!JSON.stringify(s).includes(oldIdentity), 'its identity no longer appears in /admin/status');

      await reloadApplied(gw, full);
      const readded = providerIn((await adminStatus(gw.adminUrl!)).body, 'east')!;
      assert.equal(readded.identity, oldIdentity);
      assert.equal(readded.breaker?.state, 'closed');
      assert.equal(readded.breaker?.consecutiveFailures, 0);
      assert.equal(readded.breaker?.opens, 0);
      const before = chatCount(east);
      const r = await postChat(gw.url, chatBody('m'));
      assertServed(r, 'east');
      assert.equal(r.headers.get('x-switchyard-fallback'), null);
      assert.equal(chatCount(east), before + 1);
    } finally {
      east.clearFaults();
    }
  });

  it('a provider whose identity did not change keeps its open breaker across a reload, even when renamed', async () => {
    resetMocks();
    const gw = await startGw(config({ east: east.baseUrl, west: west.baseUrl }, ['east', 'west']));
    try {
      await openEast(gw);
      const identity = providerIn((await adminStatus(gw.adminUrl!)).body, 'east')!.identity;

      // A reload that changes other things (a new route, west re-tuned) but not east.
      const other = config({ east: east.baseUrl, west: west.baseUrl }, ['east', 'west'], {
        other: { candidates: [{ provider: 'west' }] },
      }) as Record<string, any>;
      other.providers.west.timeout_ms = 4000;
      const result = await reloadApplied(gw, other);
      assert.deepEqual(result.changes?.providersChanged, ['west']);
      let p = providerIn((await adminStatus(gw.adminUrl!)).body, 'east')!;
      assert.equal(p.identity, identity);
      assert.equal(p.breaker?.state, 'open', 'still open after the reload');
      assert.equal(p.breaker?.opens, 1);
      const before = chatCount(east);
      assertServed(await postChat(gw.url, chatBody('m')), 'west');
      assert.equal(chatCount(east), before, 'east is still skipped');

      // Renamed, same base URL: same identity, same breaker.
      await reloadApplied(gw, config({ 'east-renamed': east.baseUrl, west: west.baseUrl }, ['east-renamed', 'west']));
      p = providerIn((await adminStatus(gw.adminUrl!)).body, 'east-renamed')!;
      assert.equal(p.identity, identity);
      assert.equal(p.breaker?.state, 'open');
      assertServed(await postChat(gw.url, chatBody('m')), 'west');
      assert.equal(chatCount(east), before, 'the renamed provider is still skipped');
    } finally {
      east.clearFaults();
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('SIGHUP', () => {
  it('after 20 SIGHUP reloads the process still serves, and SIGTERM makes it exit 0', async () => {
    const gw = await startGatewayProcess(baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    let stopped = false;
    try {
      for (let n = 1; n <= 20; n++) {
        gw.child.kill('SIGHUP');
        await gw.waitForLog(() => reloadLines(gw, 'sighup').length >= n);
      }
      const lines = reloadLines(gw, 'sighup');
      assert.deepEqual(
        lines.map((l) => l.result),
        Array(20).fill('applied'),
      );
      assert.deepEqual(
        lines.map((l) => l.generation),
        Array.from({ length: 20 }, (_, i) => i + 2),
      );
      assertServed(await postChat(gw.url, chatBody('m')), 'east', 21);

      const code = await gw.stop('SIGTERM');
      stopped = true;
      assert.equal(code, 0, gw.output.slice(-10).join('\n'));
      assert.ok(
        gw.logs().some((l) => l.msg === 'stopped'),
        'it shut down through the drain',
      );
      assert.ok(!gw.output.some((l) => /MaxListenersExceeded|Warning/.test(l)), 'no listener leak warning');
    } finally {
      if (!stopped) await gw.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('admin API authentication', () => {
  const token = 'adm-token-never-printed-9f3b';

  it('with server.admin_token set, /admin/status and /admin/reload answer 401 without the right bearer and 200 with it; the token is never shown', async () => {
    const gw = await startGw(
      baseConfig(
        { east: east.baseUrl },
        { m: { candidates: [{ provider: 'east' }] } },
        { server: { admin_token: { env: 'SWITCHYARD_TEST_ADMIN_TOKEN' } } },
      ),
      { env: { SWITCHYARD_TEST_ADMIN_TOKEN: token } },
    );
    const admin = gw.adminUrl!;
    const texts: string[] = [];
    const refused: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer wrong-token' },
      { authorization: `Bearer ${token}x` },
      { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` },
      { authorization: token },
    ];
    for (const headers of refused) {
      const status = await fetch(`${admin}/admin/status`, { headers });
      texts.push(await status.text());
      assert.equal(status.status, 401, JSON.stringify(headers));
      const reload = await fetch(`${admin}/admin/reload`, { method: 'POST', headers });
      texts.push(await reload.text());
      assert.equal(reload.status, 401, JSON.stringify(headers));
      const metrics = await fetch(`${admin}/metrics`, { headers });
      await metrics.text();
      assert.equal(metrics.status, 401);
    }
    const status = await adminStatus(admin, token);
    assert.equal(status.status, 200);
    assert.equal(status.body.generation!.number, 1, 'no refused reload ran');
    assert.equal(status.body.reloads.length, 1, 'only the start-up build is in the history');
    texts.push(status.text);
    const reload = await adminReload(admin, token);
    assert.equal(reload.status, 200, reload.text);
    assert.equal(reload.body.result, 'applied');
    texts.push(reload.text);

    for (const text of texts) assert.ok(!text.includes(token), 'no admin response contains the token');
    await gw.stop();
    assert.ok(!gw.output.join('\n').includes(token), 'the log never contains the token');
  });

  it('an admin listener on a non-loopback address without admin_token is refused at start-up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-admin-'));
    try {
      const path = join(dir, 'gateway.yaml');
      writeFileSync(
        path,
        configText(
          baseConfig({ east: east.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }, { server: { admin_listen: '0.0.0.0:0' } }),
        ),
      );
      const cli = await runCli(['serve', '--config', path]);
      assert.equal(cli.code, 1, cli.stdout + cli.stderr);
      assert.match(cli.stderr, /server\.admin_token/);
      assert.ok(!cli.stdout.includes('"msg":"listening"'), 'it never started listening');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('restart-only keys', () => {
  it('a reload that changes server.listen applies everything else, warns about server.listen, and keeps the old listener', async () => {
    resetMocks();
    const gw = await startGw(baseConfig({ east: east.baseUrl, west: west.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }));
    assertServed(await postChat(gw.url, chatBody('m')), 'east', 1);

    const changed = baseConfig(
      { east: east.baseUrl, west: west.baseUrl },
      { m: { candidates: [{ provider: 'west' }] } },
      { server: { listen: '127.0.0.1:1' } },
    );
    const result = await reloadApplied(gw, changed);
    assert.equal(result.generation, 2);
    assert.deepEqual(result.changes?.routesChanged, ['m']);
    assert.ok(
      result.warnings.some((w) => w.includes('server.listen')),
      JSON.stringify(result.warnings),
    );
    const logged = await gw.waitForLog((l) => l.msg === 'reload' && l.trigger === 'admin' && l.generation === 2);
    assert.ok(
      (logged.warnings as string[]).some((w) => w.includes('server.listen')),
      'the reload log line carries the warning',
    );

    // Still on the old address, with the new route.
    assertServed(await postChat(gw.url, chatBody('m')), 'west', 2);
  });
});

// ---------------------------------------------------------------------------------------

describe('/admin/status and reload metrics', () => {
  it('shows the generation, its config hash, the last 20 reloads newest first, providers with breakers and routes, and no secret', async () => {
    const secret = 'sk-status-secret-value-77';
    const make = (model: string): object => {
      const c = baseConfig(
        { east: east.baseUrl, west: west.baseUrl },
        {
          [model]: {
            policy: 'round_robin',
            candidates: [
              { provider: 'east', model: 'up-east' },
              { provider: 'west', weight: 2 },
            ],
          },
        },
      ) as Record<string, any>;
      c.providers.east.api_key = { env: 'SWITCHYARD_TEST_EAST_KEY' };
      return c;
    };
    const gw = await startGw(make('m'), { env: { SWITCHYARD_TEST_EAST_KEY: secret } });
    const hashOfFile = (): string => createHash('sha256').update(readFileSync(gw.configPath)).digest('hex');

    const first = await adminStatus(gw.adminUrl!);
    assert.equal(first.status, 200);
    const g1 = first.body.generation!;
    assert.equal(g1.number, 1);
    assert.ok(!Number.isNaN(Date.parse(g1.built_at)), 'built_at is a timestamp');
    assert.equal(g1.config_hash, hashOfFile());
    assert.equal(first.body.reloads.length, 1);
    assert.equal(first.body.reloads[0]!.trigger, 'startup');

    const eastView = providerIn(first.body, 'east')!;
    assert.equal(eastView.credential, 'env:SWITCHYARD_TEST_EAST_KEY', 'the credential is shown as its reference');
    assert.equal(eastView.breaker?.state, 'closed');
    assert.equal(eastView.breaker?.identity, eastView.identity);
    assert.equal(providerIn(first.body, 'west')!.breaker?.state, 'closed');
    assert.deepEqual(
      first.body.routes.map((r) => ({
        model: r.model,
        policy: r.policy,
        candidates: r.candidates.map((c) => [c.provider, c.upstream_model, c.weight]),
      })),
      [
        {
          model: 'm',
          policy: 'round_robin',
          candidates: [
            ['east', 'up-east', 1],
            ['west', 'm', 2],
          ],
        },
      ],
    );
    assert.ok(!first.text.includes(secret), 'no secret value in /admin/status');

    // One applied and one rejected reload, then the metrics.
    const applied = await reloadApplied(gw, make('m2'));
    assert.deepEqual(applied.changes?.routesAdded, ['m2']);
    assert.deepEqual(applied.changes?.routesRemoved, ['m']);
    assert.ok(applied.duration_ms >= 0);
    const second = (await adminStatus(gw.adminUrl!)).body.generation!;
    assert.equal(second.number, 2);
    assert.equal(second.config_hash, hashOfFile());
    assert.notEqual(second.config_hash, g1.config_hash, 'the hash follows the file');
    assert.ok(Date.parse(second.built_at) >= Date.parse(g1.built_at));
    const afterApplied = await scrapeMetrics(gw.url);

    writeFileSync(gw.configPath, 'routing: [');
    const rejected = await adminReload(gw.adminUrl!);
    assert.equal(rejected.status, 422);
    const m = await scrapeMetrics(gw.url);
    assert.equal(metricValue(m, 'switchyard_reload_total', { trigger: 'startup', result: 'applied' }), 1);
    assert.equal(metricValue(m, 'switchyard_reload_total', { trigger: 'admin', result: 'applied' }), 1);
    assert.equal(metricValue(m, 'switchyard_reload_total', { trigger: 'admin', result: 'rejected' }), 1);
    assert.equal(metricValue(m, 'switchyard_reload_duration_seconds_count'), 3);
    assert.equal(metricValue(m, 'switchyard_generation'), 2);
    const lastSuccess = metricValue(m, 'switchyard_last_reload_success_timestamp_seconds');
    assert.ok(lastSuccess !== undefined && lastSuccess > 0);
    assert.equal(
      lastSuccess,
      metricValue(afterApplied, 'switchyard_last_reload_success_timestamp_seconds'),
      'a rejected reload is not a success',
    );
    // The rejection's time, later than the last success: an older revision still serves.
    assert.equal(metricValue(afterApplied, 'switchyard_last_reload_rejection_timestamp_seconds'), 0);
    assert.ok(metricValue(m, 'switchyard_last_reload_rejection_timestamp_seconds')! >= lastSuccess);
    const adminMetrics = await fetch(`${gw.adminUrl}/metrics`);
    assert.equal(
      metricValue(await adminMetrics.text(), 'switchyard_reload_total', { trigger: 'admin', result: 'rejected' }),
      1,
      'the admin listener serves the same metrics',
    );

    // History: capped at 20, newest first.
    for (let n = 0; n < 25; n++) await reloadApplied(gw, make(n % 2 === 0 ? 'm3' : 'm4'));
    const last = await adminStatus(gw.adminUrl!);
    const reloads = last.body.reloads;
    assert.equal(reloads.length, 20);
    assert.equal(reloads[0]!.generation, last.body.generation!.number);
    assert.equal(reloads[0]!.generation, 27);
    for (let i = 1; i < reloads.length; i++) assert.equal(reloads[i]!.generation, reloads[i - 1]!.generation - 1, 'newest first');
    for (const r of reloads) {
      assert.equal(r.trigger, 'admin');
      assert.equal(r.result, 'applied');
      assert.equal(typeof r.duration_ms, 'number');
      assert.ok(Array.isArray(r.errors));
      assert.ok(r.changes !== null);
    }
    assert.ok(!last.text.includes(secret));
    assert.ok(!gw.output.join('\n').includes(secret), 'no secret value in the log');
  });
});

// ---------------------------------------------------------------------------------------

describe('server.watch_config', () => {
  it('rewriting the config file reloads it (trigger config_watch); rewriting it with the same bytes changes nothing', async () => {
    resetMocks();
    const extra = { server: { watch_config: true, watch_debounce_ms: 50 } };
    const gw = await startGw(baseConfig({ east: east.baseUrl, west: west.baseUrl }, { m: { candidates: [{ provider: 'east' }] } }, extra));
    assertServed(await postChat(gw.url, chatBody('m')), 'east', 1);

    const next = configText(baseConfig({ east: east.baseUrl, west: west.baseUrl }, { m: { candidates: [{ provider: 'west' }] } }, extra));
    writeFileSync(gw.configPath, next);
    const applied = await gw.waitForLog((l) => l.msg === 'reload' && l.trigger === 'config_watch' && l.result === 'applied');
    assert.equal(applied.generation, 2);
    assertServed(await postChat(gw.url, chatBody('m')), 'west', 2);

    const seen = reloadLines(gw, 'config_watch').length;
    writeFileSync(gw.configPath, next);
    await gw.waitForLog(() => reloadLines(gw, 'config_watch').length > seen);
    const after = reloadLines(gw, 'config_watch').slice(seen);
    assert.ok(
      after.every((l) => l.result === 'unchanged'),
      JSON.stringify(after),
    );
    assert.equal(await servingGeneration(gw), 2, 'no new generation');
    assertServed(await postChat(gw.url, chatBody('m')), 'west', 2);
  });
});
