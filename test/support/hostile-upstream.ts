import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

// An upstream that misbehaves on purpose (ADR 0013), for the cases a well-behaved mock never
// shows: it hangs before or after its headers, trickles a body, streams without end, sends
// invalid JSON, closes mid-body, sends a huge body, or answers 429 with retry-after: 30. Loopback only; every timer it starts
// is cleared when the client or the fixture goes away, so nothing outlives a test.

export type HostileMode =
  | 'hang_before_headers'
  | 'hang_after_headers'
  | 'trickle_body'
  | 'endless_sse'
  | 'invalid_json'
  | 'close_mid_body'
  | 'huge_body'
  | 'rate_limited';

export interface HostileUpstream {
  /** `http://127.0.0.1:PORT/v1`, for a provider's base_url. */
  readonly baseUrl: string;
  /** The mode for the requests that follow. */
  mode: HostileMode;
  /** Requests received so far. */
  readonly requests: number;
  close(): Promise<void>;
}

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-hostile',
  object: 'chat.completion',
  created: 0,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hostile' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
});

/** `trickleMs`: the pause between the bytes of `trickle_body` (default 1000 ms). */
export async function startHostileUpstream(mode: HostileMode, options: { trickleMs?: number } = {}): Promise<HostileUpstream> {
  const trickleMs = options.trickleMs ?? 1000;
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let requests = 0;
  const state = { mode };

  const every = (ms: number, res: ServerResponse, tick: () => boolean): void => {
    const t = setInterval(() => {
      if (res.destroyed || !tick()) {
        clearInterval(t);
        timers.delete(t);
      }
    }, ms);
    timers.add(t);
    res.on('close', () => {
      clearInterval(t);
      timers.delete(t);
    });
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    requests += 1;
    req.resume();
    req.on('end', () => {
      switch (state.mode) {
        case 'hang_before_headers':
          return; // never answers
        case 'hang_after_headers':
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(COMPLETION.length) });
          res.flushHeaders();
          return; // the body never comes
        case 'trickle_body': {
          // One byte per trickleMs: with a short pause never silent for long, never done in time.
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(COMPLETION.length) });
          let i = 0;
          every(trickleMs, res, () => {
            res.write(COMPLETION.slice(i, i + 1));
            i += 1;
            return i < COMPLETION.length;
          });
          return;
        }
        case 'endless_sse': {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.flushHeaders();
          const chunk = (content: string) =>
            `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
          res.write(chunk(''));
          every(50, res, () => {
            res.write(chunk('x'));
            return true;
          });
          return;
        }
        case 'invalid_json':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"id": "chatcmpl-broken", "choices": [');
          return;
        case 'close_mid_body':
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(COMPLETION.length) });
          res.write(COMPLETION.slice(0, 20), () => res.socket?.destroy());
          return;
        case 'rate_limited':
          res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' });
          res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit', code: 'rate_limited' } }));
          return;
        case 'huge_body': {
          // 8 MiB: past the gateway's 1 MiB buffering bound, so it is relayed as it comes.
          const block = Buffer.alloc(64 * 1024, 0x20);
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(8 * 1024 * 1024 + COMPLETION.length) });
          let sent = 0;
          const pump = (): void => {
            while (sent < 128) {
              sent += 1;
              if (!res.write(block)) {
                res.once('drain', pump);
                return;
              }
            }
            res.end(COMPLETION);
          };
          pump();
          return;
        }
      }
    });
  };

  const server: Server = createServer(handle);
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    get mode() {
      return state.mode;
    },
    set mode(m: HostileMode) {
      state.mode = m;
    },
    get requests() {
      return requests;
    },
    async close() {
      for (const t of timers) clearInterval(t);
      timers.clear();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
