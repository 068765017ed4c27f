import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Message, StreamResponse, Task } from '@a2a-js/sdk';
import { Role } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from './gateway-process.js';

// What the A2A fleet and hostile-upstream tests share: an agent provider over a mock agent,
// the official SDK client pointed at the gateway's /a2a/<agent>, raw JSON-RPC calls (to read
// the HTTP status and `error.data.code` an SDK error hides), what a mock agent received, and
// a bare node:http agent whose JSON-RPC answer each test writes itself.

export const A2A_VERSION_HEADER = { 'a2a-version': '1.0' } as const;

/** A `type: a2a` provider for one of a mock's agents (`/instant`, `/worker`, `/asker`, `/failer`). */
export function agentProvider(baseUrl: string, agent: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'a2a', base_url: `${baseUrl}/${agent}`, timeout_ms: 5000, connect_timeout_ms: 1000, ...extra };
}

/** A fetch that authenticates every request with `key`, as a client of the gateway must. */
function keyedFetch(key: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
}

/** The official SDK client for `/a2a/<agent>` on one gateway, built from the card the gateway serves. */
export async function agentClient(gw: GatewayProcess, key: string, agent: string): Promise<Client> {
  const fetchImpl = keyedFetch(key);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  // The card's whole URL: the resolver would otherwise join /.well-known/... to the origin, dropping /a2a/<agent>.
  return factory.createFromUrl(`${gw.url}/a2a/${agent}/.well-known/agent-card.json`, '');
}

/** A user message for the SDK client; `ids` continue a task or a context. */
export function userMessage(text: string, ids: { taskId?: string; contextId?: string } = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: ids.contextId ?? '',
    taskId: ids.taskId ?? '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: {}, filename: '', mediaType: 'text/plain' }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

/** SendMessage params for the SDK client; `returnImmediately` answers with the task while it still runs. */
export function sendParams(text: string, ids: { taskId?: string; contextId?: string } = {}, returnImmediately = false) {
  const configuration = returnImmediately
    ? { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true }
    : undefined;
  return { tenant: '', message: userMessage(text, ids), configuration, metadata: {} };
}

/** A user message as A2A 1.0 JSON-RPC carries it (ProtoJSON), for raw calls. */
export function wireMessage(text: string, ids: { taskId?: string; contextId?: string } = {}): Record<string, unknown> {
  return { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...ids };
}

export interface RpcAnswer {
  readonly status: number;
  readonly body: {
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: Record<string, unknown> };
  };
}

/** One JSON-RPC request to `/a2a/<agent>`, answered with JSON (not a stream). */
export async function rpc(gw: GatewayProcess, key: string, agent: string, method: string, params: unknown): Promise<RpcAnswer> {
  const res = await fetch(`${gw.url}/a2a/${agent}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...A2A_VERSION_HEADER },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as RpcAnswer['body'] };
  } catch {
    throw new Error(`${method} answered ${res.status} with a body that is not JSON: ${text.slice(0, 300)}`);
  }
}

/** The JSON-RPC responses of an SSE stream (each `data:` line), read to its end. */
export async function readEvents(res: Response): Promise<Array<Record<string, unknown>>> {
  const text = await res.text();
  const events: Array<Record<string, unknown>> = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    if (data !== '') events.push(JSON.parse(data) as Record<string, unknown>);
  }
  return events;
}

/** A streaming JSON-RPC request (SendStreamingMessage, SubscribeToTask): the response, its body not yet read. */
export function rpcStream(
  gw: GatewayProcess,
  key: string,
  agent: string,
  method: string,
  params: unknown,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${gw.url}/a2a/${agent}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...A2A_VERSION_HEADER,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    ...(signal === undefined ? {} : { signal }),
  });
}

/** The task a SendMessage result or stream event carries (the task itself, or the task an update names). */
export function taskOf(result: Message | Task): Task {
  if (!('status' in result)) throw new Error(`expected a task, got a message: ${JSON.stringify(result)}`);
  return result;
}

/** The task and context ids an SDK stream event names. */
export function idsOfEvent(event: StreamResponse): { taskId: string; contextId: string } | null {
  const p = event.payload;
  if (p === undefined) return null;
  if (p.$case === 'task') return { taskId: p.value.id, contextId: p.value.contextId };
  return { taskId: p.value.taskId, contextId: p.value.contextId };
}

/** How many JSON-RPC requests (card fetches aside) a mock's agent received since its last reset. */
export function rpcCount(mock: MockProvider, agent?: string): number {
  let n = 0;
  for (const [key, count] of Object.entries(mock.a2aStats().requests)) {
    const [name, method] = key.split(' ');
    if (method !== 'card' && (agent === undefined || name === agent)) n += count;
  }
  return n;
}

/** A request a bare agent received: its JSON-RPC method, and whether its socket has closed since. */
export interface BareCall {
  readonly method: string;
  readonly body: Record<string, unknown>;
  readonly socketClosed: Promise<void>;
}

/** How a bare agent answers one JSON-RPC call (the card is its own). */
export type BareAnswer = (call: BareCall, res: ServerResponse, req: IncomingMessage) => void;

export interface BareAgent {
  /** The provider's base_url (the card is at `/.well-known/agent-card.json` under it). */
  readonly baseUrl: string;
  readonly calls: BareCall[];
  /** Card fetches so far. */
  readonly cardReads: number;
  answer: BareAnswer;
  /** Replaces the card's bytes (null = the agent's own 1.0 card). */
  cardBody: string | null;
  close(): Promise<void>;
}

/** A 1.0 agent card naming a JSON-RPC interface at `url`. */
export function bareCard(url: string): string {
  return JSON.stringify({
    name: 'bare',
    description: 'a bare node:http agent for hostile-upstream tests',
    version: '1.0.0',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'bare', name: 'bare', description: 'answers as the test says', tags: ['test'] }],
  });
}

/**
 * A raw node:http agent: it serves a card at `/.well-known/agent-card.json` and hands every
 * POST (body read and parsed) to `answer`, which the test sets. Loopback only; every socket
 * is destroyed on close, so a test that leaves a stream open still ends.
 */
export async function startBareAgent(answer: BareAnswer): Promise<BareAgent> {
  const sockets = new Set<Socket>();
  const state = { answer, cardBody: null as string | null, cardReads: 0 };
  const calls: BareCall[] = [];
  let url = '';
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
      state.cardReads += 1;
      req.resume();
      const body = state.cardBody ?? bareCard(url);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
      res.end(body);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        // a test that sends no JSON sees method ''
      }
      const socket = req.socket;
      const socketClosed = new Promise<void>((resolve) => {
        if (socket.destroyed) resolve();
        else socket.once('close', () => resolve());
      });
      const call: BareCall = { method: typeof body.method === 'string' ? body.method : '', body, socketClosed };
      calls.push(call);
      state.answer(call, res, req);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl: url,
    calls,
    get cardReads() {
      return state.cardReads;
    },
    get answer() {
      return state.answer;
    },
    set answer(a: BareAnswer) {
      state.answer = a;
    },
    get cardBody() {
      return state.cardBody;
    },
    set cardBody(b: string | null) {
      state.cardBody = b;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A 1.0 task in ProtoJSON, as a bare agent writes it. */
export function wireTask(taskId: string, contextId: string, state = 'TASK_STATE_WORKING'): Record<string, unknown> {
  return { id: taskId, contextId, status: { state }, artifacts: [], history: [] };
}
