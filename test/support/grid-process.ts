import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { waitUntil } from './observe.js';

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');

// `switchyard grid` as a real child process, observed from outside: its JSON log lines,
// GET /status and GET /metrics on its --listen address.

export interface GridStatusBody {
  readonly inventory: { path: string; value: Record<string, unknown>; last_error: { code: string; message: string } | null };
  readonly rendered_revision: string | null;
  readonly published_revision: string | null;
  readonly source_generation: number | null;
  readonly providers: ReadonlyArray<{
    cluster: string;
    state: string;
    health: { verdict: string; last_error: { message: string } | null } | null;
  }>;
}

export interface GridProcess {
  readonly url: string;
  readonly child: ChildProcess;
  readonly output: string[];
  logs(): Array<Record<string, unknown>>;
  waitForLog(match: (line: Record<string, unknown>) => boolean, what: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  status(): Promise<GridStatusBody>;
  metrics(): Promise<string>;
  /** SIGTERM, then waits for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

export async function startGridProcess(inventory: string, dir: string, extra: string[] = []): Promise<GridProcess> {
  const child = spawn(process.execPath, [CLI, 'grid', '--inventory', inventory, '--dir', dir, '--listen', '127.0.0.1:0', ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  let partial = '';
  const onData = (chunk: Buffer): void => {
    partial += chunk.toString('utf8');
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    output.push(...lines.filter((l) => l !== ''));
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((r) =>
    child.once('exit', (code) => {
      exitCode = code;
      r(code);
    }),
  );
  const logs = (): Array<Record<string, unknown>> =>
    output.flatMap((line) => {
      try {
        return line.startsWith('{') ? [JSON.parse(line) as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  const waitForLog = async (match: (l: Record<string, unknown>) => boolean, what: string, timeoutMs = 15_000) => {
    let found: Record<string, unknown> | undefined;
    await waitUntil(
      () => {
        if (exitCode !== undefined) throw new Error(`grid exited (${exitCode}) before ${what}:\n${output.join('\n')}`);
        found = logs().find(match);
        return found !== undefined;
      },
      what,
      timeoutMs,
    );
    return found as Record<string, unknown>;
  };
  const running = await waitForLog((l) => l.msg === 'grid running', 'the grid is running');
  const url = running.url as string;
  return {
    url,
    child,
    output,
    logs,
    waitForLog,
    status: async () => (await (await fetch(`${url}/status`)).json()) as GridStatusBody,
    metrics: async () => (await fetch(`${url}/metrics`)).text(),
    async stop() {
      if (exitCode === undefined) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
