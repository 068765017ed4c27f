// How the "Providers and routes" view writes (its forms are provider-form.js and
// route-form.js): a create, a patch of the object a form read, a delete. A change is made
// against the ETag the object was read with (If-Match), so a change made meanwhile by someone
// else is a 412, never overwritten. Each answer says the reload it caused
// (x-switchyard-reload, -generation, -keyring, and its warnings); each refusal its message
// and every field at fault by path.

import { $, AdminError, adminRequest, badge, el, replace } from './page.js';

const RESULT_COLOUR = { applied: 'green', unchanged: 'grey', rejected: 'red' };
/** What the API adds to an object; never sent back. */
const META = ['id', 'model', 'managed_by', 'version', 'created_at', 'updated_at', 'warnings'];
const COLLECTION = { provider: 'providers', route: 'routes', tool_route: 'tool-routes', price: 'pricing' };
const NOUN = { provider: 'provider', route: 'route', tool_route: 'tool route', price: 'price' };

let refresh = async () => {};
/** The object a form edits: its kind, name, the fields and ETag it was read with; id null for a new one. */
let editing = null;
/** Each form's opener, by the kind it edits: what reloading the view opens again. */
const forms = {};

export function initWrites(onWritten) {
  refresh = onWritten;
}

/** A form says how to open it for an object of its kind. */
export function formFor(kind, open) {
  forms[kind] = open;
}

/** Whether the open form edits an object (rather than making a new one). */
export const editsExisting = () => editing !== null && editing.id !== null;

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
export function problemParts(err) {
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
export function showProblem(what, err) {
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
export function jsonField(text, label) {
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
export function otherFields(object, shown) {
  return Object.fromEntries(Object.entries(object ?? {}).filter(([k]) => !META.includes(k) && !shown.includes(k)));
}

/** A top-level merge patch from `before` to `after`: a field left out is removed (null). */
function patchOf(before, after) {
  const patch = { ...after };
  for (const k of Object.keys(before)) if (!META.includes(k) && !(k in after)) patch[k] = null;
  return patch;
}

/**
 * Closes any form and starts editing one object (id null: a new one): the object as read now,
 * with the ETag its change will be made against; undefined when it cannot be read (said why).
 */
export async function beginEdit(kind, id) {
  closeForms();
  if (id === null) {
    editing = { kind, id, object: {}, etag: null };
    return {};
  }
  try {
    const res = await adminRequest('GET', `${COLLECTION[kind]}/${encodeURIComponent(id)}`);
    editing = { kind, id, object: res.data, etag: res.headers.get('etag') };
    return res.data;
  } catch (err) {
    showProblem(`Reading ${NOUN[kind]} "${id}"`, err);
    return undefined;
  }
}

/** Saves the form's object: a create, or a patch of the one it was read as, against its ETag. */
export function save(kind, body, button) {
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
      await forms[kind](id);
    } catch {
      // Gone meanwhile: the lists say so.
    }
  }
  showProblem(null);
  await refresh();
}

export function closeForms() {
  editing = null;
  for (const form of document.querySelectorAll('form.topology-form')) form.hidden = true;
  // A test's answer belongs to the draft it tested.
  $('probe-result').hidden = true;
  replace('probe-result');
}

export function setProviderNames(names) {
  replace(
    'provider-names',
    names.map((n) => el('option', { value: n })),
  );
}
