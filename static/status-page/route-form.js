// The route form of the "Providers and routes" view: a model route's name, policy and
// candidates (provider, upstream model, weight; added and removed row by row), and its other
// fields as JSON. Save creates it, or patches the one being edited.

import { $, el, replace } from './page.js';
import { beginEdit, closeForms, editsExisting, formFor, jsonField, otherFields, save, showProblem } from './topology-writes.js';

/** What the form has a field for; the rest goes in its JSON. */
const ROUTE_FIELDS = ['policy', 'candidates'];

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
  const o = await beginEdit('route', id);
  if (o === undefined) return;
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
  if (editsExisting()) delete draft.id;
  save('route', draft, $('route-save'));
});

formFor('route', openRouteForm);
