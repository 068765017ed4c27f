import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentCard, Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import { SendMessageRequest } from '@a2a-js/sdk';
import { type Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';

// A2A clients of the official SDK against an agent URL (the gateway's /a2a/<agent> or a mock
// agent's own), each authenticated with a key, and what a test compares of their answers: a
// meaning (states, roles, texts) free of the ids each agent makes up.

export type ClientVersion = '1.0' | '0.3';

const CARD_PATH = '/.well-known/agent-card.json';

/** fetch with the key as a bearer (none when null) and any extra headers. */
export function keyedFetch(key: string | null, headers: Record<string, string> = {}): typeof fetch {
  return (input, init) => {
    const merged = new Headers(init?.headers);
    if (key !== null) merged.set('authorization', `Bearer ${key}`);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    return fetch(input, { ...init, headers: merged });
  };
}

/**
 * A client of the agent at `agentUrl`, found through its card. 1.0: the SDK's factory and
 * resolver as they come. 0.3: the card as a 0.3 client asks for it (no A2A-Version), read
 * with the SDK's 0.3 card reader, so the factory picks its 0.3 transport.
 */
export async function agentClient(
  agentUrl: string,
  key: string | null,
  version: ClientVersion,
  opts: { polling?: boolean } = {},
): Promise<Client> {
  const fetchImpl = keyedFetch(key);
  const clientConfig = { polling: opts.polling ?? false };
  if (version === '1.0') {
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      clientConfig,
    });
    return factory.createFromUrl(`${agentUrl}${CARD_PATH}`, '');
  }
  const res = await fetchImpl(`${agentUrl}${CARD_PATH}`);
  if (res.status !== 200) throw new Error(`card of ${agentUrl}: HTTP ${res.status}`);
  const card = parseLegacyAgentCard(await res.json());
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
    clientConfig,
  });
  return factory.createFromAgentCard(card as AgentCard);
}

let serial = 0;

/** A user's message with text, on a task or context when given. */
export function userMessage(text: string, on: { taskId?: string; contextId?: string } = {}): SendMessageRequest {
  serial += 1;
  return SendMessageRequest.fromJSON({
    message: {
      messageId: `user-${process.pid}-${serial}`,
      role: 'ROLE_USER',
      parts: [{ text }],
      ...(on.taskId === undefined ? {} : { taskId: on.taskId }),
      ...(on.contextId === undefined ? {} : { contextId: on.contextId }),
    },
  });
}

export function isMessage(result: Message | Task): result is Message {
  return 'messageId' in result;
}

export function textsOf(parts: readonly Part[] | undefined): string[] {
  return (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).filter((t) => t !== '');
}

/** A result's meaning: a message's role and texts, or a task's state, status text and artifacts. */
export function meaningOf(result: Message | Task): unknown {
  if (isMessage(result)) return { message: { role: result.role, texts: textsOf(result.parts) } };
  return {
    task: {
      state: result.status?.state,
      status: textsOf(result.status?.message?.parts),
      artifacts: (result.artifacts ?? []).map((a) => ({ name: a.name, texts: textsOf(a.parts) })),
    },
  };
}

/** A stream event's meaning, as meaningOf for its member. */
export function eventMeaning(event: StreamResponse): unknown {
  const p = event.payload;
  if (p === undefined) return null;
  switch (p.$case) {
    case 'message':
    case 'task':
      return meaningOf(p.value);
    case 'statusUpdate':
      return { statusUpdate: { state: p.value.status?.state, texts: textsOf(p.value.status?.message?.parts) } };
    case 'artifactUpdate':
      return { artifactUpdate: { name: p.value.artifact?.name, texts: textsOf(p.value.artifact?.parts) } };
  }
}

/** Every event of a stream, up to a bound (a stream that never ends fails the test instead of hanging it). */
export async function collect(events: AsyncIterable<StreamResponse>, max = 200): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const event of events) {
    out.push(event);
    if (out.length >= max) throw new Error(`a stream went past ${max} events`);
  }
  return out;
}

/** The task id an event names. */
export function taskIdOf(event: StreamResponse): string | undefined {
  const p = event.payload;
  if (p === undefined) return undefined;
  if (p.$case === 'task') return p.value.id;
  if (p.$case === 'message') return p.value.taskId || undefined;
  return p.value.taskId;
}

export interface RpcReply {
  readonly status: number;
  readonly contentType: string | null;
  readonly text: string;
  readonly body: any;
}

/** One raw POST (a JSON-RPC body or anything else) to an agent URL. */
export async function postRpc(url: string, body: unknown, headers: Record<string, string> = {}): Promise<RpcReply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the test says what it expected
  }
  return { status: res.status, contentType: res.headers.get('content-type'), text, body: parsed };
}

export interface SecuredAgent {
  /** The agent's base URL (its card at `/.well-known/agent-card.json`, JSON-RPC at `/rpc`). */
  readonly baseUrl: string;
  /** The Authorization header of each JSON-RPC request, in order. */
  readonly authorizations: ReadonlyArray<string | null>;
  close(): Promise<void>;
}

/** What only the secured agent's own card says: none of it may reach a client of the gateway. */
export const UPSTREAM_SECURITY_MARKS = ['upstreamOauth', 'upstreamKey', 'x-upstream-key', 'idp.upstream.example'] as const;

/**
 * A 1.0 agent whose card demands its own authentication (OAuth2 for the agent, an API key
 * header for its skill), which answers SendMessage with a message "secured pong". The mock's
 * cards declare no security, so this is what shows a served card drops an upstream's.
 */
export async function startSecuredAgent(): Promise<SecuredAgent> {
  const authorizations: Array<string | null> = [];
  let baseUrl = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET' && req.url === CARD_PATH) return res.end(JSON.stringify(securedCard(baseUrl)));
      if (req.method !== 'POST' || req.url !== '/rpc') {
        res.statusCode = 404;
        return res.end('{}');
      }
      authorizations.push(req.headers.authorization ?? null);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: unknown };
      const message = { messageId: `secured-${authorizations.length}`, role: 'ROLE_AGENT', parts: [{ text: 'secured pong' }] };
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { message } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function securedCard(baseUrl: string): Record<string, unknown> {
  return {
    name: 'secured',
    description: 'An agent with authentication of its own.',
    version: '1.0.0',
    supportedInterfaces: [{ url: `${baseUrl}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: false, pushNotifications: false },
    securitySchemes: {
      upstreamOauth: {
        oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: 'https://idp.upstream.example/token', scopes: {} } } },
      },
      upstreamKey: { apiKeySecurityScheme: { location: 'header', name: 'x-upstream-key' } },
    },
    securityRequirements: [{ schemes: { upstreamOauth: { list: ['agent:call'] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'pong',
        name: 'pong',
        description: 'Answers pong.',
        tags: ['test'],
        securityRequirements: [{ schemes: { upstreamKey: { list: [] } } }],
      },
    ],
  };
}
