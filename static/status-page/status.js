// Switchyard status page: polls GET admin/status/page-data and redraws. Served as is, no
// build step. Every value is written with textContent (never as HTML): model names and
// revisions come from config and overlays, and must not become markup.

import { $, adminRequest, allPages, badge, el, replace, TOKEN_KEY, table } from './page.js';
import { renderTopologySection, stopTopology } from './topology.js';

const POLL_MS = 1000;
/** Older than this, the page says its data is stale. */
const STALE_MS = 5000;
const SVG = 'http://www.w3.org/2000/svg';

let lastOk = 0;
let lastProblem = '';
/** Who signed in, as GET admin/v1/me says ({id, role}); null with no token given. */
let operator = null;
/**
 * Counts sign-ins and refusals: a poll or a read of teams and keys that was under way when the
 * token changed or was refused draws nothing and schedules nothing.
 */
let session = 0;
let pollTimer = null;

function ago(seconds) {
  if (seconds === null || seconds === undefined) return 'unknown';
  if (seconds < 1) return 'just now';
  if (seconds < 90) return `${Math.round(seconds)} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min ago`;
  return `${Math.round(seconds / 86400)} days ago`;
}

function duration(seconds) {
  return ago(seconds).replace(' ago', '').replace('just now', 'under a second');
}

function time(iso) {
  return iso ? new Date(iso).toLocaleTimeString() : '';
}

