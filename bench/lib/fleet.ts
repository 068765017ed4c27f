import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';

const CLI = resolve(import.meta.dirname, '../../dist/cli.js');
const MINIMAL_PROXY = resolve(import.meta.dirname, '../minimal-proxy.mjs');
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;

export interface MockProcess {
  readonly name: string;
  readonly pid: number;
  /** `http://127.0.0.1:PORT/v1` */
  readonly baseUrl: string;
  /** Requests the mock has answered on /v1, from GET /__mock/stats. */
  total(): Promise<number>;
}

export interface MinimalProxyProcess {
  readonly pid: number;
  /** Its origin, e.g. http://127.0.0.1:40123. */
  readonly url: string;
}

/**
 * Headers bench/minimal-proxy.mjs adds beyond its own content-type and content-length, in
 * order, on the upstream request and on the response; a null value is the request's id (a
 * fresh UUID per request, the same on both hops).
 */
export interface WireHeaders {
  readonly upstream: readonly (readonly [string, string | null])[];
  readonly response: readonly (readonly [string, string | null])[];
}

export interface GatewayProcess {
  readonly name: string;
  readonly pid: number;
  readonly url: string;
  readonly adminUrl: string | null;
  readonly configPath: string;
  /** Where the gateway's stdout (its JSON logs, access log included) goes. */
  readonly logPath: string;
  writeConfig(config: object): void;
}

export interface GatewayStartOptions {
  /** Run under `node --cpu-prof`; the profile is written here as `<name>.cpuprofile` when the gateway exits. */
  readonly cpuProfileDir?: string | null;
}

interface Member {
  readonly label: string;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  stderr: string;
}

