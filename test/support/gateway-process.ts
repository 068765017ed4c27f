import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');

export interface GatewayProcess {
  readonly url: string;
  readonly adminUrl: string | null;
  readonly child: ChildProcess;
  readonly configPath: string;
  readonly dir: string;
  /** Every line the process wrote, stdout and stderr, in order. */
  readonly output: string[];
  /** Parsed JSON log lines. */
  logs(): Array<Record<string, unknown>>;
  /** Rewrites the config file (an object is written as YAML). */
  writeConfig(config: object | string): void;
  /** Resolves with the first log line that matches, waiting up to timeoutMs. */
  waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** SIGTERM, then waits for exit; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

export function configText(config: object | string): string {
  return typeof config === 'string' ? config : stringify(config);
}

/**
 * Starts `node dist/cli.js serve` as a real child process on a config written to a fresh
 * temp dir, and waits for its "listening" log line. Listen on 127.0.0.1:0 to get a free port.
 */
export async function startGatewayProcess(
  config: object | string,
  options: { env?: NodeJS.ProcessEnv; args?: string[]; dir?: string; fileName?: string } = {},
): Promise<GatewayProcess> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'switchyard-test-'));
  const configPath = join(dir, options.fileName ?? 'gateway.yaml');
  writeFileSync(configPath, configText(config));
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configPath, ...(options.args ?? [])], {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const waiters: Array<() => void> = [];
  const onData = (chunk: Buffer, partial: { text: string }): void => {
    partial.text += chunk.toString('utf8');
    const lines = partial.text.split('\n');
    partial.text = lines.pop() ?? '';
    for (const line of lines) if (line !== '') output.push(line);
    for (const w of waiters.splice(0)) w();
  };
  const out = { text: '' };
  const err = { text: '' };
  child.stdout!.on('data', (c: Buffer) => onData(c, out));
  child.stderr!.on('data', (c: Buffer) => onData(c, err));
  const exited = new Promise<number | null>((res) =>
    child.once('exit', (code) => {
      for (const w of waiters.splice(0)) w();
      res(code);
    }),
  );
  let exitCode: number | null | undefined;
  void exited.then((c) => (exitCode = c));

  const logs = (): Array<Record<string, unknown>> => {
    const parsed: Array<Record<string, unknown>> = [];
    for (const line of output) {
      if (!line.startsWith('{')) continue;
      try {
        parsed.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
    return parsed;
  };
  const waitForLog = async (match: (line: Record<string, unknown>) => boolean, timeoutMs = 10_000): Promise<Record<string, unknown>> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = logs().find(match);
      if (found !== undefined) return found;
      if (exitCode !== undefined) throw new Error(`gateway exited (${exitCode}) before the expected log line:\n${output.join('\n')}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        // A busy test process may reach its deadline before reading what the child has
        // already written: let one round of I/O in before giving up.
        await new Promise<void>((r) => setImmediate(r));
        const late = logs().find(match);
        if (late !== undefined) return late;
        throw new Error(`timed out waiting for a log line:\n${output.slice(-20).join('\n')}`);
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 200));
        waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  };
  // A start that never reaches "listening" must not leave its process behind: a live child
  // keeps the test file's process (and so the whole run) from ever exiting.
  const listening = await waitForLog((l) => l.msg === 'listening', 30_000).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    url: listening.url as string,
    adminUrl: (listening.admin_url as string | null) ?? null,
    child,
    configPath,
    dir,
    output,
    logs,
    writeConfig: (c) => writeFileSync(configPath, configText(c)),
    waitForLog,
    exited,
    async stop(signal = 'SIGTERM') {
      if (exitCode === undefined) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Runs the CLI to completion (for validate, or a serve that must fail) and collects its output. */
export function runCli(args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

/** A minimal valid config over the given mock base URLs, with a port-0 listener. */
export function baseConfig(
  providers: Record<string, string>,
  routes: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000, ...((extra.server as object) ?? {}) },
    providers: Object.fromEntries(
      // The mock's own x-mock-provider header is an independent witness of which upstream answered.
      Object.entries(providers).map(([name, baseUrl]) => [
        name,
        { type: 'openai', base_url: baseUrl, timeout_ms: 5000, expose_headers: ['x-mock-provider'] },
      ]),
    ),
    routing: { routes },
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== 'server')),
  };
}

/**
 * A config whose YAML aliases expand exponentially (11 aliases of 11 aliases of one mapping),
 * with a valid `east` at `eastBaseUrl` and both listeners on free ports.
 */
export function aliasBombConfig(eastBaseUrl: string): string {
  return `server: { listen: "127.0.0.1:0", admin_listen: "127.0.0.1:0" }
providers:
  east: { type: openai, base_url: "${eastBaseUrl}", headers: &h { a: b } }
  west: { type: openai, base_url: "http://127.0.0.1:2/v1", headers: &h2 { a: *h, b: *h, c: *h, d: *h, e: *h, f: *h, g: *h, h: *h, i: *h, j: *h, k: *h } }
  central: { type: openai, base_url: "http://127.0.0.1:3/v1", headers: { a: *h2, b: *h2, c: *h2, d: *h2, e: *h2, f: *h2, g: *h2, h: *h2, i: *h2, j: *h2, k: *h2 } }
routing: { routes: { m: { candidates: [ { provider: east } ] } } }
`;
}
