// The "Providers and routes" view: the providers, model routes, tool routes and prices the
// admin API lists (/admin/v1/{providers,routes,tool-routes,pricing}), read on its own timer.
// The database's providers and routes get Edit and Delete (their forms: provider-form.js and
// route-form.js; the writes: topology-writes.js); the config file's are read-only here, as
// the API holds them (409 managed_by_config), and say so. A key is only ever shown as the
// reference it is ({env: NAME} or {file: PATH}).

import { $, allPages, badge, el, replace, table } from './page.js';
import { openProviderForm } from './provider-form.js';
import { openRouteForm } from './route-form.js';
import { closeForms, deleteObject, initWrites, reloadView, setProviderNames } from './topology-writes.js';

/** Reads the database, not the serving generation: less often than the status. */
const POLL_MS = 10_000;

let timer = null;
let shown = false;
/** Counts sign-ins and sign-outs: a read under way when the token changed draws nothing. */
let epoch = 0;
let canWrite = false;

/** A secret reference as the config file writes it; nothing else is ever shown for a key. */
function referenceText(ref) {
  if (ref === undefined || ref === null) return '–';
  if (typeof ref.env === 'string') return `{env: ${ref.env}}`;
  if (typeof ref.file === 'string') return `{file: ${ref.file}}`;
  return '(not a reference)';
}

function managedBadge(o) {
  return o.managed_by === 'database' ? badge('green', 'database', 'database') : badge('grey', 'config file', 'config');
}

/** A database object's Edit and Delete; a config file object's note why it has none. */
function actionsCell(kind, o) {
  if (o.managed_by !== 'database')
    return el('td', { class: 'hint', 'data-readonly': 'config' }, 'read-only: it is the config file’s; change it there');
  if (!canWrite) return el('td', { class: 'hint', text: 'read-only token' });
  const id = kind === 'price' ? o.model : o.id;
  const edit = el('button', { type: 'button', 'data-action': 'edit', text: 'Edit' });
  edit.addEventListener('click', () => (kind === 'provider' ? openProviderForm(id) : openRouteForm(id)));
  const del = el('button', { type: 'button', 'data-action': 'delete', text: 'Delete' });
  del.addEventListener('click', () => deleteObject(kind, id, o.version));
  return el('td', {}, kind === 'provider' || kind === 'route' ? edit : null, ' ', del);
}

function providerRow(p) {
  return el(
    'tr',
    { 'data-topology-provider': p.id, 'data-managed-by': p.managed_by },
    el('td', { class: 'mono', text: p.id }),
    el('td', { text: p.type }),
    el('td', { class: 'mono', text: p.base_url ?? (p.region ? `(the ${p.type} endpoint of ${p.region})` : '–') }),
    el('td', { class: 'mono', 'data-key': 'api_key', text: referenceText(p.api_key) }),
    el('td', { text: p.region ?? '–' }),
    el('td', { text: Array.isArray(p.zones) && p.zones.length > 0 ? p.zones.join(', ') : '–' }),
    el('td', {}, managedBadge(p)),
    actionsCell('provider', p),
  );
}

/** A route's candidates: provider, upstream name and weight, one to a line. */
function candidatesCell(candidates, upstream) {
  return el(
    'td',
    {},
    el(
      'ul',
      { class: 'plain' },
      (candidates ?? []).map((c) =>
        el(
          'li',
          { 'data-candidate-provider': c.provider, 'data-weight': String(c.weight ?? 1) },
          el('span', { class: 'mono', text: c.provider }),
          c[upstream] ? el('span', { class: 'muted', text: ` as ${c[upstream]}` }) : null,
          ` · weight ${c.weight ?? 1}`,
        ),
      ),
    ),
  );
}

function routeRow(kind, r, upstream) {
  return el(
    'tr',
    { [`data-topology-${kind === 'route' ? 'route' : 'tool-route'}`]: r.id, 'data-managed-by': r.managed_by },
    el('td', { class: 'mono', text: r.id }),
    el('td', { text: r.policy ?? 'ordered' }),
    candidatesCell(r.candidates, upstream),
    el('td', {}, managedBadge(r)),
    actionsCell(kind, r),
  );
}

function priceRow(p) {
  const usd = (x) => (typeof x === 'number' ? `${x} USD` : '–');
  return el(
    'tr',
    { 'data-topology-price': p.model, 'data-managed-by': p.managed_by },
    el('td', { class: 'mono', text: p.model }),
    el('td', { class: 'num', text: usd(p.input_usd_per_mtok) }),
    el('td', { class: 'num', text: usd(p.output_usd_per_mtok) }),
    el('td', {}, managedBadge(p)),
    actionsCell('price', p),
  );
}