/** Every process still running, and every temp dir still there, when the bench process exits, however it exits. */
const everyone = new Set<ChildProcess>();
const dirs = new Set<string>();
process.on('exit', () => {
  for (const child of everyone) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * The processes one scenario runs: mock providers and gateways, each a real `node
 * dist/cli.js` child on 127.0.0.1 with a port the OS picked. stop() ends them all, and a
 * process 'exit' hook SIGKILLs any survivor if the bench itself dies first.
 */
export class Fleet {
  readonly dir: string;
  readonly #members: Member[] = [];

  constructor(label: string) {
    this.dir = mkdtempSync(join(tmpdir(), `switchyard-bench-${label}-`));
    dirs.add(this.dir);
  }

  async startMock(name: string, args: readonly string[] = []): Promise<MockProcess> {
    const member = this.#spawn(`mock ${name}`, [CLI, 'mock-provider', '--port', String(nextPort()), '--name', name, ...args], 'pipe');
    const baseUrl = await printedUrl(member, `mock ${name}`);
    const origin = new URL(baseUrl).origin;
    return {
      name,
      pid: member.child.pid!,
      baseUrl,
      async total() {
        const res = await fetch(`${origin}/__mock/stats`);
        return ((await res.json()) as { total: number }).total;
      },
    };
  }

  /**
   * The bare Node proxy (bench/minimal-proxy.mjs) in front of `upstreamBaseUrl`. With `wire`
   * it sends those headers on both hops (the gateway's, read off a smoke request).
   */
  async startMinimalProxy(upstreamBaseUrl: string, wire?: WireHeaders, options: GatewayStartOptions = {}): Promise<MinimalProxyProcess> {
    const label = wire === undefined ? 'minimal proxy' : 'minimal proxy (same wire)';
    // Profiled like the gateway, so that both profiles of one run can be set side by side.
    const profile =
      options.cpuProfileDir == null
        ? []
        : [
            '--cpu-prof',
            '--cpu-prof-dir',
            options.cpuProfileDir,
            '--cpu-prof-name',
            `${wire === undefined ? 'minimal-proxy' : 'minimal-proxy-same-wire'}.cpuprofile`,
          ];
    const args = [...profile, MINIMAL_PROXY, '--upstream', upstreamBaseUrl, '--port', String(nextPort())];
    if (wire !== undefined) args.push('--wire', JSON.stringify(wire));
    const member = this.#spawn(label, args, 'pipe');
    return { pid: member.child.pid!, url: await printedUrl(member, label) };
  }

  /**
   * Starts `switchyard serve` on `config` (written as YAML). Its stdout goes to a file, not
   * a pipe: the access log is then as cheap as it gets, and no reader in the bench process
   * competes with the load generator for a core.
   */
  async startGateway(name: string, config: object, options: GatewayStartOptions = {}): Promise<GatewayProcess> {
    const configPath = join(this.dir, `${name}.yaml`);
    const logPath = join(this.dir, `${name}.log`);
    const ports = listenPorts();
    writeFileSync(configPath, stringify(withPorts(config, ports)));
    const logFd = openSync(logPath, 'w');
    let member: Member;
    try {
      const profile =
        options.cpuProfileDir == null
          ? []
          : ['--cpu-prof', '--cpu-prof-dir', options.cpuProfileDir, '--cpu-prof-name', `${name}.cpuprofile`];
      member = this.#spawn(`gateway ${name}`, [...profile, CLI, 'serve', '--config', configPath], logFd);
    } finally {
      closeSync(logFd);
    }
    const listening = await waitForListening(logPath, member);
    return {
      name,
      pid: member.child.pid!,
      url: listening.url,
      adminUrl: listening.adminUrl,
      configPath,
      logPath,
      writeConfig: (c) => writeFileSync(configPath, stringify(withPorts(c, ports))),
    };
  }

  /**
   * `switchyard grid` publishing `dir` (kubelet layout) from `inventoryPath`; resolves once it
   * has published its first revision and logged "grid running". Its log goes to `<name>.log`.
   */
  async startGrid(name: string, inventoryPath: string, dir: string): Promise<{ readonly pid: number; readonly logPath: string }> {
    const logPath = join(this.dir, `${name}.log`);
    const logFd = openSync(logPath, 'w');
    let member: Member;
    try {
      member = this.#spawn(`grid ${name}`, [CLI, 'grid', '--inventory', inventoryPath, '--dir', dir, '--layout', 'kubelet'], logFd);
    } finally {
      closeSync(logFd);
    }
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!readFileSync(logPath, 'utf8').includes('"msg":"grid running"')) {
      if (member.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`${member.label} did not start:\n${readFileSync(logPath, 'utf8').slice(-4000)}${member.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { pid: member.child.pid!, logPath };
  }

  /** SIGTERM to every member (gateways drain and exit 0), SIGKILL for any that lingers. */
  async stop(): Promise<void> {
    await Promise.all(
      this.#members.map(async (m) => {
        if (m.child.exitCode !== null || m.child.signalCode !== null) return;
        m.child.kill('SIGTERM');
        const timer = setTimeout(() => m.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await m.exited;
        clearTimeout(timer);
      }),
    );
  }

  /** Members that exited on their own before stop(): a crash during a measurement. */
  casualties(): string[] {
    return this.#members
      .filter((m) => m.child.exitCode !== null && m.child.exitCode !== 0)
      .map((m) => `${m.label} exited with code ${m.child.exitCode}${m.stderr === '' ? '' : `: ${m.stderr.trim().slice(-2000)}`}`);
  }

  removeDir(): void {
    rmSync(this.dir, { recursive: true, force: true });
    dirs.delete(this.dir);
  }

  #spawn(label: string, args: readonly string[], stdout: 'pipe' | number): Member {
    const cpu = label.startsWith('mock') ? '0' : '1';
    const [command, argv] = pinned ? ['taskset', ['-c', cpu, process.execPath, ...args]] : [process.execPath, args];
    const child = spawn(command, argv, { stdio: ['ignore', stdout, 'pipe'], cwd: this.dir });
    everyone.add(child);
    const member: Member = {
      label,
      child,
      stderr: '',
      exited: new Promise((res) =>
        child.once('exit', () => {
          everyone.delete(child);
          res();
        }),
      ),
    };
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      if (member.stderr.length < 64_000) member.stderr += chunk;
    });
    this.#members.push(member);
    return member;
  }
}

/** Resolves with the first `listening on http://…` URL a child prints on stdout. */
function printedUrl(member: Member, label: string): Promise<string> {
  return new Promise<string>((res, rej) => {
    let out = '';
    const timer = setTimeout(
      () => rej(new Error(`${label} did not start within ${START_TIMEOUT_MS} ms:\n${out}${member.stderr}`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer): void => {
      out += chunk.toString('utf8');
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      member.child.stdout!.off('data', onData);
      // Nothing else is printed; keep the pipe drained regardless.
      member.child.stdout!.resume();
      res(m[1] as string);
    };
    member.child.stdout!.on('data', onData);
    void member.exited.then(() => {
      clearTimeout(timer);
      rej(new Error(`${label} exited before listening:\n${out}${member.stderr}`));
    });
  });
}

let portBase: number | null = null;
let pinned = false;

/**
 * `--pin`: on a 2-core machine the scheduler may put the process under test on the core
 * the load generator or the mock is using, and a run then measures placement rather than
 * the gateway (a gateway with the access log off measured 35% slower than one with it on).
 * Pinned, the bench process (the load generator) and the mocks share CPU 0 and every
 * process under test (gateways, the minimal proxy) gets CPU 1, one at a time.
 */
export function usePinning(): void {
  execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  pinned = true;
}

/**
 * `--port-base N`: every process the bench starts listens on N, N+1, … instead of a port
 * the OS picks, for a machine whose firewall or neighbours need known ports.
 */
export function usePortBase(base: number): void {
  portBase = base;
}

function nextPort(): number {
  if (portBase === null) return 0;
  if (portBase > 65535) throw new Error('--port-base: ran out of ports below 65536');
  return portBase++;
}

function listenPorts(): { listen: number; admin: number } {
  return { listen: nextPort(), admin: nextPort() };
}

/** Puts the assigned ports into a config whose listeners ask for port 0. */
function withPorts(config: object, ports: { listen: number; admin: number }): object {
  const server = (config as { server?: Record<string, unknown> }).server;
  if (server === undefined || portBase === null) return config;
  const assign = (value: unknown, port: number): unknown =>
    typeof value === 'string' && value.endsWith(':0') ? `${value.slice(0, -1)}${port}` : value;
  const patched: Record<string, unknown> = { ...server, listen: assign(server.listen, ports.listen) };
  if (server.admin_listen !== undefined) patched.admin_listen = assign(server.admin_listen, ports.admin);
  return { ...config, server: patched };
}

async function waitForListening(logPath: string, member: Member): Promise<{ url: string; adminUrl: string | null }> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let exited = false;
  void member.exited.then(() => (exited = true));
  for (;;) {
    const text = readFileSync(logPath, 'utf8');
    for (const line of text.split('\n')) {
      if (!line.includes('"listening"')) continue;
      const parsed = JSON.parse(line) as { msg?: string; url?: string; admin_url?: string | null };
      if (parsed.msg === 'listening' && typeof parsed.url === 'string') return { url: parsed.url, adminUrl: parsed.admin_url ?? null };
    }
    if (exited || Date.now() > deadline) {
      throw new Error(
        `${member.label} ${exited ? `exited (${member.child.exitCode})` : 'did not log "listening"'}:\n${text.slice(-4000)}${member.stderr}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
