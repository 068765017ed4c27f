// Every write of the "Providers and routes" view: the provider form (with its Test, the probe
// of the draft, shown before anything is saved), the route form (policy, candidates, weights),
// and deletes. A change is made against the ETag the object was read with (If-Match), so a
// change made meanwhile by someone else is a 412, never overwritten. Each answer says the
// reload it caused (x-switchyard-reload, -generation, -keyring, and its warnings); each
// refusal its message and every field at fault by path.

import { $, AdminError, adminRequest, badge, el, replace } from './page.js';

const RESULT_COLOUR = { applied: 'green', unchanged: 'grey', rejected: 'red' };
/** What the API adds to an object; never sent back. */
const META = ['id', 'model', 'managed_by', 'version', 'created_at', 'updated_at', 'warnings'];
/** What the provider form has a field for; the rest goes in its JSON. */
const PROVIDER_FIELDS = ['type', 'base_url', 'api_key', 'region', 'zones'];
const ROUTE_FIELDS = ['policy', 'candidates'];
const COLLECTION = { provider: 'providers', route: 'routes', tool_route: 'tool-routes', price: 'pricing' };
const NOUN = { provider: 'provider', route: 'route', tool_route: 'tool route', price: 'price' };

let refresh = async () => {};
/** The object a form edits: its kind, name, the fields and ETag it was read with; id null for a new one. */
let editing = null;

export function initWrites(onWritten) {
  refresh = onWritten;
}

// ---------------------------------------------------------------- what an answer says

/** The reload a write caused, from its answer's headers and warnings. */
function showOutcome(what, res) {
  const reload = res.headers.get('x-switchyard-reload');
  const generation = res.headers.get('x-switchyard-generation');
  const keyring = res.headers.get('x-switchyard-keyring');
  const warnings = Array.isArray(res.data?.warnings) ? res.data.warnings : [];
  showProblem(null);
  const box = $('topology-outcome');
  box.hidden = false;
  box.dataset.reload = reload ?? 'none';
  box.dataset.generation = generation ?? '';
  replace(
    'topology-outcome',
    el('strong', { text: what }),
    reload === null
      ? el('span', { class: 'muted', text: ': the gateway reported no reload' })
      : [
          ': ',
          badge(RESULT_COLOUR[reload] ?? 'grey', `reload ${reload}`, reload),
          el('span', { 'data-field': 'generation', text: ` serving generation #${generation}` }),
          el('span', { 'data-field': 'keyring', text: `, keyring #${keyring}` }),
        ],
    warnings.length === 0
      ? el('div', { class: 'muted', 'data-field': 'warnings', text: 'No warnings.' })
      : el(
          'ul',
          { class: 'plain warn-text', 'data-field': 'warnings' },
          warnings.map((w) => el('li', { text: `warning: ${w}` })),
        ),
  );
}

/** A refusal's words: its message, code, and each field at fault with its path. */
function problemParts(err) {
  const paths = err instanceof AdminError ? err.errors : [];
  return [
    el('div', { 'data-field': 'message', text: err.message }),
    err.code ? el('div', { class: 'muted', 'data-field': 'code', text: `${err.status} ${err.code}` }) : null,
    paths.length === 0
      ? null
      : el(
          'ul',
          { class: 'plain', 'data-field': 'errors' },
          paths.map((e) =>
            el('li', { 'data-path': e.path }, el('code', { text: e.path || '(the object)' }), el('span', { text: `: ${e.message}` })),
          ),
        ),
    err.status === 412
      ? el('div', { 'data-field': 'stale' }, 'It changed since this view read it: ', reloadButton(), ', then make the change again.')
      : null,
  ];
}

function reloadButton() {
  const b = el('button', { type: 'button', 'data-action': 'reload-view', text: 'reload this view' });
  b.addEventListener('click', () => reloadView());
  return b;
}

/** Shows what `what` was refused with (null hides it). */
function showProblem(what, err) {
  const box = $('topology-problem');
  box.hidden = what === null;
  if (what === null) return replace('topology-problem');
  box.dataset.status = String(err.status ?? '');
  box.dataset.code = err.code ?? '';
  replace('topology-problem', el('strong', { text: `${what}: refused` }), problemParts(err));
  $('topology-outcome').hidden = true;
}

