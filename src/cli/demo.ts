import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import type { ConfigIssue } from '../config/index.js';
import { type MockProvider, startMockProvider } from '../mock/index.js';
import { type Command, help, UsageError } from './command.js';

// `switchyard demo` (what `npm start` runs): three mock providers, a mock MCP server and a
// gateway on examples/demo.yaml, all on loopback. Its ports are one decision, made here:
// the listeners, the config the gateway serves and every printed command follow it.

/** Starts the gateway on a config; prints a refusal with `hint` (when it gives one) and returns 1. */
export type Serve = (
  configPath: string,
  afterShutdown: () => Promise<void>,
  hint: (issues: readonly ConfigIssue[]) => string | null,
) => Promise<number | 'running'>;

const EXAMPLE = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'demo.yaml');
const MOCKS = ['east', 'west', 'central'] as const;
/** The ports examples/demo.yaml names: the gateway, its admin listener, then the mocks. */
const DEFAULT_PORTS: DemoPorts = { gateway: 8080, admin: 9090, east: 9001, west: 9002, central: 9003, tools: 9004 };
/** --port N takes N to N + 5. */
const PORTS_TAKEN = 6;

interface DemoPorts {
  readonly gateway: number;
  readonly admin: number;
  readonly east: number;
  readonly west: number;
  readonly central: number;
  /** The mock MCP server. */
  readonly tools: number;
}

const PORT_HINT =
  'switchyard demo: a port it needs is taken; choose others with --port N (switchyard demo --port N, or npm start -- --port N), ' +
  `which puts the gateway on N, its admin listener on N+1 and the mocks on N+2 to N+${PORTS_TAKEN - 1}`;

export function demoCommand(serve: Serve): Command {
  return {
    summary: 'start three mock providers, a mock MCP server and a gateway on 127.0.0.1:8080 (what `npm start` runs)',
    usage: `switchyard demo [--port N]

Starts mock providers east, west and central on 127.0.0.1:9001-9003, a mock MCP server
(tools) on 127.0.0.1:9004 and a gateway on 127.0.0.1:8080 (admin on 127.0.0.1:9090) with
examples/demo.yaml. No credentials, no network.

--port N  the gateway on N, its admin listener on N+1, the mocks east, west, central and
          tools on N+2 to N+5 (the config is examples/demo.yaml with those ports, written to a
          temporary directory). With npm: npm start -- --port N.`,
    options: { port: { type: 'string', short: 'p' }, help },
    async run(values) {
      const ports = values.port === undefined ? DEFAULT_PORTS : portsFrom(values.port);
      const configPath = ports === DEFAULT_PORTS ? EXAMPLE : writeConfig(ports);
      const removeConfig = (): void => {
        if (configPath !== EXAMPLE) rmSync(dirname(configPath), { recursive: true, force: true });
      };
      let mocks: MockProvider[];
      try {
        mocks = await startMocks(ports);
      } catch (err) {
        removeConfig();
        throw err;
      }
      const stopMocks = async (): Promise<void> => {
        await Promise.all(mocks.map((m) => m.close()));
        removeConfig();
      };
      const code = await serve(configPath, stopMocks, (issues) =>
        issues.some((i) => i.path === 'server.listen' || i.path === 'server.admin_listen') ? PORT_HINT : null,
      );
      if (code === 'running') process.stdout.write(demoText(process.pid, ports, configPath));
      else await stopMocks();
      return code;
    },
  };
}

function portsFrom(value: string | boolean): DemoPorts {
  const n = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value) || n < 1 || n > 65536 - PORTS_TAKEN) {
    throw new UsageError(`--port must be a whole number 1-${65536 - PORTS_TAKEN} (the demo takes N to N+${PORTS_TAKEN - 1})`);
  }
  return { gateway: n, admin: n + 1, east: n + 2, west: n + 3, central: n + 4, tools: n + 5 };
}

/** examples/demo.yaml with these ports, comments kept, in a directory of its own. */
function writeConfig(ports: DemoPorts): string {
  const doc = parseDocument(readFileSync(EXAMPLE, 'utf8'));
  doc.setIn(['server', 'listen'], `127.0.0.1:${ports.gateway}`);
  doc.setIn(['server', 'admin_listen'], `127.0.0.1:${ports.admin}`);
  for (const name of [...MOCKS, 'tools'] as const) {
    const url = new URL(String(doc.getIn(['providers', name, 'base_url'])));
    url.port = String(ports[name]);
    doc.setIn(['providers', name, 'base_url'], url.href);
  }
  const path = join(mkdtempSync(join(tmpdir(), 'switchyard-demo-')), 'demo.yaml');
  writeFileSync(path, doc.toString());
  return path;
}

/** All four or none: one that cannot bind closes the others, so the process can exit. */
async function startMocks(ports: DemoPorts): Promise<MockProvider[]> {
  const started = await Promise.allSettled([
    ...MOCKS.map((name) => startMockProvider({ name, port: ports[name], streamChunkDelayMs: 150, streamChunks: 8 })),
    // JSON answers, so that the printed curl commands show them plainly.
    startMockProvider({ name: 'tools', port: ports.tools, protocol: 'mcp', mcpResponse: 'json' }),
  ]);
  const mocks = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed === undefined) return mocks;
  await Promise.all(mocks.map((m) => m.close()));
  const reason = (failed.reason as NodeJS.ErrnoException).code === 'EADDRINUSE' ? `\n${PORT_HINT}` : '';
  throw new Error(
    `cannot start the demo's mock providers on ports ${ports.east}-${ports.tools}: ${(failed.reason as Error).message}${reason}`,
  );
}

/** The demo runs the gateway in this process, so its pid is the one SIGHUP reloads. */
function demoText(pid: number, ports: DemoPorts, configPath: string): string {
  const gw = `http://127.0.0.1:${ports.gateway}`;
  const admin = `http://127.0.0.1:${ports.admin}`;
  return `
Switchyard demo: gateway on ${gw}, admin on ${admin}
Mock providers: east :${ports.east}, west :${ports.west}, central :${ports.central}; MCP server tools :${ports.tools}. Ctrl-C stops everything.
Config: ${configPath}

Try:
  curl -s ${gw}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}' -D - 

  # round-robin over east, west, central: watch x-switchyard-provider
  for i in 1 2 3; do curl -s -o /dev/null -D - ${gw}/v1/chat/completions \\
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}' | grep -i x-switchyard-provider; done

  # streaming
  curl -sN ${gw}/v1/chat/completions \\
    -d '{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}'

  # make east fail, then watch gpt-4o fail over to west (x-switchyard-fallback: east)
  curl -s http://127.0.0.1:${ports.east}/__mock/faults -d '{"mode":"status","status":500,"count":1}'
  curl -s -D - -o /dev/null ${gw}/v1/chat/completions \\
    -d '{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'

  curl -s ${gw}/v1/models
  curl -s ${admin}/admin/status
  curl -s -X POST ${admin}/admin/reload     # or: kill -HUP ${pid}
  curl -s ${admin}/metrics | grep switchyard_requests_total   # the admin listener: with keys, metrics stay there

  # MCP: initialize a session (note its Mcp-Session-Id), then list and call the tools
  curl -s -D - ${gw}/mcp -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
  curl -s ${gw}/mcp -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \\
    -H "mcp-session-id: $SESSION" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'

With the official openai client (top-level await: save as demo.mjs, run node demo.mjs):
  import OpenAI from 'openai';
  const client = new OpenAI({ baseURL: '${gw}/v1', apiKey: 'unused' });
  const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  console.log(r.choices[0].message.content);
`;
}
