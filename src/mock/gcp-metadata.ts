import type { Exchange } from './exchange.js';
import type { GcpTokens } from './gcp-tokens.js';
import { replyToken, serveTokenRequest } from './gcp-tokens.js';

// The GCE/GKE metadata server, as far as a Google client uses it for credentials. With
// `GCE_METADATA_HOST` pointing here, google-auth-library (10.x, through gcp-metadata) first
// probes `GET /computeMetadata/v1/instance` to detect a metadata server, reads
// `project/project-id`, then asks `instance/service-accounts/default/token?scopes=...`.
// Every answer carries `Metadata-Flavor: Google`, without which gcp-metadata rejects it,
// and every request must send that header, as on GCE, where it guards against SSRF.

export const METADATA_PREFIX = '/computeMetadata/v1/';

/** The identity the mock's metadata server reports. */
export const METADATA_PROJECT_ID = 'mock-project';
const numericProjectId = '123456789012';
const serviceAccount = `mock-vertex@${METADATA_PROJECT_ID}.iam.gserviceaccount.com`;

/** Leaf values under /computeMetadata/v1/, keyed by the rest of the path. */
const values: Readonly<Record<string, string>> = {
  'project/project-id': METADATA_PROJECT_ID,
  'project/numeric-project-id': numericProjectId,
  'universe/universe-domain': 'googleapis.com',
  'instance/service-accounts/default/email': serviceAccount,
  [`instance/service-accounts/${serviceAccount}/email`]: serviceAccount,
  'instance/zone': `projects/${numericProjectId}/zones/us-central1-a`,
};

/** Directory listings, as the server lists a directory asked for without `?recursive`. */
const directories: Readonly<Record<string, string>> = {
  '': 'instance/\nproject/\nuniverse/\n',
  instance: 'service-accounts/\nzone\n',
  project: 'numeric-project-id\nproject-id\n',
  'instance/service-accounts': `default/\n${serviceAccount}/\n`,
  'instance/service-accounts/default': 'email\ntoken\n',
};

const TOKEN = /^instance\/service-accounts\/([^/]+)\/token$/;

function replyText(ex: Exchange, status: number, text: string, contentType = 'application/text'): void {
  ex.res.writeHead(status, {
    'metadata-flavor': 'Google',
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'x-mock-provider': ex.name,
  });
  ex.res.end(text);
}

/** `GET /computeMetadata/v1/...`. */
export function handleMetadata(tokens: GcpTokens, ex: Exchange): void {
  if (ex.req.method !== 'GET') {
    ex.res.setHeader('allow', 'GET');
    return replyText(ex, 405, 'Method not allowed.\n');
  }
  if (ex.req.headers['metadata-flavor'] !== 'Google') {
    if (TOKEN.test(ex.path.slice(METADATA_PREFIX.length))) tokens.refuse();
    return replyText(ex, 403, 'Missing required header "Metadata-Flavor": "Google"\n', 'text/html; charset=UTF-8');
  }
  const rest = ex.path.slice(METADATA_PREFIX.length).replace(/\/$/, '');
  const account = TOKEN.exec(rest)?.[1];
  if (account === 'default' || account === serviceAccount) {
    ex.res.setHeader('metadata-flavor', 'Google');
    return serveTokenRequest(tokens, ex, () => replyToken(ex, tokens, 'metadata'));
  }
  const value = values[rest] ?? directories[rest];
  if (value === undefined) return replyText(ex, 404, 'Not found.\n', 'text/html; charset=UTF-8');
  replyText(ex, 200, value);
}
