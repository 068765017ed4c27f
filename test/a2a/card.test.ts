import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { AgentCard, SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { isLegacyAgentCard, parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { type AgentCardView, clientCard, jsonRpcEndpointFor, readCard } from '../../src/a2a/card.js';

const CARD_URL = 'https://agents.internal.example/echo/.well-known/agent-card.json';

const skills = [
  {
    id: 'echo',
    name: 'Echo',
    description: 'says it back',
    tags: ['echo'],
    securityRequirements: [{ schemes: { upstreamOauth: { list: ['echo:read'] } } }],
    security: [{ upstreamKey: [] }],
  },
];

const card10 = {
  name: 'Echo',
  description: 'An agent that echoes',
  version: '2.1.0',
  provider: { organization: 'Example', url: 'https://example.com' },
  iconUrl: 'https://example.com/echo.png',
  documentationUrl: 'https://example.com/docs',
  supportedInterfaces: [
    { url: 'https://agents.internal.example/echo/grpc', protocolBinding: 'GRPC', protocolVersion: '1.0' },
    { url: '/echo/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: 'https://legacy.internal.example/echo', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
  ],
  capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: true },
  securitySchemes: {
    upstreamOauth: { oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: 'https://idp.example/token', scopes: {} } } } },
  },
  securityRequirements: [{ schemes: { upstreamOauth: { list: ['echo:read'] } } }],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills,
};

const card03 = {
  name: 'Echo03',
  description: 'A 0.3 agent',
  version: '0.9.0',
  url: 'https://legacy.internal.example/rpc',
  preferredTransport: 'JSONRPC',
  additionalInterfaces: [{ url: 'https://legacy.internal.example/rest', transport: 'HTTP+JSON' }],
  protocolVersion: '0.3.0',
  capabilities: { streaming: false, pushNotifications: true },
  supportsAuthenticatedExtendedCard: false,
  securitySchemes: { upstreamKey: { type: 'apiKey', in: 'header', name: 'X-Upstream-Key' } },
  security: [{ upstreamKey: [] }],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills,
};

/** The shape the SDK's own server emits to 0.3 callers: 0.3 top-level fields plus the 1.0 list. */
const hybridCard = {
  ...card03,
  name: 'Hybrid',
  url: 'https://legacy.internal.example/only-0.3-view',
  supportedInterfaces: [
    { url: 'https://agents.internal.example/v1', protocolBinding: 'JSONRPC', protocolVersion: '1.0.0', tenant: '' },
    { url: 'https://agents.internal.example/v03', protocolBinding: 'JSONRPC', protocolVersion: '0.3.0', tenant: '' },
  ],
};

function view(json: unknown): AgentCardView {
  const read = readCard(json, CARD_URL);
  if ('error' in read) assert.fail(`unexpected error: ${read.error}`);
  return read;
}

