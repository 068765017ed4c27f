import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StatusPageFiles } from '../../src/server/status-page.js';
import { baseConfig } from '../support/gateway-process.js';
import { chatBody, postChat } from '../support/http.js';
import { catalogsListed, twoServerConfig } from '../support/mcp.js';
import { waitUntil } from '../support/observe.js';
import { candidate, envelope } from '../support/overlay.js';
import { overlayConfig } from '../support/overlay-gateway.js';
import { fileResources } from '../support/resources.js';

// The status page over HTTP, without a browser: its files are found from src/ (tsx) and
// from dist/ (the gateway process runs dist/cli.js), the shell is public and holds no
// data, and GET /admin/status/page-data is behind the admin token and holds no secret.

const r = fileResources('switchyard-page-data-');
const PROVIDER_KEY = `sk-${'pagedataPROVIDERkey0123456789'}`;
const ADMIN_TOKEN = `tok-${'pagedataADMIN0123456789'}`;

interface PageData {
  generation: { number: number; age_s: number };
  overlay: unknown;
  last_rejection: unknown;
  reloads: Array<{ trigger: string; result: string; changes: string[] }>;
  providers: Array<{ name: string; breaker: string }>;
  models: Array<{
    model: string;
    served: number;
    candidates: Array<{
      stable_id: string;
      provider: string;
      state: string;
      breaker: string;
      served: number;
      share: number | null;
      error_rate: number | null;
    }>;
  }>;
  teams: unknown;
  traffic: { slot_s: number; points: Array<{ requests: number; errors: number; seconds: number; p50_ms: number | null }> };
}

