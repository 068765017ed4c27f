// The provider form of the "Providers and routes" view: a provider's name, type, base URL,
// key reference, region and zones, and its other fields as JSON. Test sends the draft to the
// probe (POST /admin/v1/providers/test) and shows its answer (reachable, TLS, auth, latency,
// models) before anything is saved; Save creates it, or patches the one being edited.

import { $, adminRequest, badge, el, replace } from './page.js';
import {
  beginEdit,
  closeForms,
  editsExisting,
  formFor,
  jsonField,
  otherFields,
  problemParts,
  save,
  showProblem,
} from './topology-writes.js';

/** What the form has a field for; the rest goes in its JSON. */
const PROVIDER_FIELDS = ['type', 'base_url', 'api_key', 'region', 'zones'];

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
  const o = await beginEdit('provider', id);
  if (o === undefined) return;
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
  if (editsExisting()) delete draft.id;
  save('provider', draft, $('provider-save'));
});

formFor('provider', openProviderForm);
