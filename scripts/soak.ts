// npm run soak -- --seconds N
//
// Mixed traffic against a real gateway process for N seconds: plain and streamed requests,
// clients that leave mid-stream, an upstream that fails now and then (the gateway fails
// over), and a reload every few seconds. It samples the gateway's resident memory, open
// file descriptors and event-loop delay (p99) after a warm-up and at the end, prints them,
// stores them in bench/results/soak-latest.json, and exits 1 when memory or descriptors
// grew past a bound, or when any request failed other than by the injected causes.
// Loopback only; every loop ends by itself at the deadline.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { type MockProvider, startMockProvider } from '../src/mock/index.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist/cli.js');
/** Growth allowed between the warm-up sample and the end. */
const MAX_RSS_GROWTH_BYTES = 64 * 1024 * 1024;
const MAX_FD_GROWTH = 32;
const CONCURRENCY = 8;
const RELOAD_EVERY_MS = 3000;

interface Sample {
  readonly at_s: number;
  readonly rss_bytes: number;
  readonly open_fds: number;
  readonly event_loop_p99_ms: number;
}

interface Counts {
  plain: number;
  streamed: number;
  aborted: number;
  failedOver: number;
  reloads: number;
  failures: string[];
}

function usage(): never {
  process.stderr.write('usage: npm run soak -- [--seconds N]   (5..3600, default 30)\n');
  process.exit(2);
}

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '30' } } });
const seconds = Number(values.seconds);
if (!Number.isInteger(seconds) || seconds < 5 || seconds > 3600) usage();

function configFor(east: MockProvider, west: MockProvider, variant: number): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000 },
    providers: {
      east: { type: 'openai', base_url: east.baseUrl, timeout_ms: 2000 + variant },
      west: { type: 'openai', base_url: west.baseUrl, timeout_ms: 2000 },
    },
    routing: { routes: { m: { policy: 'ordered', candidates: [{ provider: 'east' }, { provider: 'west' }] } } },
    resilience: { breaker: { failure_threshold: 1000 } },
    pricing: { models: { m: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } } },
    log: { access: false },
  };
}

async function startGateway(configPath: string): Promise<{ child: ChildProcess; url: string; adminUrl: string }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolvePromise, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error('the gateway did not start within 15 s')), 15_000);
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      buffer += chunk;
      for (const line of buffer.split('\n')) {
        if (!line.includes('"listening"')) continue;
        const parsed = JSON.parse(line) as { url: string; admin_url: string };
        clearTimeout(timer);
        child.stdout?.removeAllListeners('data');
        child.stdout?.resume();
        resolvePromise({ child, url: parsed.url, adminUrl: parsed.admin_url });
        return;
      }
    });
    child.once('exit', (code) => reject(new Error(`the gateway exited with ${code} before listening`)));
  });
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function sample(adminUrl: string, startedAt: number): Promise<Sample> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  return {
    at_s: Math.round((performance.now() - startedAt) / 100) / 10,
    rss_bytes: metric(text, 'switchyard_process_resident_memory_bytes'),
    open_fds: metric(text, 'switchyard_process_open_fds'),
    event_loop_p99_ms: Math.round(metric(text, 'switchyard_nodejs_eventloop_lag_p99_seconds') * 1e5) / 100,
  };
}

const body = (stream: boolean) => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'soak' }], stream });