/**
 * Runs one write with its buttons disabled; shows its outcome (`done`) or its refusal
 * (`doing`), then re-reads the view.
 */
async function write(done, doing, buttons, run) {
  for (const b of buttons) b.disabled = true;
  try {
    const res = await run();
    showOutcome(done, res);
    closeForms();
  } catch (err) {
    showProblem(doing, err);
  } finally {
    for (const b of buttons) b.disabled = false;
  }
  await refresh();
}

/** Parses a form's JSON field; a mistake is refused here with the field's name, nothing sent. */
function jsonField(text, label) {
  let value;
  try {
    value = JSON.parse(text.trim() === '' ? '{}' : text);
  } catch (err) {
    throw new AdminError(0, { message: `${label} is not JSON: ${err.message}`, errors: [{ path: label, message: 'not JSON' }] });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new AdminError(0, { message: `${label} must be a JSON object`, errors: [{ path: label, message: 'must be an object' }] });
  return value;
}

/** The fields a form does not show: they go in its JSON, as the object has them. */
function otherFields(object, shown) {
  return Object.fromEntries(Object.entries(object ?? {}).filter(([k]) => !META.includes(k) && !shown.includes(k)));
}

/** A top-level merge patch from `before` to `after`: a field left out is removed (null). */
function patchOf(before, after) {
  const patch = { ...after };
  for (const k of Object.keys(before)) if (!META.includes(k) && !(k in after)) patch[k] = null;
  return patch;
}

/** Reads one object with its ETag, the version a change is made against. */
async function readObject(kind, id) {
  const res = await adminRequest('GET', `${COLLECTION[kind]}/${encodeURIComponent(id)}`);
  return { object: res.data, etag: res.headers.get('etag') };
}

/** Saves the form's object: a create, or a patch of the one it was read as, against its ETag. */
function save(kind, body, button) {
  const e = editing;
  const name = e.id ?? body.id ?? '';
  const [done, doing] = e.id === null ? ['Created', 'Creating'] : ['Changed', 'Changing'];
  write(`${done} ${NOUN[kind]} "${name}"`, `${doing} ${NOUN[kind]} "${name}"`, [button], () =>
    e.id === null
      ? adminRequest('POST', COLLECTION[kind], { body })
      : adminRequest('PATCH', `${COLLECTION[kind]}/${encodeURIComponent(e.id)}`, { body: patchOf(e.object, body), ifMatch: e.etag }),
  );
}

export function deleteObject(kind, id, version) {
  if (!window.confirm(`Delete ${NOUN[kind]} "${id}"? The gateway stops serving it at once.`)) return;
  const buttons = [...document.querySelectorAll('#topology button[data-action="delete"]')];
  // The version the view listed it with: a change made since is a 412, not deleted unseen.
  write(`Deleted ${NOUN[kind]} "${id}"`, `Deleting ${NOUN[kind]} "${id}"`, buttons, () =>
    adminRequest('DELETE', `${COLLECTION[kind]}/${encodeURIComponent(id)}`, { ifMatch: `"${version}"` }),
  );
}

/** Re-reads the lists and, for a form that edits an object, the object's fields and ETag. */
export async function reloadView() {
  if (editing?.id) {
    const { kind, id } = editing;
    try {
      await (kind === 'provider' ? openProviderForm(id) : openRouteForm(id));
    } catch {
      // Gone meanwhile: the lists say so.
    }
  }
  showProblem(null);
  await refresh();
}

export function closeForms() {
  editing = null;
  $('provider-form').hidden = true;
  $('route-form').hidden = true;
  $('probe-result').hidden = true;
  replace('probe-result');
}

export function setProviderNames(names) {
  replace(
    'provider-names',
    names.map((n) => el('option', { value: n })),
  );
}

// ---------------------------------------------------------------- the provider form

/** The draft the form holds: the object the API creates (its name in `id`). */
function providerDraft() {
  const f = $('provider-form').elements;
  const body = jsonField(f.other.value, 'other fields');
  body.id = f.id.value.trim();
  body.type = f.type.value;
  if (f.base_url.value.trim() !== '') body.base_url = f.base_url.value.trim();
  if (f.key_source.value !== '') body.api_key = { [f.key_source.value]: f.key_name.value.trim() };
  if (f.region.value.trim() !== '') body.region = f.region.value.trim();
  const zones = f.zones.value
    .split(',')
    .map((z) => z.trim())
    .filter((z) => z !== '');
  if (zones.length > 0) body.zones = zones;
  return body;
}

export async function openProviderForm(id) {
  closeForms();
  const read =
    id === null
      ? { object: {}, etag: null }
      : await readObject('provider', id).catch((err) => showProblem(`Reading provider "${id}"`, err));
  if (read === undefined) return;
  const o = read.object;
  editing = { kind: 'provider', id, object: o, etag: read.etag };
  const f = $('provider-form').elements;
  $('provider-form-title').textContent = id === null ? 'New provider' : `Edit provider ${id}`;
  f.id.value = id ?? '';
  f.id.readOnly = id !== null;
  f.type.value = o.type ?? 'openai';
  f.base_url.value = o.base_url ?? '';
  const source = o.api_key?.env !== undefined ? 'env' : o.api_key?.file !== undefined ? 'file' : '';
  f.key_source.value = source;
  f.key_name.value = source === '' ? '' : o.api_key[source];
  f.region.value = o.region ?? '';
  f.zones.value = Array.isArray(o.zones) ? o.zones.join(', ') : '';
  f.other.value = JSON.stringify(otherFields(o, PROVIDER_FIELDS), null, 2);
  $('provider-form').hidden = false;
  f.id.focus();
}

/** The probe's answer: reachable, TLS, auth, latency and models, or why it was refused. */
function showProbe(draft, answer) {
  const box = $('probe-result');
  box.hidden = false;
  box.classList.remove('stale');
  box.dataset.reachable = String(answer.reachable);
  const models = Array.isArray(answer.models) ? answer.models : [];
  const shownModels = models.slice(0, 20);
  replace(
    'probe-result',
    el('strong', { text: `Test of ${draft.id || 'the draft'} (not saved)` }),
    el(
      'dl',
      {},
      el('dt', { text: 'reachable' }),
      el('dd', { 'data-field': 'reachable' }, answer.reachable ? badge('green', 'yes', 'reachable') : badge('red', 'no', 'unreachable')),
      el('dt', { text: 'TLS' }),
      el('dd', { 'data-field': 'tls', class: String(answer.tls).startsWith('failed') ? 'problem' : '', text: String(answer.tls) }),
      el('dt', { text: 'auth' }),
      el(
        'dd',
        { 'data-field': 'auth' },
        answer.auth === 'accepted'
          ? badge('green', 'accepted')
          : answer.auth === 'refused'
            ? badge('red', 'refused')
            : badge('grey', 'not known', 'unknown'),
      ),
      el('dt', { text: 'latency' }),
      el('dd', { 'data-field': 'latency', text: typeof answer.latency_ms === 'number' ? `${Math.round(answer.latency_ms)} ms` : '–' }),
      el('dt', { text: 'models' }),
      el(
        'dd',
        { 'data-field': 'models', 'data-count': String(models.length) },
        models.length === 0 ? 'none listed' : `${models.length}: ${shownModels.join(', ')}${models.length > 20 ? ', …' : ''}`,
      ),
      answer.error ? [el('dt', { text: 'error' }), el('dd', { class: 'problem', 'data-field': 'error', text: answer.error })] : null,
    ),
  );
}

async function testProvider() {
  const button = $('provider-test');
  const box = $('probe-result');
  let draft;
  button.disabled = true;
  try {
    draft = providerDraft();
    box.hidden = false;
    box.dataset.reachable = '';
    replace('probe-result', el('span', { class: 'muted', text: 'Testing…' }));
    showProbe(draft, (await adminRequest('POST', 'providers/test', { body: draft })).data);
  } catch (err) {
    box.hidden = false;
    box.dataset.reachable = 'refused';
    replace('probe-result', el('strong', { class: 'problem', text: 'The test was refused' }), problemParts(err));
  } finally {
    button.disabled = false;
  }
}

$('provider-test').addEventListener('click', testProvider);
$('provider-cancel').addEventListener('click', closeForms);
// A result says what the draft was when tested: once the form changes, it says so.
$('provider-form').addEventListener('input', () => {
  const box = $('probe-result');
  if (!box.hidden && !box.classList.contains('stale')) {
    box.classList.add('stale');
    box.append(el('p', { class: 'warn-text', 'data-field': 'stale', text: 'The form changed since this test: test again.' }));
  }
});
$('provider-form').addEventListener('submit', (e) => {
  e.preventDefault();
  let draft;
  try {
    draft = providerDraft();
  } catch (err) {
    return showProblem('Saving the provider', err);
  }
  if (editing.id !== null) delete draft.id;
  save('provider', draft, $('provider-save'));
});

// ---------------------------------------------------------------- the route form

function candidateRow(c = {}) {
  const { provider, model, weight, ...extra } = c;
  const remove = el('button', { type: 'button', 'data-action': 'remove-candidate', text: 'Remove' });
  const row = el(
    'tr',
    { class: 'candidate-row' },
    el(
      'td',
      {},
      el('input', { name: 'provider', list: 'provider-names', value: provider ?? '', autocomplete: 'off', 'aria-label': 'provider' }),
    ),
    el('td', {}, el('input', { name: 'model', value: model ?? '', autocomplete: 'off', 'aria-label': 'upstream model' })),
    el(
      'td',
      { class: 'num' },
      el('input', { name: 'weight', type: 'number', min: 1, max: 1000, value: weight ?? 1, 'aria-label': 'weight' }),
    ),
    el('td', {}, remove),
  );
  // Fields the editor has no column for (an Azure deployment, a Vertex publisher) are kept as they were.
  row.extra = extra;
  remove.addEventListener('click', () => row.remove());
  return row;
}

function routeDraft() {
  const f = $('route-form').elements;
  const body = jsonField(f.other.value, 'other fields');
  body.id = f.id.value.trim();
  body.policy = f.policy.value;
  body.candidates = [...$('route-candidates').querySelectorAll('tr')].map((row) => {
    const c = { ...row.extra, provider: row.querySelector('[name="provider"]').value.trim() };
    const model = row.querySelector('[name="model"]').value.trim();
    if (model !== '') c.model = model;
    const weight = row.querySelector('[name="weight"]').value.trim();
    // Sent as typed: the gateway judges it and names candidates[i].weight when it is wrong.
    if (weight !== '') c.weight = Number.isNaN(Number(weight)) ? weight : Number(weight);
    return c;
  });
  return body;
}

export async function openRouteForm(id) {
  closeForms();
  const read =
    id === null ? { object: {}, etag: null } : await readObject('route', id).catch((err) => showProblem(`Reading route "${id}"`, err));
  if (read === undefined) return;
  const o = read.object;
  editing = { kind: 'route', id, object: o, etag: read.etag };
  const f = $('route-form').elements;
  $('route-form-title').textContent = id === null ? 'New route' : `Edit route ${id}`;
  f.id.value = id ?? '';
  f.id.readOnly = id !== null;
  f.policy.value = o.policy ?? 'ordered';
  replace('route-candidates', (o.candidates ?? [{}]).map(candidateRow));
  f.other.value = JSON.stringify(otherFields(o, ROUTE_FIELDS), null, 2);
  $('route-form').hidden = false;
  f.id.focus();
}

$('add-candidate').addEventListener('click', () => $('route-candidates').append(candidateRow()));
$('route-cancel').addEventListener('click', closeForms);
$('route-form').addEventListener('submit', (e) => {
  e.preventDefault();
  let draft;
  try {
    draft = routeDraft();
  } catch (err) {
    return showProblem('Saving the route', err);
  }
  if (editing.id !== null) delete draft.id;
  save('route', draft, $('route-save'));
});