// A key's last use or expiry may be days or months away: the date matters as much as the hour.
function moment(iso) {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

function short(revision) {
  return revision ? revision.slice(0, 12) : 'none';
}

function percent(x) {
  if (x === null || x === undefined) return '–';
  if (x > 0 && x < 0.001) return '<0.1 %';
  return `${(x * 100).toFixed(x < 0.1 ? 1 : 0)} %`;
}

function num(x, digits = 0) {
  if (x === null || x === undefined) return '–';
  return x.toLocaleString(undefined, { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/**
 * An amount of USD: cents at least, and down to the micro-dollar the books are kept in, so
 * that a budget of 0.00005 USD reads as such rather than as 0.00.
 */
function usd(x) {
  if (x === null || x === undefined) return '–';
  return `${x.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 6 })} USD`;
}

function facts(id, pairs) {
  replace(
    id,
    pairs.filter(Boolean).flatMap(([label, value, attrs]) => [el('dt', { text: label }), el('dd', attrs ?? {}, value)]),
  );
}

const CANDIDATE_COLOUR = { serving: 'green', draining: 'amber', withdrawn: 'red', unroutable: 'red' };
const CANDIDATE_MEANING = {
  serving: 'takes new and existing sessions',
  draining: 'existing sessions only',
  withdrawn: 'admission none: never serves',
  unroutable: 'its cluster names no configured provider',
};
const BREAKER_COLOUR = { closed: 'green', half_open: 'amber', open: 'red' };
const BREAKER_TEXT = { closed: 'closed', half_open: 'half-open', open: 'open' };
const RESULT_COLOUR = { applied: 'green', unchanged: 'grey', rejected: 'red' };

function breakerBadge(state) {
  if (state === null) return badge('grey', 'no provider', 'none');
  return badge(BREAKER_COLOUR[state] ?? 'grey', BREAKER_TEXT[state] ?? state, state);
}

// ---------------------------------------------------------------- the cards

/** Who may call, in words: API keys, tokens from trusted issuers, or both. */
function accessText(a) {
  const keys = `${a.keys} key${a.keys === 1 ? '' : 's'}`;
  if (!a.issuers?.length) return `an API key is required (${keys}); a request without one gets 401`;
  const tokens = `a token from ${a.issuers.join(', ')}`;
  const what = a.keys > 0 ? `an API key (${keys}) or ${tokens}` : tokens;
  return `${what} is required; a request without one gets 401`;
}

function renderGeneration(d) {
  const g = d.generation;
  $('generation-number').textContent = g === null ? 'none' : `#${g.number}`;
  facts('generation-facts', [
    g && ['built', `${ago(g.age_s)} (${time(g.built_at)})`, { id: 'generation-age' }],
    ['gateway up for', duration(d.uptime_s)],
    d.access && [
      'access',
      d.access.open ? 'open: no API key is configured, so every request is served without one' : accessText(d.access),
      { id: 'access', class: d.access.open ? 'warn-text' : 'ok-text' },
    ],
  ]);
}

function renderOverlay(d) {
  const o = d.overlay;
  if (o === null) {
    $('serving-revision').textContent = 'static config';
    facts('overlay-facts', [['routes from', 'the gateway config file (routing.routes); no overlay']]);
    return;
  }
  $('serving-revision').textContent = `revision ${short(o.serving_revision)}`;
  $('serving-revision').title = o.serving_revision ?? '';
  const same = o.accepted_revision === null || o.accepted_revision === o.serving_revision;
  facts('overlay-facts', [
    ['serving for', o.serving_since === null ? 'unknown' : `${duration(o.serving_age_s)} (since ${time(o.serving_since)})`],
    ['rendered', o.rendered_at === null ? 'not stated (legacy overlay)' : ago(o.rendered_age_s)],
    o.source_generation !== null && ['source generation', String(o.source_generation)],
    [
      'accepted revision',
      same ? 'the same as serving' : `${short(o.accepted_revision)}: validated, but not serving (its build failed)`,
      { id: 'accepted-revision', class: same ? 'ok-text' : 'warn-text' },
    ],
    ['candidates', `${o.candidate_count} in the overlay, ${o.unroutable_count} unroutable`],
    ['selection mode', o.selection_mode ?? '–'],
  ]);
}

function renderRejection(d) {
  const r = d.last_rejection;
  if (r === null) {
    replace('last-rejection', el('p', { class: 'ok-text', text: 'None since the gateway started.' }));
    return;
  }
  replace(
    'last-rejection',
    el(
      'dl',
      {},
      el('dt', { text: 'when' }),
      el('dd', { text: `${ago(r.age_s)} (${time(r.at)})` }),
      el('dt', { text: 'trigger' }),
      el('dd', { text: r.trigger.replaceAll('_', ' ') }),
      el('dt', { text: 'reason' }),
      el('dd', { class: 'problem', id: 'rejection-reason', text: r.reason ?? 'the config did not validate' }),
      el('dt', { text: 'details' }),
      el(
        'dd',
        {},
        el(
          'ul',
          { class: 'plain' },
          r.errors.map((e) => el('li', { text: e })),
        ),
      ),
      el('dt', { text: 'effect' }),
      el('dd', { text: 'none: the serving generation was kept' }),
    ),
  );
}

function renderTrafficCard(d) {
  const last = d.traffic.points.slice(-6);
  const requests = last.reduce((n, p) => n + p.requests, 0);
  const errors = last.reduce((n, p) => n + p.errors, 0);
  const seconds = last.reduce((n, p) => n + p.seconds, 0);
  facts('traffic-facts', [
    ['requests per second', num(requests / seconds, 2), { id: 'requests-per-second' }],
    ['errors (5xx, cut streams)', requests === 0 ? '–' : percent(errors / requests)],
    ['requests', String(requests)],
    // An MCP server's count includes the standing stream the gateway holds to it: not a request.
    ['requests in flight now', String(d.providers.reduce((n, p) => n + (p.type === 'mcp' ? 0 : p.inflight), 0))],
  ]);
}

// ---------------------------------------------------------------- the plots

/** One small line plot: values oldest first (null = no data), with its label, unit and scale. */
function plot(title, unit, series, format) {
  const all = series.flatMap((s) => s.values).filter((v) => v !== null);
  const max = Math.max(...all, 0);
  const top = max > 0 ? max * 1.1 : 1;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 300 80');
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `${title} over the last 15 minutes`);
  series.forEach((s, i) => {
    const n = s.values.length;
    const runs = [[]];
    s.values.forEach((v, x) => {
      if (v === null) {
        if (runs.at(-1).length > 0) runs.push([]);
        return;
      }
      runs.at(-1).push(`${((x / Math.max(1, n - 1)) * 300).toFixed(1)},${(80 - (v / top) * 78).toFixed(1)}`);
    });
    for (const run of runs) {
      if (run.length === 0) continue;
      // A single point still shows, as a short flat segment.
      const points = run.length === 1 ? [run[0], run[0].replace(/^[\d.]+/, (x) => String(Number(x) + 2))] : run;
      const line = document.createElementNS(SVG, 'polyline');
      line.setAttribute('points', points.join(' '));
      if (i > 0) line.setAttribute('class', 'second');
      svg.append(line);
    }
  });
  const latest = series.map((s) => {
    const v = s.values.findLast((x) => x !== null);
    return `${s.label ? `${s.label} ` : ''}${v === undefined ? '–' : format(v)}`;
  });
  const keys =
    series.length > 1 ? series.map((s, i) => el('span', {}, el('span', { class: i === 0 ? 'key-first' : 'key-second' }), s.label)) : [];
  return el(
    'figure',
    { class: 'plot', 'data-plot': title },
    el('div', {}, el('strong', { text: title }), el('span', { class: 'muted', text: ` (${unit})` })),
    el(
      'div',
      { class: 'plot-axis' },
      el('span', { class: 'plot-now', title: 'the latest 10-second step' }, `now: ${latest.join(', ')}`),
      el('span', {}, ...keys, el('span', { text: all.length === 0 ? '  no data yet' : `  top: ${format(top)}` })),
    ),
    svg,
    el('div', { class: 'plot-axis' }, el('span', { text: '15 min ago' }), el('span', { text: 'now' })),
  );
}

function renderPlots(d) {
  const pts = d.traffic.points;
  replace(
    'plots',
    plot('Request rate', 'requests per second', [{ values: pts.map((p) => p.requests / p.seconds) }], (v) => num(v, 2)),
    plot(
      'Error rate',
      '% of requests answered 5xx or cut',
      [{ values: pts.map((p) => (p.requests === 0 ? null : (p.errors / p.requests) * 100)) }],
      (v) => `${num(v, 1)} %`,
    ),
    plot(
      'Latency',
      'ms, requests that reached a provider',
      [
        { label: 'p50', values: pts.map((p) => p.p50_ms) },
        { label: 'p99', values: pts.map((p) => p.p99_ms) },
      ],
      (v) => `${num(v, v < 10 ? 1 : 0)} ms`,
    ),
  );
}

// ---------------------------------------------------------------- the tables

/** The columns a model's candidates and a tool's share: `upstream` names the third, `unit` what they serve. */
function candidateHeaders(upstream, subject, unit) {
  return [
    ['Candidate (stable_id)'],
    ['Provider'],
    [upstream],
    ['Admission', '', 'serving: new and existing sessions; draining: existing only; withdrawn: none'],
    ['Selection group', 'num', 'new requests take the lowest group that admits them'],
    ['Weight', 'num', 'traffic_weight, for weighted selection'],
    ['Breaker', '', "the provider's circuit breaker"],
    [`${unit[0].toUpperCase()}${unit.slice(1)} served`, 'num'],
    [`Share of ${unit}`, 'num', `share of this ${subject}'s ${unit} it served`],
    ['Error rate', 'num', `failed attempts at its provider for this ${subject}, over attempts`],
  ];
}

/** One candidate's row; `notes` go after its admission badge. */
function candidateRow(c, upstream, ...notes) {
  return el(
    'tr',
    { 'data-candidate': c.stable_id, 'data-provider': c.provider, 'data-breaker': c.breaker ?? 'none', 'data-state': c.state },
    el('td', { class: 'mono', text: c.stable_id }),
    el('td', { text: c.provider }),
    el('td', { class: 'mono', text: upstream ?? '–' }),
    el(
      'td',
      { title: CANDIDATE_MEANING[c.state] },
      badge(CANDIDATE_COLOUR[c.state] ?? 'grey', c.state),
      c.credential_problem ? el('span', { class: 'problem', text: ' credential unavailable' }) : null,
      ...notes,
    ),
    el('td', { class: 'num', text: c.selection_group === null ? '–' : String(c.selection_group) }),
    el('td', { class: 'num', text: c.weight === null ? '–' : String(c.weight) }),
    el('td', {}, breakerBadge(c.breaker)),
    el('td', { class: 'num', text: String(c.served) }),
    el('td', { class: 'num', text: percent(c.share) }),
    el('td', { class: `num ${c.error_rate > 0.05 ? 'problem' : ''}`, text: percent(c.error_rate) }),
  );
}

/** What a model's or a tool's caption ends with: its recent requests, and those served by candidates since removed. */
function servedNote(entry, what, holder = what === 'calls' ? 'tool' : 'route') {
  const gone = entry.served - entry.candidates.reduce((n, c) => n + c.served, 0);
  return [` — ${entry.served} ${what} served recently`, gone > 0 ? ` (${gone} by candidates no longer in this ${holder})` : ''];
}

function renderModels(d) {
  $('recent-window').textContent = `(share and error rate: last ${d.recent_window_s / 60} minutes)`;
  if (d.models.length === 0) {
    replace('models', el('p', { class: 'muted', text: 'No model is routed: every request gets 404 no_route.' }));
    return;
  }
  const headers = candidateHeaders('Upstream model', 'model', 'requests');
  const tables = d.models.map((m) => {
    const caption = [
      el('strong', { class: 'mono', text: m.model }),
      ' — ',
      m.routed ? `policy ${m.policy}, ` : '',
      m.admits_new
        ? badge('green', 'takes new requests', 'admits')
        : badge('red', m.routed ? 'no group takes new requests' : 'no route: 404', 'refuses'),
      ...servedNote(m, 'requests'),
    ];
    const rows = m.candidates.map((c) => candidateRow(c, c.upstream_model));
    return table(caption, headers, rows, { 'data-model': m.model });
  });
  replace('models', tables);
}

/** Why a tool is not offered to new sessions. */
function toolRefusal(t) {
  if (!t.routed) return 'no route: not offered';
  if (!t.listed) return 'no server lists it: not offered';
  return 'no group takes new sessions';
}

function renderTools(d) {
  const tools = d.tools ?? [];
  $('tools-section').hidden = tools.length === 0;
  if (tools.length === 0) return;
  const sessions = d.mcp?.sessions ?? 0;
  $('tools-window').textContent =
    `(${sessions} client session${sessions === 1 ? '' : 's'} open; share and error rate: last ${d.recent_window_s / 60} minutes)`;
  const headers = candidateHeaders('Upstream tool', 'tool', 'calls');
  const tables = tools.map((t) => {
    const caption = [
      el('strong', { class: 'mono', text: t.tool }),
      ' — ',
      t.routed ? `policy ${t.policy}, ` : '',
      t.admits_new ? badge('green', 'offered to new sessions', 'admits') : badge('red', toolRefusal(t), 'refuses'),
      ...servedNote(t, 'calls'),
    ];
    const rows = t.candidates.map((c) =>
      candidateRow(
        c,
        c.upstream_tool,
        c.listed || c.state === 'withdrawn' || c.state === 'unroutable'
          ? null
          : el('span', { class: 'warn-text', 'data-listed': 'false', text: ' not listed by its server' }),
      ),
    );
    return table(caption, headers, rows, { 'data-tool': t.tool });
  });
  replace('tools', tables);
}

/** An agent's candidate's card: read (how long ago), or not, and its last problem. */
function cardCell(c) {
  const read = c.card_read ? `read ${ago(c.card_age_s)}` : 'not read: not called';
  return el(
    'td',
    { 'data-card': c.card_read ? 'read' : 'unread' },
    c.card_read ? read : el('span', { class: 'problem', text: read }),
    c.card_problem ? el('div', { class: c.card_read ? 'warn-text' : 'problem', text: c.card_problem }) : null,
  );
}

function renderAgents(d) {
  const agents = d.agents ?? [];
  $('agents-section').hidden = agents.length === 0;
  if (agents.length === 0) return;
  const tracked = d.a2a?.tasks_tracked;
  const ids = tracked === null || tracked === undefined ? 'ids tracked: unknown' : `${num(tracked)} task and context ids tracked`;
  $('agents-window').textContent = `(${ids}; share and error rate: last ${d.recent_window_s / 60} minutes)`;
  const headers = candidateHeaders('Card', 'agent', 'calls');
  headers[2] = ['Card', '', "the upstream agent's card: without one it is not called"];
  const tables = agents.map((a) => {
    const caption = [
      el('strong', { class: 'mono', text: a.agent }),
      ` — policy ${a.policy}, `,
      a.admits_new ? badge('green', 'takes new tasks', 'admits') : badge('red', 'no group takes new tasks', 'refuses'),
      ...servedNote(a, 'calls', 'agent'),
    ];
    const rows = a.candidates.map((c) => {
      const row = candidateRow(c, null);
      row.setAttribute('data-card', c.card_read ? 'read' : 'unread');
      row.children[2].replaceWith(cardCell(c));
      return row;
    });
    return table(caption, headers, rows, { 'data-agent': a.agent });
  });
  replace('agents', tables);
}

function renderProviders(d) {
  const servers = new Map((d.mcp?.servers ?? []).map((s) => [s.provider, s]));
  const rows = d.providers.map((p) => {
    const server = servers.get(p.name);
    return el(
      'tr',
      { 'data-provider': p.name, 'data-breaker': p.breaker },
      el('td', { text: p.name }),
      el('td', { text: p.type }),
      el('td', {}, breakerBadge(p.breaker)),
      el('td', { class: 'num', text: String(p.consecutive_failures) }),
      el('td', { class: 'num', text: p.open_for_ms === null ? '–' : `${num(p.open_for_ms / 1000, 1)} s` }),
      el('td', { class: 'num', text: String(p.inflight) }),
      el('td', { class: 'num', 'data-catalog': server ? String(server.tools ?? 'none') : null, text: catalogSize(server) }),
      el(
        'td',
        {},
        server === undefined ? '–' : server.refreshed_age_s === null ? 'never' : ago(server.refreshed_age_s),
        server?.problem ? el('div', { class: 'problem', text: server.problem }) : null,
      ),
    );
  });
  replace(
    'providers',
    table(
      null,
      [
        ['Provider'],
        ['Type'],
        ['Breaker'],
        ['Consecutive failures', 'num'],
        ['Open for another', 'num', 'while open, requests skip it; then one probe is let through'],
        ['Requests in flight', 'num', "an MCP server's include the gateway's standing stream to it"],
        ['Tools listed', 'num', 'MCP servers: how many tools its last tools/list gave'],
        ['Last listed', '', 'MCP servers: when the gateway last read its tool list, and its last problem'],
      ],
      rows,
    ),
  );
}

/** Where a guardrail is attached: "route m (input, output); team research (input); mcp (arguments)". */
function attachedText(a) {
  const holders = (kind, byName) => Object.entries(byName).map(([name, phases]) => `${kind} ${name} (${phases.join(', ')})`);
  const parts = [
    ...holders('route', a.routes),
    ...holders('team', a.teams),
    ...holders('key', a.keys),
    ...(a.mcp.length > 0 ? [`mcp (${a.mcp.join(', ')})`] : []),
  ];
  return parts.length === 0 ? 'not attached' : parts.join('; ');
}

/** A guardrail's verdicts of one action, over every phase; the title splits them by phase. */
function actionCell(g, action) {
  const byPhase = Object.entries(g.verdicts)
    .map(([phase, actions]) => [phase, actions[action] ?? 0])
    .filter(([, n]) => n > 0);
  const total = byPhase.reduce((n, [, k]) => n + k, 0);
  return el('td', {
    class: 'num',
    'data-action': action,
    title: byPhase.length === 0 ? null : byPhase.map(([phase, n]) => `${phase}: ${n}`).join(', '),
    text: num(total),
  });
}

function renderGuardrails(d) {
  const guardrails = d.guardrails ?? [];
  $('guardrails-section').hidden = guardrails.length === 0;
  if (guardrails.length === 0) return;
  const ms = (x) => (x === null ? '–' : `${num(x, x < 10 ? 2 : 0)} ms`);
  const rows = guardrails.map((g) =>
    el(
      'tr',
      { 'data-guardrail': g.name },
      el('td', { class: 'mono', text: g.name }),
      el('td', { text: g.type }),
      el('td', { text: attachedText(g.attached) }),
      el('td', { class: 'num', text: num(g.checks) }),
      ['allow', 'warn', 'mask', 'block'].map((action) => actionCell(g, action)),
      el('td', { class: 'num', text: `${num(g.errors.fail_open)} / ${num(g.errors.fail_closed)}` }),
      el('td', { class: 'num', text: ms(g.latency_ms.p50) }),
      el('td', { class: 'num', text: ms(g.latency_ms.p99) }),
    ),
  );
  replace(
    'guardrails',
    table(
      null,
      [
        ['Guardrail'],
        ['Type'],
        ['Attached to', '', 'the phases each route, team, key or /mcp checks with it'],
        ['Checks', 'num'],
        ['Allowed', 'num', 'checks that found nothing'],
        ['Warned', 'num'],
        ['Masked', 'num'],
        ['Blocked', 'num'],
        ['Errors (open / closed)', 'num', 'checks its service could not answer: served under fail_open, refused under fail_closed'],
        ['p50', 'num', 'check latency (within 25 %)'],
        ['p99', 'num', 'check latency (within 25 %)'],
      ],
      rows,
    ),
  );
}

/** A route's lookups of one team: hits, misses, hit rate and savings; the title has the other results. */
function cacheRow(route, mode, l) {
  return el(
    'tr',
    { 'data-cache-route': route, 'data-cache-team': l.team },
    el('td', { class: 'mono', text: route }),
    el('td', { text: mode ?? 'off' }),
    el('td', { class: 'mono', text: l.team }),
    el('td', { class: 'num', 'data-result': 'hit', text: num(l.lookups.hit) }),
    el('td', { class: 'num', 'data-result': 'miss', text: num(l.lookups.miss) }),
    el('td', {
      class: 'num',
      title: `refreshed ${l.lookups.refresh}, bypassed ${l.lookups.bypass}, store errors ${l.lookups.error}`,
      text: num(l.lookups.refresh + l.lookups.bypass + l.lookups.error),
    }),
    el('td', { class: 'num', text: percent(l.hit_rate) }),
    el('td', { class: 'num', text: usd(l.saved_usd) }),
  );
}

function renderCache(d) {
  const cache = d.cache ?? null;
  $('cache-section').hidden = cache === null;
  if (cache === null) return;
  $('cache-store').textContent =
    `(${cache.store === 'redis' ? 'Redis, shared by the fleet' : 'in memory, this replica'}; since the gateway started)`;
  const rows = cache.lookups.map((l) => cacheRow(l.route, cache.routes[l.route], l));
  // A route that caches but has had no lookup yet still has its line.
  for (const [route, mode] of Object.entries(cache.routes)) {
    if (cache.lookups.some((l) => l.route === route)) continue;
    rows.push(
      el(
        'tr',
        { 'data-cache-route': route },
        el('td', { class: 'mono', text: route }),
        el('td', { text: mode }),
        el('td', { colspan: 6, class: 'hint', text: 'no lookups yet' }),
      ),
    );
  }
  replace(
    'cache',
    table(
      null,
      [
        ['Route'],
        ['Mode'],
        ['Team'],
        ['Hits', 'num', 'answered from the cache'],
        ['Misses', 'num', 'looked up, not found: answered by a provider'],
        ['Other', 'num', 'refreshed (the client asked for a fresh answer), bypassed (not looked up), store errors (answered as misses)'],
        ['Hit rate', 'num', 'hits over hits, misses, refreshes and errors'],
        ['Saved', 'num', 'what the hits’ entries cost when they were made'],
      ],
      rows,
    ),
  );
}

/** An MCP server's catalog size; '–' for a model provider. */
function catalogSize(server) {
  if (server === undefined) return '–';
  return server.tools === null ? 'not yet' : String(server.tools);
}

/** "used of limit", with a meter that turns amber at 80 % and red at 100 %. */
function against(used, limit, format) {
  if (limit === null) return el('span', {}, format(used), el('span', { class: 'muted', text: ' (no limit)' }));
  const ratio = limit === 0 ? 1 : used / limit;
  const meter = el('span', { class: `meter ${ratio >= 1 ? 'red' : ratio >= 0.8 ? 'amber' : ''}`, title: percent(ratio) }, el('span'));
  meter.firstChild.style.width = `${Math.min(100, ratio * 100)}%`;
  return el('span', {}, `${format(used)} of ${format(limit)}`, meter);
}

function renderTeams(d) {
  const t = d.teams;
  $('teams-section').hidden = t === null;
  if (t === null) return;
  const store = storeLine(t.store);
  if (t.error) {
    replace('teams', store, el('p', { class: 'problem', text: `The governance store did not answer: ${t.error}` }));
    return;
  }
  const rows = t.teams.map((s) =>
    el(
      'tr',
      { 'data-team': s.team },
      el('td', { text: s.team }),
      el('td', {}, against(s.spend_usd, s.budget_usd, usd)),
      el(
        'td',
        {},
        against(s.requests_this_minute, s.rpm_limit, (v) => num(v)),
      ),
      el(
        'td',
        {},
        against(s.tokens_today, s.tokens_per_day_limit, (v) => num(v)),
      ),
    ),
  );
  replace(
    'teams',
    store,
    table(null, [['Team'], ['Spend this month (UTC) / budget'], ['Requests this minute / limit'], ['Tokens today (UTC) / quota']], rows),
  );
}

/** One line on the governance store: which one, whether it answers, and its last error. */
function storeLine(store) {
  if (!store) return [];
  const kind = store.kind === 'redis' ? 'Redis' : 'in memory';
  if (store.up !== false) {
    const errors = store.errors > 0 ? `, ${num(store.errors)} error(s) since start` : '';
    return el('p', { id: 'governance-store', class: 'hint', text: `Governance store (${kind}): up${errors}.` });
  }
  const last = store.last_error;
  const why = last ? ` Last error (${last.operation}, ${last.at}): ${last.message}` : '';
  return el('p', {
    id: 'governance-store',
    class: 'problem',
    text: `Governance store (${kind}): down; limits follow governance.on_store_error.${why}`,
  });
}

function renderReloads(d) {
  const rows = d.reloads.map((r) => {
    const what = r.result === 'rejected' ? (r.errors.length > 0 ? r.errors : [r.reason ?? 'rejected']) : r.changes;
    return el(
      'tr',
      { 'data-result': r.result, 'data-generation': r.generation },
      el('td', { title: r.at, text: `${time(r.at)} (${ago(r.age_s)})` }),
      el('td', { text: r.trigger.replaceAll('_', ' ') }),
      el('td', {}, badge(RESULT_COLOUR[r.result] ?? 'grey', r.result)),
      el('td', { class: 'num', text: num(r.duration_ms, 1) }),
      el(
        'td',
        { class: 'num' },
        r.previous_generation === null || r.previous_generation === r.generation
          ? `#${r.generation}`
          : `#${r.previous_generation} → #${r.generation}`,
      ),
      el('td', { class: 'mono', text: r.revision === null ? '–' : short(r.revision) }),
      el(
        'td',
        { class: r.result === 'rejected' ? 'problem' : '' },
        what.length === 0
          ? el('span', { class: 'muted', text: r.result === 'unchanged' ? 'nothing new' : 'no routing change' })
          : el(
              'ul',
              { class: 'plain' },
              what.map((w) => el('li', { text: w })),
            ),
        r.warnings.length > 0 ? el('div', { class: 'warn-text', text: r.warnings.join('; ') }) : null,
      ),
    );
  });
  replace(
    'reloads',
    table(
      null,
      [
        ['When'],
        ['Trigger'],
        ['Result'],
        ['Duration (ms)', 'num'],
        ['Serving generation', 'num', 'the generation serving after this reload'],
        ['Serving revision', '', 'the overlay revision serving after this reload'],
        ['What changed, or why it was rejected'],
      ],
      rows,
    ),
  );
}

const STORE_TEXT = {
  database: 'heartbeats in the database',
  redis: "heartbeats in the governance store's Redis",
  local: 'this replica alone (no database or Redis shared)',
};

/** Every replica's generation and topology digest side by side; one behind the newest digest, or silent, is red. */
function renderReplicas(d) {
  const r = d.replicas;
  $('replicas-section').hidden = r === null;
  if (r === null) return;
  const behind = r.data.filter((x) => x.behind).length;
  $('replicas-hint').textContent = `(${STORE_TEXT[r.store] ?? r.store}; behind after ${num(r.behind_after_ms / 1000, 1)} s)`;
  $('replicas-problem').hidden = r.error === null;
  $('replicas-problem').textContent = r.error ?? '';
  const rows = r.data.map((x) =>
    el(
      'tr',
      { 'data-instance': x.instance, 'data-behind': String(x.behind), 'data-digest': x.digest },
      el('td', {}, x.instance, x.self ? el('span', { class: 'muted', text: ' (this one)' }) : null),
      el('td', { class: 'num', text: `#${x.generation}` }),
      el('td', { class: 'mono', title: x.digest, text: short(x.digest) }),
      el('td', { title: x.built_at, text: ago(x.built_age_s) }),
      el('td', { title: x.heartbeat_at, text: ago(x.heartbeat_age_s) }),
      el('td', { class: x.last_reload_error === null ? 'muted' : 'problem', text: x.last_reload_error ?? 'none' }),
      el('td', {}, x.behind ? badge('red', 'behind') : badge('green', x.digest === r.newest_digest ? 'newest' : 'in step', 'in_step')),
    ),
  );
  replace(
    'replicas',
    table(
      behind === 0 ? null : `${behind} of ${r.data.length} replicas behind`,
      [
        ['Instance'],
        ['Generation', 'num', "each replica's own count of the generations it built"],
        ['Topology', '', 'the digest of its providers, routes and prices: the same on replicas that serve the same'],
        ['Built'],
        ['Heartbeat'],
        ['Last reload error', '', 'the last refused reload; cleared by a reload that applies'],
        [
          'State',
          '',
          `behind: another digest than the newest one's for longer than ${num(r.behind_after_ms / 1000, 1)} s, or no heartbeat for that long`,
        ],
      ],
      rows,
    ),
  );
}

// ---------------------------------------------------------------- teams and keys

/** The managed view polls less often: it reads the database, not the serving generation. */
const MANAGED_POLL_MS = 10_000;
const DAY_MS = 86_400_000;
let managedTimer = null;
let managedShown = false;

/** One admin API call: its JSON, or an Error with the gateway's message. */
async function adminCall(method, path, body) {
  return (await adminRequest(method, path, { body })).data;
}

/** The day (UTC, YYYY-MM-DD) `daysAgo` days before today. */
function utcDay(daysAgo) {
  return new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
}

/** Cost per day of each team over the last 30 days, from the ledger's rollups; null when the ledger does not answer. */
async function spendByTeam() {
  try {
    const usage = await adminCall('GET', `usage?from=${utcDay(29)}&to=${utcDay(-1)}&group_by=day,team`);
    const byTeam = new Map();
    for (const row of usage.rows) {
      if (!byTeam.has(row.team)) byTeam.set(row.team, new Map());
      byTeam.get(row.team).set(row.day, row.cost_usd);
    }
    return byTeam;
  } catch {
    return null;
  }
}

function spendChart(team, days) {
  const values = [];
  for (let i = 29; i >= 0; i--) values.push(days?.get(utcDay(i)) ?? 0);
  const top = Math.max(...values, 0) || 1;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 300 40');
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('class', 'spend-chart');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `spend of team ${team} per day, last 30 days`);
  values.forEach((v, i) => {
    const h = (v / top) * 38;
    const bar = document.createElementNS(SVG, 'rect');
    bar.setAttribute('x', String(i * 10 + 1));
    bar.setAttribute('width', '8');
    bar.setAttribute('y', String(40 - h));
    bar.setAttribute('height', String(h));
    bar.setAttribute('data-day', utcDay(29 - i));
    svg.append(bar);
  });
  return svg;
}

function limitsText(t) {
  const parts = [];
  if (t.rate_limit?.rpm !== undefined) parts.push(`${num(t.rate_limit.rpm)} rpm`);
  if (t.rate_limit?.tpm !== undefined) parts.push(`${num(t.rate_limit.tpm)} tpm`);
  if (t.quota?.tokens_per_day !== undefined) parts.push(`${num(t.quota.tokens_per_day)} tokens/day`);
  if (t.budget?.usd_per_month !== undefined) parts.push(`${usd(t.budget.usd_per_month)}/month (${t.budget.on_exceeded ?? 'block'})`);
  if (t.allowed_models !== undefined) parts.push(`models ${t.allowed_models.join(', ')}`);
  return parts.length === 0 ? 'no limits' : parts.join(' · ');
}

function showSecret(title, secret) {
  $('new-secret-title').textContent = title;
  $('new-secret-value').textContent = secret;
  $('new-secret').hidden = false;
}

function showManagedProblem(message) {
  $('managed-problem').hidden = message === '';
  $('managed-problem').textContent = message;
}

/** A button that runs an admin write, then redraws; a refusal is shown above the teams. */
function action(label, attrs, run) {
  const b = el('button', { type: 'button', ...attrs, text: label });
  b.addEventListener('click', async () => {
    b.disabled = true;
    try {
      await run();
      showManagedProblem('');
    } catch (err) {
      showManagedProblem(`${label}: ${err.message}`);
    }
    b.disabled = false;
    refreshManaged();
  });
  return b;
}

/** A read_only role may change nothing: the page offers it no write. */
function mayWrite() {
  return operator?.role !== 'read_only';
}

function keyRow(k) {
  const managed = k.managed_by === 'database';
  // A key of the config file is never revoked: it is removed from the file instead.
  const revoked = k.revoked_at !== null && k.revoked_at !== undefined;
  const actions =
    managed && !revoked && mayWrite()
      ? [
          action('Rotate', { 'data-action': 'rotate', 'data-key': k.id }, async () => {
            const r = await adminCall('POST', `keys/${encodeURIComponent(k.id)}/rotate`, { grace_s: 0 });
            showSecret(`New secret of key ${k.id}`, r.key);
          }),
          action('Revoke', { 'data-action': 'revoke', 'data-key': k.id }, async () => {
            if (!window.confirm(`Revoke key ${k.id}? It stops working at once.`)) throw new Error('not revoked');
            await adminCall('POST', `keys/${encodeURIComponent(k.id)}/revoke`, {});
          }),
        ]
      : [];
  return el(
    'tr',
    { 'data-key': k.id, 'data-revoked': revoked },
    el('td', { class: 'mono', text: k.id }),
    el('td', { class: 'mono', text: k.prefix === null ? '–' : `${k.prefix}…` }),
    el('td', { title: k.last_used_at, text: k.last_used_at ? moment(k.last_used_at) : 'never' }),
    el('td', { title: k.expires_at, text: k.expires_at ? moment(k.expires_at) : 'never' }),
    el('td', {}, revoked ? badge('red', 'revoked') : badge(managed ? 'green' : 'grey', managed ? 'managed' : 'config file', k.managed_by)),
    el('td', {}, ...actions),
  );
}

function renderManaged(teams, keys, spend) {
  const month = new Date().toISOString().slice(0, 7);
  const ledger = spend === null ? 'no usage ledger data' : 'spend from the usage ledger, UTC days';
  $('managed-hint').textContent = mayWrite() ? `(${ledger})` : `(${ledger}; read-only: nothing can be changed from here)`;
  const cards = teams.map((t) => {
    const days = spend?.get(t.id) ?? null;
    let monthSpend = 0;
    for (const [day, cost] of days ?? []) if (day.startsWith(month)) monthSpend += cost;
    const own = keys.filter((k) => k.team === t.id);
    return el(
      'article',
      { class: 'team-card', 'data-team': t.id },
      el(
        'h3',
        {},
        t.id,
        ' ',
        badge(t.managed_by === 'database' ? 'green' : 'grey', t.managed_by === 'database' ? 'managed' : 'config file', t.managed_by),
      ),
      el('p', { class: 'hint', text: limitsText(t) }),
      el('p', { 'data-spend': monthSpend.toFixed(6) }, `Spend this month: ${usd(monthSpend)}`),
      spendChart(t.id, days),
      table(null, [['Key'], ['Prefix'], ['Last used'], ['Expires'], ['Kind'], ['']], own.map(keyRow)),
      mayWrite()
        ? action('Create key', { 'data-action': 'create-key', 'data-team': t.id }, async () => {
            const r = await adminCall('POST', 'keys', { team: t.id });
            showSecret(`Secret of new key ${r.id}`, r.key);
          })
        : null,
    );
  });
  replace('managed', cards.length === 0 ? el('p', { class: 'muted', text: 'No teams.' }) : cards);
}

async function refreshManaged() {
  if (managedTimer !== null) clearTimeout(managedTimer);
  managedTimer = null;
  const mine = session;
  try {
    const [teams, keys, spend] = await Promise.all([allPages('teams'), allPages('keys'), spendByTeam()]);
    if (mine !== session) return;
    renderManaged(teams, keys, spend);
  } catch (err) {
    if (mine !== session) return;
    // A token that expired while a team role's view was open: nothing else would notice.
    if (err.status === 401) return refused(err.message);
    showManagedProblem(
      err.status === 404 && operator?.role.startsWith('team:')
        ? 'This gateway has no database, so it keeps no teams and keys to show: a team role sees nothing else here.'
        : `Cannot read the teams and keys: ${err.message}`,
    );
  }
  managedTimer = setTimeout(refreshManaged, MANAGED_POLL_MS);
}

/** The view exists when the gateway has a database; it is drawn on its own timer. */
function renderManagedSection(d) {
  const on = d.database !== null && d.database !== undefined;
  $('managed-section').hidden = !on;
  if (on && !managedShown) {
    managedShown = true;
    refreshManaged();
  }
}

$('new-secret-done').addEventListener('click', () => {
  $('new-secret-value').textContent = '';
  $('new-secret').hidden = true;
});

// ---------------------------------------------------------------- polling

function render(d) {
  renderGeneration(d);
  renderOverlay(d);
  renderRejection(d);
  renderTrafficCard(d);
  renderReplicas(d);
  renderPlots(d);
  renderModels(d);
  renderTools(d);
  renderAgents(d);
  renderProviders(d);
  renderGuardrails(d);
  renderCache(d);
  renderTeams(d);
  renderManagedSection(d);
  renderTopologySection(d, mayWrite());
  renderReloads(d);
}

function showConnection() {
  const c = $('connection');
  const age = Date.now() - lastOk;
  if (lastOk > 0 && age < STALE_MS) {
    c.className = 'connection ok';
    c.textContent = `Live: updated every ${POLL_MS / 1000} s, last at ${new Date(lastOk).toLocaleTimeString()}`;
  } else if (lastOk > 0 || lastProblem !== '') {
    c.className = 'connection stale';
    c.textContent =
      lastOk > 0
        ? `Stale: no update for ${Math.round(age / 1000)} s (${lastProblem}). The figures below are from ${new Date(lastOk).toLocaleTimeString()}.`
        : `Cannot reach the gateway's admin API: ${lastProblem}`;
  }
}

/** Stops every update and shows the form, with why the last token was refused ('' for none). */
function askForToken(message) {
  session++;
  clearTimeout(pollTimer);
  clearTimeout(managedTimer);
  managedTimer = null;
  managedShown = false;
  operator = null;
  lastOk = 0;
  lastProblem = '';
  $('signed-in').hidden = true;
  $('status').hidden = true;
  delete $('status').dataset.view;
  // Nothing the refused token was shown stays in the document, a new key's secret least of all.
  $('new-secret-value').textContent = '';
  $('new-secret').hidden = true;
  showManagedProblem('');
  replace('managed');
  stopTopology();
  $('token-form').hidden = false;
  $('token-error').hidden = message === '';
  $('token-error').textContent = message;
  $('connection').textContent = 'Waiting for a token.';
  $('connection').className = 'connection';
}

/** The token in this tab was refused: it is dropped, and the form says what the gateway said. */
function refused(reason) {
  sessionStorage.removeItem(TOKEN_KEY);
  askForToken(`The gateway refused this token: ${reason}`);
}

/** The gateway's own words for a refusal (its error message), or the status. */
async function reasonOf(res) {
  try {
    return (await res.json()).error?.message ?? `HTTP ${res.status}`;
  } catch {
    return `HTTP ${res.status}`;
  }
}

/** Who the gateway takes the caller for; null when it will not say (a gateway before /admin/v1/me). */
async function whoAmI() {
  try {
    return await adminCall('GET', 'me');
  } catch {
    return null;
  }
}

function showSignedIn(me) {
  operator = me ?? { id: 'unknown', role: 'unknown' };
  $('signed-in-as').textContent = me ? `Signed in as ${me.id} (${me.role})` : 'Signed in with a token';
  $('signed-in').hidden = false;
}

/**
 * A team role may not read the gateway's status (403), only its own team's teams and keys:
 * the page shows those, says so, and stops polling the status.
 */
function showTeamView(me) {
  const team = me.role.slice('team:'.length);
  showSignedIn(me);
  $('token-form').hidden = true;
  $('status').hidden = false;
  $('status').dataset.view = 'team';
  $('team-note').hidden = false;
  $('team-note').textContent =
    `Role ${me.role} sees the keys and spend of team ${team} only (when the gateway has a database), and may create, ` +
    "rotate and revoke that team's keys. The gateway's status (generations, routes, providers, reloads) is for the " +
    'admin and read_only roles.';
  $('managed-section').hidden = false;
  $('connection').className = 'connection';
  $('connection').textContent = `Team view: updated every ${MANAGED_POLL_MS / 1000} s.`;
  if (!managedShown) {
    managedShown = true;
    refreshManaged();
  }
}

async function poll() {
  const mine = session;
  const token = sessionStorage.getItem(TOKEN_KEY);
  try {
    const res = await fetch('admin/status/page-data', {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      cache: 'no-store',
    });
    if (mine !== session) return;
    if (res.status === 401) {
      // Stop polling until a token is given: the form's submit starts it again.
      if (token) refused(await reasonOf(res));
      else askForToken('');
      return;
    }
    if (res.status === 403 && token) {
      const reason = await reasonOf(res);
      const me = await whoAmI();
      if (mine !== session) return;
      if (me?.role.startsWith('team:')) showTeamView(me);
      else refused(reason);
      return;
    }
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const data = await res.json();
    if (token && operator === null) {
      const me = await whoAmI();
      if (mine !== session) return;
      showSignedIn(me);
    }
    $('token-form').hidden = true;
    $('team-note').hidden = true;
    $('status').hidden = false;
    render(data);
    lastOk = Date.now();
    lastProblem = '';
  } catch (err) {
    if (mine !== session) return;
    lastProblem = err instanceof Error ? err.message : String(err);
  }
  showConnection();
  pollTimer = setTimeout(poll, POLL_MS);
}

$('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  $('token').value = '';
  $('token-form').hidden = true;
  $('connection').textContent = 'Signing in…';
  session++;
  poll();
});

// Sign out: the token leaves the tab, and a fresh document starts with nothing of the
// signed-in view in it (its first poll, without a token, brings the form back).
$('sign-out').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  location.reload();
});

setInterval(showConnection, 1000);
poll();