describe('status page files and data', () => {
  it('the files are found from src/ as well as from dist/', () => {
    assert.equal(new StatusPageFiles().problem, null);
    assert.match(new StatusPageFiles('/nonexistent/').problem ?? '', /status page files not readable in \/nonexistent\/: ENOENT/);
  });

  it('serves the shell and its files without the token, and the data only with it, without a secret', async () => {
    const [east, west] = await Promise.all([r.startMock({ name: 'east' }), r.startMock({ name: 'west' })]);
    const config = baseConfig(
      { east: east.baseUrl, west: west.baseUrl },
      { m: { policy: 'ordered', candidates: [{ provider: 'east' }, { provider: 'west' }] } },
      { server: { admin_token: { env: 'PAGE_ADMIN_TOKEN' } }, log: { level: 'info', access: false } },
    );
    (config.providers as Record<string, Record<string, unknown>>).east!.api_key = { env: 'PAGE_PROVIDER_KEY' };
    const gw = await r.startGw(config, { env: { PAGE_ADMIN_TOKEN: ADMIN_TOKEN, PAGE_PROVIDER_KEY: PROVIDER_KEY } });
    const admin = gw.adminUrl as string;

    const shell = await fetch(`${admin}/`);
    assert.equal(shell.status, 200);
    assert.equal(shell.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(shell.headers.get('content-security-policy') ?? '', /default-src 'none'.*connect-src 'self'.*frame-ancestors 'none'/);
    assert.equal(shell.headers.get('x-content-type-options'), 'nosniff');
    const html = await shell.text();
    assert.match(html, /<script type="module" src="status-page\/status\.js"><\/script>/);
    assert.ok(!html.includes('east') && !html.includes(east.baseUrl), 'the shell holds no data');
    for (const [name, type] of [
      ['status.js', 'text/javascript; charset=utf-8'],
      ['page.js', 'text/javascript; charset=utf-8'],
      ['topology.js', 'text/javascript; charset=utf-8'],
      ['topology-writes.js', 'text/javascript; charset=utf-8'],
      ['provider-form.js', 'text/javascript; charset=utf-8'],
      ['route-form.js', 'text/javascript; charset=utf-8'],
      ['status.css', 'text/css; charset=utf-8'],
      ['favicon.svg', 'image/svg+xml'],
    ]) {
      const res = await fetch(`${admin}/status-page/${name}`);
      assert.equal(res.status, 200, name);
      assert.equal(res.headers.get('content-type'), type);
      assert.ok((await res.text()).length > 100);
    }
    assert.equal((await fetch(`${admin}/status-page/..%2Fpackage.json`)).status, 404);
    assert.equal((await fetch(`${admin}/status-page/nothing.js`)).status, 404);
    // A wrong method is refused like any other request: the token first, then 405.
    assert.equal((await fetch(`${admin}/`, { method: 'POST' })).status, 401);
    assert.equal((await fetch(`${admin}/`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status, 405);

    const denied = await fetch(`${admin}/admin/status/page-data`);
    assert.equal(denied.status, 401);
    assert.equal(denied.headers.get('www-authenticate'), 'Bearer');

    // Three requests: east fails the first and west serves it, then east serves two.
    east.addFault({ mode: 'status', status: 500, count: 1 });
    for (let i = 0; i < 3; i++) assert.equal((await postChat(gw.url, chatBody('m'))).status, 200);
    const res = await fetch(`${admin}/admin/status/page-data`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const text = await res.text();
    for (const secret of [PROVIDER_KEY, ADMIN_TOKEN, 'PAGE_PROVIDER_KEY', 'PAGE_ADMIN_TOKEN', east.baseUrl])
      assert.ok(!text.includes(secret), `page-data holds no ${secret}`);
    const d = JSON.parse(text) as PageData;
    assert.equal(d.generation.number, 1);
    assert.equal(d.overlay, null, 'static mode');
    assert.equal(d.last_rejection, null);
    assert.deepEqual(
      d.reloads.map((x) => [x.trigger, x.result]),
      [['startup', 'applied']],
    );
    assert.deepEqual(d.reloads[0]?.changes, ['providers added: east, west', 'routes added: m', 'candidates added: east/m, west/m']);
    assert.equal(d.teams, null, 'no governance configured');
    const m = d.models.find((x) => x.model === 'm');
    assert.equal(m?.served, 3);
    const [eastRow, westRow] = [m?.candidates.find((c) => c.provider === 'east'), m?.candidates.find((c) => c.provider === 'west')];
    assert.deepEqual([eastRow?.state, eastRow?.breaker, eastRow?.served, eastRow?.error_rate], ['serving', 'closed', 2, 1 / 3]);
    assert.deepEqual([westRow?.served, westRow?.error_rate], [1, 0]);
    assert.ok(Math.abs((eastRow?.share ?? 0) - 2 / 3) < 1e-9);
    assert.equal(d.traffic.slot_s, 10);
    assert.equal(d.traffic.points.length, 90);
    const last = d.traffic.points.slice(-2);
    assert.equal(
      last.reduce((n, p) => n + p.requests, 0),
      3,
      'the three requests are in the last 20 s',
    );
    assert.ok(last.some((p) => p.p50_ms !== null));
    assert.ok(d.traffic.points.every((p) => p.seconds > 0 && p.seconds <= 10));
  });
});

interface ToolPageData {
  providers: Array<{ name: string; type: string; breaker: string }>;
  tools: Array<{
    tool: string;
    policy: string | null;
    admits_new: boolean;
    routed: boolean;
    listed: boolean;
    served: number;
    candidates: Array<{
      stable_id: string;
      provider: string;
      upstream_tool: string | null;
      state: string;
      breaker: string | null;
      listed: boolean;
      served: number;
      share: number | null;
      error_rate: number | null;
    }>;
  }>;
  mcp: {
    sessions: number;
    servers: Array<{
      provider: string;
      tools: number | null;
      refreshed_age_s: number | null;
      problem: string | null;
      stream_open: boolean;
    }>;
  };
}

describe('status page data for the /mcp tools', () => {
  it('lists each exposed tool with its candidates, their traffic and breaker, and a tool no server lists as unlisted', async () => {
    const upstreamKey = `up-${'pagedataMCPkey0123456789'}`;
    const [alpha, bravo] = await Promise.all([
      r.startMock({ name: 'alpha', protocol: 'mcp', apiKey: upstreamKey }),
      r.startMock({ name: 'bravo', protocol: 'mcp', mcpResponse: 'json' }),
    ]);
    const config = twoServerConfig(alpha, bravo, { api_key: { env: 'PAGE_MCP_KEY' } });
    const gw = await r.startGw(config, { env: { PAGE_MCP_KEY: upstreamKey } });
    await catalogsListed(gw, 2);
    const pageData = async (): Promise<{ text: string; d: ToolPageData }> => {
      const text = await (await fetch(`${gw.adminUrl}/admin/status/page-data`)).text();
      return { text, d: JSON.parse(text) as ToolPageData };
    };

    const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.url));
    const client = new Client({ name: 'page-data-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      for (let i = 0; i < 3; i++) await client.callTool({ name: 'echo', arguments: { text: `hello ${i}` } });
      await client.callTool({ name: 'a_weather', arguments: { city: 'Oslo' } });

      const { text, d } = await pageData();
      for (const secret of [upstreamKey, 'PAGE_MCP_KEY', alpha.origin, bravo.origin]) assert.ok(!text.includes(secret), `no ${secret}`);
      const echo = d.tools.find((t) => t.tool === 'echo');
      assert.deepEqual([echo?.policy, echo?.admits_new, echo?.routed, echo?.listed, echo?.served], ['ordered', true, true, true, 3]);
      assert.deepEqual(
        echo?.candidates.map((c) => [c.provider, c.upstream_tool, c.state, c.breaker, c.listed, c.served, c.share, c.error_rate]),
        [
          ['alpha', 'echo', 'serving', 'closed', true, 3, 1, 0],
          ['bravo', 'echo', 'serving', 'closed', true, 0, 0, null],
        ],
      );
      const fromAlpha = d.tools.find((t) => t.tool === 'a_weather');
      assert.equal(fromAlpha?.served, 1);
      assert.deepEqual(
        fromAlpha?.candidates.map((c) => [c.stable_id, c.upstream_tool, c.served]),
        [['alpha/weather', 'weather', 1]],
      );
      const names = d.tools.map((t) => t.tool);
      assert.deepEqual(names, [...names].sort(), 'in tools/list order');
      assert.ok(names.includes('a_echo') && names.includes('weather'));
      // Their in-flight count includes the standing GET stream the gateway holds.
      assert.deepEqual(
        d.providers.filter((p) => p.type === 'mcp').map((p) => [p.name, p.breaker]),
        [
          ['alpha', 'closed'],
          ['bravo', 'closed'],
        ],
      );
      assert.equal(d.mcp.sessions, 1);
      const alphaServer = d.mcp.servers.find((s) => s.provider === 'alpha');
      assert.equal(alphaServer?.tools, 6);
      assert.equal(alphaServer?.problem, null);
      assert.equal(typeof alphaServer?.refreshed_age_s, 'number');

      // bravo stops listing weather: its route stays, but nothing offers or calls it.
      bravo.mcpTools({ remove: ['weather'] });
      let weather: ToolPageData['tools'][number] | undefined;
      await waitUntil(async () => {
        weather = (await pageData()).d.tools.find((t) => t.tool === 'weather');
        return weather?.listed === false;
      }, 'weather is shown unlisted');
      assert.deepEqual([weather?.routed, weather?.admits_new], [true, false]);
      assert.deepEqual(
        weather?.candidates.map((c) => [c.provider, c.listed]),
        [['bravo', false]],
      );
      assert.equal((await pageData()).d.mcp.servers.find((s) => s.provider === 'bravo')?.tools, 5);
    } finally {
      await client.close();
    }
  });

  it('overlay mode: a tool candidate on an unknown cluster shows unroutable, and a tool whose every candidate is withdrawn shows unrouted', async () => {
    const alpha = await r.startMock({ name: 'alpha', protocol: 'mcp' });
    const dir = r.tempDir();
    const overlayFile = join(dir, 'routing-overlay.json');
    const tool = (name: string, cluster: string, extra: Record<string, unknown> = {}) =>
      candidate(name, cluster, { kind: 'mcp_tool', ...extra });
    writeFileSync(
      overlayFile,
      JSON.stringify(envelope([tool('echo', 'alpha'), tool('echo', 'nowhere'), tool('weather', 'alpha', { admission_state: 'none' })])),
    );
    const config = overlayConfig({}, { file: overlayFile }, { mcp: { catalog_recheck_ms: 0 } });
    config.providers = { alpha: { type: 'mcp', base_url: `${alpha.origin}/mcp`, timeout_ms: 2000 } };
    const gw = await r.startGw(config);
    await waitUntil(() => gw.logs().some((l) => l.msg === 'MCP server catalog listed'), 'the catalog is listed');
    const d = (await (await fetch(`${gw.adminUrl}/admin/status/page-data`)).json()) as ToolPageData;
    const echo = d.tools.find((t) => t.tool === 'echo');
    assert.deepEqual([echo?.routed, echo?.listed, echo?.admits_new], [true, true, true]);
    assert.deepEqual(
      echo?.candidates.map((c) => [c.provider, c.state, c.upstream_tool, c.listed, c.breaker]),
      [
        ['alpha', 'serving', 'echo', true, 'closed'],
        ['nowhere', 'unroutable', null, false, null],
      ],
    );
    const weather = d.tools.find((t) => t.tool === 'weather');
    assert.deepEqual([weather?.routed, weather?.listed, weather?.admits_new, weather?.policy], [false, false, false, null]);
    assert.deepEqual(
      weather?.candidates.map((c) => [c.provider, c.state, c.breaker]),
      [['alpha', 'withdrawn', 'closed']],
    );
    assert.equal(d.tools.length, 2, 'only what the overlay names: no tools_from in overlay mode');
  });

  it('an MCP server that cannot be reached shows its problem without its address, and no catalog', async () => {
    // A port that was free a moment ago: nothing listens there.
    const spare = createServer();
    await new Promise<void>((done) => spare.listen(0, '127.0.0.1', done));
    const { port } = spare.address() as AddressInfo;
    await new Promise((done) => spare.close(done));
    const url = `http://127.0.0.1:${port}/mcp`;
    const gw = await r.startGw({
      server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
      log: { level: 'info', access: false },
      providers: { gone: { type: 'mcp', base_url: url, timeout_ms: 1000 } },
      routing: { routes: {}, tools: { echo: { candidates: [{ provider: 'gone' }] } } },
    });
    let text = '';
    await waitUntil(async () => {
      text = await (await fetch(`${gw.adminUrl}/admin/status/page-data`)).text();
      return (JSON.parse(text) as ToolPageData).mcp.servers.some((s) => s.problem !== null);
    }, 'the server has a problem');
    assert.ok(!text.includes(`127.0.0.1:${port}`), text);
    const d = JSON.parse(text) as ToolPageData;
    assert.deepEqual(
      d.mcp.servers.map((s) => [s.provider, s.tools, s.refreshed_age_s, s.stream_open]),
      [['gone', null, null, false]],
    );
    assert.deepEqual(
      d.tools.map((t) => [t.tool, t.routed, t.listed]),
      [['echo', true, false]],
    );
  });
});