/** One request of the mix; a failure is recorded with what the client saw. */
async function oneRequest(url: string, east: MockProvider, i: number, counts: Counts): Promise<void> {
  const kind = i % 10;
  const target = `${url}/v1/chat/completions`;
  const init = (stream: boolean, signal?: AbortSignal): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(stream),
    signal: signal ?? AbortSignal.timeout(15_000),
  });
  try {
    if (kind < 5 || kind === 9) {
      // kind 9: the first candidate fails, the gateway fails over.
      if (kind === 9) east.addFault(i % 20 === 9 ? { mode: 'status', status: 500, count: 1 } : { mode: 'close', count: 1 });
      const res = await fetch(target, init(false));
      const text = await res.text();
      if (res.status !== 200 || !text.includes('chat.completion')) counts.failures.push(`plain ${res.status}: ${text.slice(0, 200)}`);
      else if (res.headers.get('x-switchyard-fallback') !== null) counts.failedOver += 1;
      counts.plain += 1;
    } else if (kind < 8) {
      const res = await fetch(target, init(true));
      const text = await res.text();
      if (res.status !== 200 || !text.includes('data: [DONE]')) counts.failures.push(`stream ${res.status}: ${text.slice(-200)}`);
      counts.streamed += 1;
    } else {
      // A client that leaves after the first chunk: injected, not a failure.
      const controller = new AbortController();
      const res = await fetch(target, init(true, controller.signal));
      const reader = res.body?.getReader();
      await reader?.read();
      controller.abort();
      await reader?.cancel().catch(() => undefined);
      counts.aborted += 1;
    }
  } catch (err) {
    if (kind === 8 && (err as Error).name === 'AbortError') return;
    counts.failures.push(`request ${kind}: ${(err as Error).message}`);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-soak-'));
  const east = await startMockProvider({ name: 'east', streamChunks: 8, streamChunkDelayMs: 5 });
  const west = await startMockProvider({ name: 'west', streamChunks: 8, streamChunkDelayMs: 5 });
  const configPath = join(dir, 'gateway.yaml');
  writeFileSync(configPath, stringify(configFor(east, west, 0)));
  const gw = await startGateway(configPath);
  const startedAt = performance.now();
  const deadline = startedAt + seconds * 1000;
  const warmupEnds = startedAt + Math.min(10_000, seconds * 200);
  const counts: Counts = { plain: 0, streamed: 0, aborted: 0, failedOver: 0, reloads: 0, failures: [] };
  let warm: Sample | null = null;
  process.stdout.write(`soak: ${seconds} s against ${gw.url}, ${CONCURRENCY} clients, a reload every ${RELOAD_EVERY_MS / 1000} s\n`);

  const reloads = (async () => {
    let variant = 0;
    while (performance.now() + RELOAD_EVERY_MS < deadline) {
      await new Promise((r) => setTimeout(r, RELOAD_EVERY_MS));
      variant = 1 - variant;
      writeFileSync(configPath, stringify(configFor(east, west, variant)));
      const res = await fetch(`${gw.adminUrl}/admin/reload`, { method: 'POST' });
      const result = (await res.json()) as { result: string };
      if (result.result !== 'applied') counts.failures.push(`reload: ${JSON.stringify(result)}`);
      counts.reloads += 1;
    }
  })();
  const sampler = (async () => {
    while (performance.now() < warmupEnds) await new Promise((r) => setTimeout(r, 200));
    warm = await sample(gw.adminUrl, startedAt);
  })();
  let next = 0;
  const clients = Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < deadline) await oneRequest(gw.url, east, next++, counts);
  });
  await Promise.all([...clients, reloads, sampler]);
  // Let aborted exchanges and idle sockets settle before the last look.
  await new Promise((r) => setTimeout(r, 1000));
  const end = await sample(gw.adminUrl, startedAt);
  gw.child.kill('SIGTERM');
  const exitCode = await new Promise<number | null>((r) => gw.child.once('exit', (code) => r(code)));
  await Promise.all([east.close(), west.close()]);
  rmSync(dir, { recursive: true, force: true });

  const start = warm as Sample | null;
  const problems: string[] = [];
  if (start === null) problems.push('no warm-up sample');
  else {
    const grew = end.rss_bytes - start.rss_bytes;
    if (grew > MAX_RSS_GROWTH_BYTES) problems.push(`resident memory grew ${Math.round(grew / 1048576)} MiB after warm-up`);
    if (end.open_fds - start.open_fds > MAX_FD_GROWTH) problems.push(`open descriptors grew from ${start.open_fds} to ${end.open_fds}`);
  }
  if (counts.failures.length > 0) problems.push(`${counts.failures.length} request(s) failed: ${counts.failures.slice(0, 5).join(' | ')}`);
  if (exitCode !== 0) problems.push(`the gateway exited with ${exitCode} on SIGTERM`);

  const report = { seconds, counts: { ...counts, failures: counts.failures.length }, warm: start, end, problems };
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench/results/soak-latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
  process.stdout.write(
    [
      `requests: ${counts.plain} plain (${counts.failedOver} failed over), ${counts.streamed} streamed, ${counts.aborted} left by their client; ${counts.reloads} reloads`,
      `after warm-up: rss ${start === null ? '-' : mib(start.rss_bytes)}, fds ${start?.open_fds ?? '-'}, event-loop p99 ${start?.event_loop_p99_ms ?? '-'} ms`,
      `at the end:    rss ${mib(end.rss_bytes)}, fds ${end.open_fds}, event-loop p99 ${end.event_loop_p99_ms} ms`,
      problems.length === 0 ? 'soak: PASS' : `soak: FAIL\n  ${problems.join('\n  ')}`,
      '',
    ].join('\n'),
  );
  process.exit(problems.length === 0 ? 0 : 1);
}

main().catch((err: unknown) => {
  process.stderr.write(`soak: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
