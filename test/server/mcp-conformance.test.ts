import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MockProvider } from '../../src/mock/index.js';
import { startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process.js';

// The official MCP conformance suite (@modelcontextprotocol/conformance) against a real
// gateway process in front of one mock MCP server, its tools taken with tools_from. Only the
// scenarios that apply to a tools gateway run here: the handshake, ping, tools/list, the
// Origin check against DNS rebinding, and concurrent POSTs on one session. The others call
// the reference server's own tools (test_simple_text, test_image_content…) or methods the
// gateway does not offer (resources, prompts, completion, logging), which it answers with
// "Method not found", as a server without those capabilities should.

const CONFORMANCE = resolve(import.meta.dirname, '../../node_modules/.bin/conformance');
/** One scenario's bound: a hang fails the test instead of stalling the run. */
const SCENARIO_TIMEOUT_MS = 60_000;

interface Check {
  readonly id: string;
  readonly status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  readonly errorMessage?: string;
  readonly details?: Record<string, unknown>;
}

interface ScenarioRun {
  readonly code: number | null;
  readonly output: string;
  readonly checks: readonly Check[];
}

const skip = existsSync(CONFORMANCE) ? false : `the conformance CLI is not installed (${CONFORMANCE})`;
let mock: MockProvider;
let gw: GatewayProcess;
let mcpUrl: string;

/** Runs one scenario and reads the checks it saved (`<dir>/server-<scenario>-<time>/checks.json`). */
function runScenario(scenario: string): Promise<ScenarioRun> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-conformance-'));
  return new Promise((res, rej) => {
    const child = spawn(CONFORMANCE, ['server', '--url', mcpUrl, '--scenario', scenario, '-o', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), SCENARIO_TIMEOUT_MS);
    child.once('error', rej);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const saved = readdirSync(dir).find((d) => d.startsWith(`server-${scenario}-`));
      if (saved === undefined) return rej(new Error(`${scenario} saved no results (exit ${code}):\n${output}`));
      const checks = JSON.parse(readFileSync(join(dir, saved, 'checks.json'), 'utf8')) as Check[];
      res({ code, output, checks });
    });
  });
}

function assertPassed(run: ScenarioRun, scenario: string): void {
  const bad = run.checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  assert.deepEqual(
    bad.map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? ''}`),
    [],
    `${scenario} has no failed or warned check:\n${run.output}`,
  );
  assert.ok(
    run.checks.some((c) => c.status === 'SUCCESS'),
    `${scenario} passed at least one check`,
  );
  assert.equal(run.code, 0, `${scenario} exits 0`);
}

async function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

before(async () => {
  if (skip) return;
  mock = await startMockProvider({ name: 'alpha', protocol: 'mcp' });
  gw = await startGatewayProcess({
    server: { listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    log: { level: 'info', access: true },
    providers: { alpha: { type: 'mcp', base_url: `${mock.origin}/mcp`, timeout_ms: 3000 } },
    routing: { tools_from: [{ provider: 'alpha' }] },
  });
  mcpUrl = `${gw.url}/mcp`;
  await gw.waitForLog((l) => l.msg === 'MCP server catalog listed');
});

after(async () => {
  await gw?.stop();
  await mock?.close();
});

describe('the MCP conformance suite against the gateway', { skip }, () => {
  for (const scenario of ['server-initialize', 'ping', 'dns-rebinding-protection']) {
    it(`passes ${scenario}`, async () => {
      assertPassed(await runScenario(scenario), scenario);
    });
  }

  it('passes tools-list, listing the tools its server publishes', async () => {
    const run = await runScenario('tools-list');
    assertPassed(run, 'tools-list');
    const listed = run.checks.find((c) => c.id === 'tools-list')?.details?.tools as string[] | undefined;
    assert.deepEqual(listed, ['echo', 'fail', 'progress', 'slow', 'weather', 'write']);
  });

  it('fails server-sse-multiple-streams only on its MCP-Protocol-Version 2025-03-26, a version the gateway does not speak', async () => {
    // The scenario negotiates the newest version, then sends its concurrent POSTs with a
    // hard-coded `MCP-Protocol-Version: 2025-03-26`, which a server MUST refuse with 400 when
    // it does not support it (2025-06-18 basic/transports, protocol version header).
    const run = await runScenario('server-sse-multiple-streams');
    const accepts = run.checks.find((c) => c.id === 'server-accepts-multiple-post-streams');
    assert.equal(accepts?.status, 'FAILURE', 'if this passes, the gateway now speaks 2025-03-26: move the scenario to the passing ones');
    assert.deepEqual(accepts?.details?.statuses, [400, 400, 400]);
    assert.equal(run.code, 1);
  });

  it('answers concurrent POSTs on one session, each with its own result, when they carry the negotiated version', async () => {
    const init = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'concurrent', version: '1' } },
    });
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id');
    assert.ok(session !== null);
    await init.text();
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    const answers = await Promise.all(
      [1000, 1001, 1002].map((id) => post({ jsonrpc: '2.0', id, method: 'tools/list', params: {} }, headers)),
    );
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200],
    );
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as Array<{ id: number; result?: { tools: unknown[] } }>;
    assert.deepEqual(
      bodies.map((b) => [b.id, b.result?.tools.length]),
      [
        [1000, 6],
        [1001, 6],
        [1002, 6],
      ],
    );
    const old = await post(
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: {} },
      { ...headers, 'mcp-protocol-version': '2025-03-26' },
    );
    assert.equal(old.status, 400);
    assert.equal(((await old.json()) as { error: { data: { code: string } } }).error.data.code, 'mcp_protocol_version_unsupported');
  });
});
