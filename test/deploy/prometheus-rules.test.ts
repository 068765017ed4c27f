import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { hashKey } from '../../src/governance/index.js';
import { baseConfig } from '../support/gateway-process.js';
import { ROOT } from '../support/kubernetes.js';
import { fileResources } from '../support/resources.js';

// deploy/prometheus-rules.yaml alerts on series the gateway really exports. A gateway with a
// team budget (so the budget gauges have series) is started and scraped; every metric an
// alert's expression names must be in its /metrics, and every label a selector or an
// annotation uses must be on that metric's samples (or be one the scrape adds).

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: { severity?: string };
  annotations?: { summary?: string; description?: string };
}

const rules = (
  parse(readFileSync(join(ROOT, 'deploy/prometheus-rules.yaml'), 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> }
).groups.flatMap((g) => g.rules);

/** Labels Prometheus adds to every scraped series (Kubernetes service discovery and the scrape). */
const SCRAPE_LABELS = new Set(['job', 'instance', 'namespace', 'pod', 'container', 'service', 'endpoint']);
const HISTOGRAM_SUFFIX = /_(bucket|sum|count)$/;

/** Metric name -> the label names seen on its samples; a histogram's series under its base name. */
const exported = new Map<string, Set<string>>();
/** Metrics with at least one sample: only their labels can be checked. */
const sampled = new Set<string>();

const resources = fileResources('switchyard-rules-');

before(async () => {
  const east = await resources.startMock({ name: 'east' });
  const gw = await resources.startGw(
    baseConfig(
      { east: east.baseUrl },
      { m: { candidates: [{ provider: 'east' }] } },
      {
        teams: { platform: { budget: { usd_per_month: 10 } } },
        keys: [{ id: 'app', team: 'platform', sha256: hashKey('sy-test-key-for-the-rules') }],
      },
    ),
  );
  const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  const types = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    types.set(m[1]!, m[2]!);
    exported.set(m[1]!, new Set());
  }
  for (const m of text.matchAll(/^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? /gm)) {
    const base = exported.has(m[1]!) ? m[1]! : m[1]!.replace(HISTOGRAM_SUFFIX, '');
    sampled.add(base);
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)) exported.get(base)?.add(l[1]!);
  }
  for (const [name, type] of types) {
    if (type !== 'histogram') continue;
    for (const s of ['bucket', 'sum', 'count']) {
      exported.set(`${name}_${s}`, exported.get(name)!);
      if (sampled.has(name)) sampled.add(`${name}_${s}`);
    }
  }
});

/** The metric names in a PromQL expression (the gateway's all start with switchyard_). */
function metricsIn(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\bswitchyard_[a-z0-9_]+\b/g)].map((m) => m[0]))];
}

describe('deploy/prometheus-rules.yaml', () => {
  it('has the alerts worth setting: rejected reloads, a stale revision, an open breaker, a budget near its limit', () => {
    const using = (metric: string, also: RegExp = /.*/): Rule | undefined =>
      rules.find((r) => r.expr.includes(metric) && also.test(r.expr));
    assert.ok(using('switchyard_reload_total', /result="rejected"/), 'rejected reloads');
    assert.ok(
      using('switchyard_last_reload_rejection_timestamp_seconds', /switchyard_last_reload_success_timestamp_seconds/),
      'stale revision',
    );
    assert.ok(using('switchyard_breaker_state'), 'open breaker');
    assert.ok(using('switchyard_budget_spent_usd', /switchyard_budget_limit_usd/), 'budget near its limit');
  });

  it('every rule is well formed: a unique name, an expression, a severity, a summary, a valid for', () => {
    assert.equal(new Set(rules.map((r) => r.alert)).size, rules.length, 'alert names are unique');
    for (const r of rules) {
      assert.match(r.alert, /^Switchyard[A-Za-z]+$/);
      assert.ok(r.expr.trim() !== '', `${r.alert}: expr`);
      assert.ok(['critical', 'warning', 'info'].includes(r.labels?.severity ?? ''), `${r.alert}: severity`);
      assert.ok((r.annotations?.summary ?? '') !== '' && (r.annotations?.description ?? '') !== '', `${r.alert}: summary and description`);
      if (r.for !== undefined) assert.match(r.for, /^\d+[smh]$/, `${r.alert}: for`);
      let depth = 0;
      for (const ch of r.expr) {
        depth += ch === '(' ? 1 : ch === ')' ? -1 : 0;
        assert.ok(depth >= 0, `${r.alert}: unbalanced parentheses`);
      }
      assert.equal(depth, 0, `${r.alert}: unbalanced parentheses`);
    }
  });

  it('every metric an alert names is one the gateway exports on /metrics', () => {
    assert.ok(exported.size > 20, `scraped ${exported.size} metrics`);
    for (const r of rules) {
      const names = metricsIn(r.expr);
      assert.ok(names.length > 0, `${r.alert} names no switchyard metric`);
      for (const name of names) assert.ok(exported.has(name), `${r.alert}: ${name} is not exported by the gateway`);
    }
  });

  it('every label a selector or an annotation uses is on the series (or added by the scrape)', () => {
    for (const r of rules) {
      const names = metricsIn(r.expr);
      for (const m of r.expr.matchAll(/(switchyard_[a-z0-9_]+)\{([^}]*)\}/g)) {
        if (!sampled.has(m[1]!)) continue;
        for (const l of m[2]!.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g))
          assert.ok(exported.get(m[1]!)?.has(l[1]!), `${r.alert}: ${m[1]} has no label ${l[1]}`);
      }
      // A metric with no sample yet (an error counter) shows no labels: such an alert's annotations go unchecked.
      if (!names.every((n) => sampled.has(n))) continue;
      const carried = new Set(names.flatMap((n) => [...(exported.get(n) ?? [])]));
      const text = `${r.annotations?.summary ?? ''} ${r.annotations?.description ?? ''}`;
      for (const l of text.matchAll(/\$labels\.([a-zA-Z_]\w*)/g)) {
        if (SCRAPE_LABELS.has(l[1]!)) continue;
        assert.ok(carried.has(l[1]!), `${r.alert}: the annotation uses $labels.${l[1]}, which ${names.join(', ')} do not carry`);
      }
    }
  });
});
