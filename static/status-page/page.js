// What every view of the status page builds with: elements whose values are written as text
// (never as HTML: names, URLs and messages come from config files, overlays and the database,
// and must not become markup), and calls of the admin API with the token this tab signed in with.

export const TOKEN_KEY = 'switchyard-admin-token';

export const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c);
  return e;
}

export function badge(colour, text, state) {
  return el('span', { class: `badge ${colour}`, 'data-state': state ?? text, text });
}

/** Replaces an element's children; null and undefined (a part not shown) are left out. */
export function replace(id, ...children) {
  $(id).replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

export function table(caption, headers, rows, attrs = {}) {
  return el(
    'table',
    attrs,
    caption && el('caption', {}, caption),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        headers.map(([text, cls, title]) => el('th', { class: cls, title, text })),
      ),
    ),
    el('tbody', {}, rows),
  );
}

export function authHeaders(json) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  if (json) headers['content-type'] = 'application/json';
  return headers;
}

/**
 * A refusal of the admin API, as its error body says it: `message`, `code`, `param`, and
 * `errors` (each field at fault, `{path, message}`).
 */
export class AdminError extends Error {
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? null;
    this.param = error?.param ?? null;
    this.errors = Array.isArray(error?.errors) ? error.errors : [];
  }
}

/**
 * One admin API call under admin/v1/: its status, headers and JSON (`{}` for none), or an
 * AdminError. `ifMatch` is the ETag a change is made against.
 */
export async function adminRequest(method, path, { body, ifMatch } = {}) {
  const headers = authHeaders(body !== undefined);
  if (ifMatch) headers['if-match'] = ifMatch;
  const res = await fetch(`admin/v1/${path}`, {
    method,
    headers,
    cache: 'no-store',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let data = {};
  try {
    if (text !== '') data = JSON.parse(text);
  } catch {
    // An answer that is not JSON (a proxy's error page): its status says enough.
  }
  if (!res.ok) throw new AdminError(res.status, data.error);
  return { status: res.status, headers: res.headers, data };
}

/** Every object of an admin API list, page after page. */
export async function allPages(path) {
  const out = [];
  let after = null;
  for (;;) {
    const page = (
      await adminRequest(
        'GET',
        `${path}${path.includes('?') ? '&' : '?'}limit=500${after === null ? '' : `&after=${encodeURIComponent(after)}`}`,
      )
    ).data;
    out.push(...page.data);
    if (page.next === null) return out;
    after = page.next;
  }
}