describe('readCard', () => {
  it('reads a 1.0 card: JSON-RPC endpoints per version, relative URLs resolved against the card URL', () => {
    const v = view(card10);
    assert.equal(v.name, 'Echo');
    assert.deepEqual(v.endpoints, { '1.0': 'https://agents.internal.example/echo/rpc', '0.3': 'https://legacy.internal.example/echo' });
    assert.equal(v.streaming, true);
    assert.equal(v.pushNotifications, false);
    assert.equal(v.extendedCard, true);
    assert.equal(v.signed, false);
  });

  it('reads a pure 0.3 card from its top-level url and card-level protocolVersion', () => {
    const v = view(card03);
    assert.deepEqual(v.endpoints, { '0.3': 'https://legacy.internal.example/rpc' });
    assert.equal(v.streaming, false);
    assert.equal(v.pushNotifications, true);
    assert.equal(v.extendedCard, false);
  });

  it('finds a 0.3 JSON-RPC interface listed among additionalInterfaces', () => {
    const v = view({
      ...card03,
      url: 'https://legacy.internal.example/rest',
      preferredTransport: 'HTTP+JSON',
      additionalInterfaces: [{ url: 'https://legacy.internal.example/rpc2', transport: 'JSONRPC' }],
    });
    assert.deepEqual(v.endpoints, { '0.3': 'https://legacy.internal.example/rpc2' });
  });

  it('reads a hybrid card by its 1.0 list, not its 0.3 top-level url', () => {
    const v = view(hybridCard);
    assert.deepEqual(v.endpoints, { '1.0': 'https://agents.internal.example/v1', '0.3': 'https://agents.internal.example/v03' });
  });

  it('takes the first JSON-RPC interface of a version, and reads the proto field spellings', () => {
    const v = view({
      name: 'Snake',
      supported_interfaces: [
        { url: 'https://a.example/first', protocol_binding: 'jsonrpc', protocol_version: '1.0' },
        { url: 'https://a.example/second', protocol_binding: 'JSONRPC', protocol_version: '1.0' },
      ],
      capabilities: { push_notifications: true, extended_agent_card: true },
    });
    assert.deepEqual(v.endpoints, { '1.0': 'https://a.example/first' });
    assert.equal(v.pushNotifications, true);
    assert.equal(v.extendedCard, true);
  });

  it('refuses a card that offers only HTTP+JSON and gRPC, naming what it offers', () => {
    const read = readCard(
      {
        name: 'Rest',
        supportedInterfaces: [
          { url: 'https://a.example/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
          { url: 'https://a.example/grpc', protocolBinding: 'GRPC', protocolVersion: '1.0' },
        ],
      },
      CARD_URL,
    );
    assert.deepEqual(read, { error: 'offers no JSON-RPC interface (it lists: HTTP+JSON, GRPC)' });
  });

  it('ignores JSON-RPC interfaces at a non-http(s) URL or an unknown protocol version', () => {
    const read = readCard(
      {
        name: 'Odd',
        supportedInterfaces: [
          { url: 'ftp://a.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          { url: 'javascript:alert(1)', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
          { url: 'https://a.example/rpc', protocolBinding: 'JSONRPC', protocolVersion: '0.2.5' },
        ],
      },
      CARD_URL,
    );
    assert.ok('error' in read);
    assert.match(read.error, /offers no JSON-RPC interface .*JSONRPC 0\.2\.5/);
  });

  it('refuses garbage, naming what is wrong', () => {
    assert.deepEqual(readCard('a string', CARD_URL), { error: 'the agent card is not a JSON object' });
    assert.deepEqual(readCard(null, CARD_URL), { error: 'the agent card is not a JSON object' });
    assert.deepEqual(readCard([card10], CARD_URL), { error: 'the agent card is not a JSON object' });
    assert.deepEqual(readCard({ ...card10, name: undefined }, CARD_URL), { error: 'the agent card has no name' });
    assert.deepEqual(readCard({ ...card10, name: 42 }, CARD_URL), { error: 'the agent card has no name' });
    assert.deepEqual(readCard({ name: 'Empty' }, CARD_URL), { error: 'offers no JSON-RPC interface (it lists none)' });
  });

  it('marks a card with signatures as signed, and keeps its JSON apart from the caller object', () => {
    const json = structuredClone({ ...card10, signatures: [{ protected: 'eyJhbGciOiJFUzI1NiJ9', signature: 'c2ln' }] });
    const v = view(json);
    assert.equal(v.signed, true);
    json.name = 'changed later';
    assert.equal(v.json.name, 'Echo');
    assert.equal(view({ ...card10, signatures: [] }).signed, false);
  });
});

describe('jsonRpcEndpointFor', () => {
  it('gives the preferred version when advertised, else the other one', () => {
    const both = view(card10);
    assert.deepEqual(jsonRpcEndpointFor(both, '0.3'), { url: 'https://legacy.internal.example/echo', version: '0.3' });
    assert.deepEqual(jsonRpcEndpointFor(both, '1.0'), { url: 'https://agents.internal.example/echo/rpc', version: '1.0' });
    assert.deepEqual(jsonRpcEndpointFor(view(card03), '1.0'), { url: 'https://legacy.internal.example/rpc', version: '0.3' });
  });
});

/** Every scheme name and requirement anywhere in a card. */
function schemeNames(card: Record<string, any>): string[] {
  const names = new Set<string>();
  const collect = (holder: Record<string, any>) => {
    for (const key of Object.keys(holder.securitySchemes ?? {})) names.add(key);
    for (const req of holder.securityRequirements ?? []) for (const key of Object.keys(req.schemes ?? {})) names.add(key);
    for (const req of holder.security ?? []) for (const key of Object.keys(req)) names.add(key);
    for (const key of ['security_schemes', 'security_requirements']) if (key in holder) names.add(key);
  };
  collect(card);
  for (const skill of card.skills ?? []) collect(skill);
  return [...names].sort();
}

describe('clientCard', () => {
  const both = { bearer: true, apiKeyHeader: 'x-switchyard-key' } as const;
  const agentUrl = 'https://gw.example.com/a2a/echo';

  for (const [label, upstream] of [
    ['1.0', card10],
    ['0.3', card03],
    ['hybrid', hybridCard],
  ] as const) {
    it(`serves a ${label} card at the gateway URL for both versions, with only the gateway's security`, () => {
      const served = clientCard(view(upstream), agentUrl, both) as Record<string, any>;
      assert.deepEqual(served.supportedInterfaces, [
        { url: agentUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: agentUrl, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ]);
      assert.equal(served.url, agentUrl);
      assert.equal(served.preferredTransport, 'JSONRPC');
      assert.equal(served.protocolVersion, '0.3.0');
      assert.equal(served.additionalInterfaces, undefined);
      assert.deepEqual(schemeNames(served), ['apiKey', 'bearer']);
      assert.ok(!JSON.stringify(served).includes('internal.example'), 'no upstream URL survives');
      for (const key of ['name', 'description', 'version', 'defaultInputModes', 'defaultOutputModes']) {
        assert.deepEqual(served[key], (upstream as Record<string, unknown>)[key], key);
      }
      assert.deepEqual(
        served.skills.map((s: Record<string, unknown>) => s.id),
        ['echo'],
      );
    });
  }

  it('keeps skills, capabilities, provider, icon and docs of the upstream card', () => {
    const served = clientCard(view(card10), agentUrl, both) as Record<string, any>;
    assert.deepEqual(served.skills, [{ id: 'echo', name: 'Echo', description: 'says it back', tags: ['echo'] }]);
    assert.deepEqual(served.capabilities, card10.capabilities);
    assert.equal(served.supportsAuthenticatedExtendedCard, true);
    assert.deepEqual(served.provider, card10.provider);
    assert.equal(served.iconUrl, card10.iconUrl);
    assert.equal(served.documentationUrl, card10.documentationUrl);
  });

  it('writes each gateway scheme in both the 1.0 oneof shape and the 0.3 type shape', () => {
    const served = clientCard(view(card10), agentUrl, both) as Record<string, any>;
    assert.deepEqual(served.securitySchemes, {
      bearer: { type: 'http', scheme: 'bearer', httpAuthSecurityScheme: { scheme: 'Bearer' } },
      apiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'x-switchyard-key',
        apiKeySecurityScheme: { location: 'header', name: 'x-switchyard-key' },
      },
    });
    assert.deepEqual(served.securityRequirements, [{ schemes: { bearer: { list: [] } } }, { schemes: { apiKey: { list: [] } } }]);
    assert.deepEqual(served.security, [{ bearer: [] }, { apiKey: [] }]);
  });

  it('advertises one scheme when the gateway has one, and none when callers need no credential', () => {
    const bearerOnly = clientCard(view(card03), agentUrl, { bearer: true, apiKeyHeader: null });
    assert.deepEqual(schemeNames(bearerOnly), ['bearer']);
    const open = clientCard(view(card03), agentUrl, { bearer: false, apiKeyHeader: null });
    assert.deepEqual(schemeNames(open), []);
    assert.equal(open.securitySchemes, undefined);
  });

  it('serves a signed card exactly as the upstream wrote it', () => {
    const signed = { ...card10, signatures: [{ protected: 'eyJhbGciOiJFUzI1NiJ9', signature: 'c2ln' }] };
    const served = clientCard(view(signed), agentUrl, both);
    assert.deepEqual(served, signed);
  });

  it('leaves the view untouched', () => {
    const v = view(card10);
    const before = JSON.stringify(v.json);
    clientCard(v, agentUrl, both);
    assert.equal(JSON.stringify(v.json), before);
  });

  it('is read by the SDK 1.0 parser: JSON-RPC at the gateway URL, the gateway schemes as oneofs', () => {
    const parsed = AgentCard.fromJSON(clientCard(view(card03), agentUrl, both));
    assert.deepEqual(
      parsed.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
      [
        [agentUrl, 'JSONRPC', '1.0'],
        [agentUrl, 'JSONRPC', '0.3'],
      ],
    );
    assert.equal(parsed.securitySchemes.bearer?.scheme?.$case, 'httpAuthSecurityScheme');
    assert.deepEqual(parsed.securitySchemes.apiKey?.scheme, {
      $case: 'apiKeySecurityScheme',
      value: { description: '', location: 'header', name: 'x-switchyard-key' },
    });
    assert.deepEqual(parsed.securityRequirements, [{ schemes: { bearer: { list: [] } } }, { schemes: { apiKey: { list: [] } } }]);
    assert.equal(isLegacyAgentCard(clientCard(view(card03), agentUrl, both)), false, 'the 1.0 list wins for a 1.0 reader');
  });

  it("is read by the SDK's 0.3 parser: the top-level url at 0.3.0, the gateway schemes by type", () => {
    const served = clientCard(view(card10), agentUrl, both);
    const { supportedInterfaces: _dropped, ...onlyLegacyFields } = served;
    assert.equal(isLegacyAgentCard(onlyLegacyFields), true);
    const parsed = parseLegacyAgentCard(served);
    assert.deepEqual(
      parsed.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
      [[agentUrl, 'JSONRPC', '0.3.0']],
    );
    assert.equal(parsed.securitySchemes.bearer?.scheme?.$case, 'httpAuthSecurityScheme');
    assert.deepEqual(parsed.securitySchemes.apiKey?.scheme, {
      $case: 'apiKeySecurityScheme',
      value: { description: '', location: 'header', name: 'x-switchyard-key' },
    });
    assert.equal(parsed.capabilities?.extendedAgentCard, true);
    assert.deepEqual(parsed.skills[0]?.securityRequirements, []);
  });
});

describe('clientCard against SDK clients over a real socket', { timeout: 20_000 }, () => {
  let server: Server;
  let agentUrl = '';
  const calls: { path: string; method: string; auth: string | undefined }[] = [];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method === 'GET' && req.url === '/a2a/echo/.well-known/agent-card.json') {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify(clientCard(view(card10), agentUrl, { bearer: true, apiKeyHeader: null })));
          return;
        }
        if (req.method !== 'POST' || req.url !== '/a2a/echo') {
          res.statusCode = 404;
          res.end();
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        calls.push({ path: req.url ?? '', method: body.method, auth: req.headers.authorization });
        const result =
          body.method === 'message/send'
            ? { kind: 'message', messageId: 'reply', role: 'agent', parts: [{ kind: 'text', text: 'pong' }] }
            : { message: { messageId: 'reply', role: 'ROLE_AGENT', parts: [{ text: 'pong' }] } };
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    agentUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/a2a/echo`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const ping = SendMessageRequest.fromJSON({ message: { messageId: 'ping', role: 'ROLE_USER', parts: [{ text: 'ping' }] } });

  it('the 1.0 ClientFactory resolves the served card and sends SendMessage to the gateway URL', async () => {
    calls.length = 0;
    const client = await new ClientFactory().createFromUrl(`${agentUrl}/.well-known/agent-card.json`, '');
    await client.sendMessage(ping);
    assert.deepEqual(
      calls.map((c) => [c.path, c.method]),
      [['/a2a/echo', 'SendMessage']],
    );
  });

  it('createFromAgentCard picks the JSON-RPC interface at the gateway URL', async () => {
    calls.length = 0;
    const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })] });
    const served = clientCard(view(card03), agentUrl, { bearer: true, apiKeyHeader: null });
    const client = await factory.createFromAgentCard(served as unknown as AgentCard);
    await client.sendMessage(ping);
    assert.deepEqual(
      calls.map((c) => [c.path, c.method]),
      [['/a2a/echo', 'SendMessage']],
    );
  });

  it("the 0.3 legacy client, from the SDK's 0.3 reading of the card, sends message/send to the gateway URL", async () => {
    calls.length = 0;
    const legacy = parseLegacyAgentCard(clientCard(view(card10), agentUrl, { bearer: true, apiKeyHeader: null }));
    const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })] });
    const client = await factory.createFromAgentCard(legacy);
    await client.sendMessage(ping);
    assert.deepEqual(
      calls.map((c) => [c.path, c.method]),
      [['/a2a/echo', 'message/send']],
    );
  });
});
