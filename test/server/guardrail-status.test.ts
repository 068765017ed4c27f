import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfigText } from '../../src/config/index.js';
import { guardrailsView } from '../../src/server/guardrail-view.js';
import { GuardrailStats } from '../../src/telemetry/index.js';
import { baseConfig } from '../support/gateway-process.js';
import { fileResources } from '../support/resources.js';

// The `guardrails` section of /admin/status and of the status page's data: each configured
// guardrail, its type, where it is attached (routes, teams, keys, mcp), and what it did
// since start; never a header's value or a pattern.

const CONFIG = `
server: { listen: "127.0.0.1:0" }
providers:
  east: { type: openai, base_url: "http://127.0.0.1:9/v1" }
guardrails:
  pii: { type: pii, entities: [email], action: mask }
  secrets: { type: secrets, action: block }
  review: { type: webhook, url: "http://127.0.0.1:9/check", headers: { authorization: { env: GUARD_TOKEN } } }
  idle: { type: regex, patterns: ["forbidden"], action: warn }
routing:
  routes:
    m: { guardrails: { input: [secrets, pii], output: [pii] }, candidates: [ { provider: east } ] }
    other: { guardrails: { input: [pii] }, candidates: [ { provider: east } ] }
teams:
  research: { guardrails: { input: [review] } }
keys:
  - { id: app, team: research, key: { env: APP_KEY }, guardrails: { output: [review, pii] } }
mcp:
  guardrails: { arguments: [secrets], results: [pii] }
`;

describe('the guardrails status section', () => {
  it('names each guardrail’s type, where it is attached and its verdicts, errors and latency since start', () => {
    const parsed = parseConfigText(CONFIG);
    assert.ok(parsed.ok, JSON.stringify(parsed));
    const config = parsed.config;
    const stats = new GuardrailStats();
    stats.record('pii', 'input', 'mask', 0.5, null);
    stats.record('pii', 'input', 'allow', 0.2, null);
    stats.record('pii', 'results', 'mask', 0.3, null);
    stats.record('review', 'input', 'allow', 1500, 'fail_open');
    const view = guardrailsView(config, { teams: config.teams ?? {}, keys: config.keys ?? [] }, stats);
    assert.deepEqual(
      view.map((g) => [g.name, g.type]),
      [
        ['pii', 'pii'],
        ['secrets', 'secrets'],
        ['review', 'webhook'],
        ['idle', 'regex'],
      ],
    );
    const [pii, secrets, review, idle] = view;
    assert.deepEqual(pii?.attached, {
      routes: { m: ['input', 'output'], other: ['input'] },
      teams: {},
      keys: { app: ['output'] },
      mcp: ['results'],
    });
    assert.deepEqual(pii?.verdicts, { input: { mask: 1, allow: 1 }, results: { mask: 1 } });
    assert.equal(pii?.checks, 3);
    assert.ok(pii?.latency_ms.p50 !== null && (pii?.latency_ms.p50 ?? 0) >= 0.3);
    assert.deepEqual(secrets?.attached, { routes: { m: ['input'] }, teams: {}, keys: {}, mcp: ['arguments'] });
    assert.deepEqual(review?.attached, { routes: {}, teams: { research: ['input'] }, keys: { app: ['output'] }, mcp: [] });
    assert.deepEqual(review?.errors, { fail_open: 1, fail_closed: 0 });
    assert.deepEqual(idle, {
      name: 'idle',
      type: 'regex',
      attached: { routes: {}, teams: {}, keys: {}, mcp: [] },
      verdicts: {},
      errors: { fail_open: 0, fail_closed: 0 },
      checks: 0,
      latency_ms: { p50: null, p99: null },
    });
  });
});

const r = fileResources('switchyard-guardrail-status-');
const GUARD_TOKEN = `Bearer ${'guardstatusSECRET0123456789'}`;
const API_KEY = `sy-${'guardstatusKEY0123456789abcdef'}`;

describe('the guardrails section over the admin listener', () => {
  it('/admin/status and the page data list the configured guardrails and where they are attached, without a secret', async () => {
    const east = await r.startMock({ name: 'east' });
    const config = baseConfig(
      { east: east.baseUrl },
      { m: { guardrails: { input: ['secrets'], output: ['review'] }, candidates: [{ provider: 'east' }] } },
      {
        guardrails: {
          secrets: { type: 'secrets', action: 'block' },
          review: { type: 'webhook', url: 'http://127.0.0.1:9/check', headers: { authorization: { env: 'GUARD_TOKEN' } } },
        },
        teams: { research: { guardrails: { input: ['review'] } } },
        keys: [{ id: 'app', team: 'research', key: { env: 'APP_KEY' } }],
      },
    );
    const gw = await r.startGw(config, { env: { GUARD_TOKEN, APP_KEY: API_KEY } });
    const admin = gw.adminUrl as string;
    for (const path of ['/admin/status', '/admin/status/page-data']) {
      const res = await fetch(`${admin}${path}`);
      assert.equal(res.status, 200, path);
      const text = await res.text();
      assert.ok(!text.includes(GUARD_TOKEN) && !text.includes(API_KEY), `${path} holds no secret`);
      const { guardrails } = JSON.parse(text) as { guardrails: Array<Record<string, unknown>> };
      assert.deepEqual(
        guardrails.map((g) => [g.name, g.type, g.attached, g.checks, g.verdicts]),
        [
          ['secrets', 'secrets', { routes: { m: ['input'] }, teams: {}, keys: {}, mcp: [] }, 0, {}],
          ['review', 'webhook', { routes: { m: ['output'] }, teams: { research: ['input'] }, keys: {}, mcp: [] }, 0, {}],
        ],
        path,
      );
    }
  });
});
