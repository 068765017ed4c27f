import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { MockProvider } from '../../src/mock/index.js';

// Helpers for process-level tests that observe a gateway from outside: polling on state
// (never on elapsed time), reading /metrics, reading SSE streams event by event.

/** Polls `check` every 20 ms until it holds; throws after `timeoutMs` naming what it waited for. */
export async function waitUntil(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) throw new Error(`timed out waiting until ${what}`);
    await delay(20);
  }
}

/** How many chat completions a mock provider has received (since its last reset). */
export function chatCount(mock: MockProvider): number {
  return mock.stats().requests['POST /v1/chat/completions'] ?? 0;
}

/** GET /metrics on the gateway's API listener. */
export async function scrapeMetrics(gatewayUrl: string): Promise<string> {
  const res = await fetch(`${gatewayUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return res.text();
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const re = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text))
    labels[m[1] as string] = (m[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  return labels;
}

/**
 * The value of the first sample of `name` whose labels include every pair in `labels`
 * (other labels may be present), or undefined when there is no such series.
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    let rest: string;
    let got: Record<string, string> = {};
    if (line.startsWith(`${name}{`)) {
      const close = line.lastIndexOf('}');
      got = parseLabels(line.slice(name.length + 1, close));
      rest = line.slice(close + 1);
    } else if (line.startsWith(`${name} `)) {
      rest = line.slice(name.length);
    } else {
      continue;
    }
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(rest.trim().split(/\s+/)[0]);
  }
  return undefined;
}

/** A loopback port that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The data payloads of a whole SSE body, in order (`[DONE]` stays a string). */
export function sseData(text: string): string[] {
  const out: string[] = [];
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue;
    const data = block
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    out.push(data);
  }
  return out;
}

/**
 * Reads an SSE response one event at a time, so a test can act between events (check the
 * upstream, abort, signal the gateway) and see exactly what had arrived at that point.
 */
export class SseReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buffer = '';
  /** Everything received so far, raw. */
  text = '';
  /** True once the body has ended (cleanly or not). */
  ended = false;
  /** Set when reading the body failed (the connection was cut without a clean end). */
  error: unknown = undefined;

  constructor(res: Response) {
    if (res.body === null) throw new Error('response has no body');
    this.#reader = res.body.getReader();
  }

  /** The next event's data payload, or null once the body has ended. */
  async next(): Promise<string | null> {
    for (;;) {
      const end = this.#buffer.indexOf('\n\n');
      if (end !== -1) {
        const block = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        if (block.trim() === '') continue;
        return sseData(`${block}\n\n`)[0] ?? '';
      }
      if (this.ended) return null;
      try {
        const { done, value } = await this.#reader.read();
        if (done) {
          this.ended = true;
          continue;
        }
        const chunk = this.#decoder.decode(value, { stream: true });
        this.text += chunk;
        this.#buffer += chunk;
      } catch (err) {
        this.error = err;
        this.ended = true;
      }
    }
  }

  /** Every remaining event's data payload, until the body ends. */
  async rest(): Promise<string[]> {
    const out: string[] = [];
    for (let data = await this.next(); data !== null; data = await this.next()) out.push(data);
    return out;
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => undefined);
  }
}

/** How many times each value occurs: provider names from a run of responses, say. */
export function tally(list: readonly string[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const p of list) t[p] = (t[p] ?? 0) + 1;
  return t;
}

/** Resolves true when a TCP connection to `url` is refused, false when it is accepted (and closes it). */
export function connectionRefused(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}