function renderTopology(providers, routes, toolRoutes, prices) {
  const actions = ['', '', 'Edit and Delete for the database’s objects; the config file’s are read-only'];
  replace(
    'topology',
    el('h3', { text: 'Providers' }),
    providers.length === 0
      ? el('p', { class: 'muted', text: 'No providers.' })
      : table(
          null,
          [
            ['Name'],
            ['Type'],
            ['Base URL'],
            ['API key', '', 'a reference: the secret itself is never shown'],
            ['Region'],
            ['Zones'],
            ['Managed by'],
            actions,
          ],
          providers.map(providerRow),
          { id: 'topology-providers' },
        ),
    el('h3', { text: 'Model routes' }),
    routes.length === 0
      ? el('p', { class: 'muted', text: 'No model routes.' })
      : table(
          null,
          [['Model'], ['Policy'], ['Candidates (provider, upstream model, weight)'], ['Managed by'], actions],
          routes.map((r) => routeRow('route', r, 'model')),
          { id: 'topology-routes' },
        ),
    toolRoutes.length === 0
      ? null
      : [
          el('h3', { text: 'Tool routes' }),
          table(
            null,
            [['Tool'], ['Policy'], ['Candidates (server, upstream tool, weight)'], ['Managed by'], actions],
            toolRoutes.map((r) => routeRow('tool_route', r, 'tool')),
            { id: 'topology-tool-routes' },
          ),
        ],
    prices.length === 0
      ? null
      : [
          el('h3', { text: 'Prices' }),
          table(
            null,
            [['Model'], ['Input, per million tokens', 'num'], ['Output, per million tokens', 'num'], ['Managed by'], actions],
            prices.map(priceRow),
            { id: 'topology-prices' },
          ),
        ],
  );
}

/** Reads the four lists and redraws them; then again in POLL_MS. */
export async function refreshTopology() {
  clearTimeout(timer);
  timer = null;
  const mine = epoch;
  try {
    const [providers, routes, toolRoutes, prices] = await Promise.all(
      ['providers', 'routes', 'tool-routes', 'pricing'].map((p) => allPages(p)),
    );
    if (mine !== epoch) return;
    setProviderNames(providers.map((p) => p.id));
    renderTopology(providers, routes, toolRoutes, prices);
    $('topology-section').dataset.loaded = 'true';
  } catch (err) {
    if (mine !== epoch) return;
    replace('topology', el('p', { class: 'problem', text: `Cannot read the providers and routes: ${err.message}` }));
  }
  timer = setTimeout(refreshTopology, POLL_MS);
}

/**
 * Where the listed objects come from (`database.topology`), and so what may be written: under
 * `file`, or `database` before its seed, the API refuses every write, and the view offers none.
 */
function sourceHint(db, mayWrite) {
  const mode = db.topology ?? 'merged';
  const unseeded = mode === 'database' && db.topology_seeded === false;
  const source =
    mode === 'file'
      ? 'database.topology: file; every object is the config file’s, read-only here'
      : unseeded
        ? 'database.topology: database, not seeded yet (switchyard db seed --config FILE); read-only until then'
        : mode === 'database'
          ? 'database.topology: database'
          : 'database.topology: merged; the config file’s are read-only here';
  const who = mayWrite ? '' : '; read-only: nothing can be changed from here';
  return { text: `(from the admin API, every ${POLL_MS / 1000} s; ${source}${who})`, writable: mayWrite && mode !== 'file' && !unseeded };
}

/** Shown when the gateway has a database (the API keeps providers and routes there); drawn on its own timer. */
export function renderTopologySection(d, mayWrite) {
  const on = d.database !== null && d.database !== undefined;
  $('topology-section').hidden = !on;
  if (!on) return;
  const hint = sourceHint(d.database, mayWrite);
  canWrite = hint.writable;
  $('new-provider').hidden = !canWrite;
  $('new-route').hidden = !canWrite;
  $('topology-hint').textContent = hint.text;
  if (!shown) {
    shown = true;
    refreshTopology();
  }
}

/** Signed out, or the token was refused: nothing of the view stays, nothing more is read. */
export function stopTopology() {
  epoch++;
  clearTimeout(timer);
  timer = null;
  shown = false;
  canWrite = false;
  closeForms();
  replace('topology');
  delete $('topology-section').dataset.loaded;
  $('topology-section').hidden = true;
}

initWrites(refreshTopology);
$('topology-reload').addEventListener('click', () => reloadView());
$('new-provider').addEventListener('click', () => openProviderForm(null));
$('new-route').addEventListener('click', () => openRouteForm(null));
