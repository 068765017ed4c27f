import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A mock guardrail service: one HTTP server answering NVIDIA NeMo Guardrails' checks API
// (`POST /v1/guardrail/checks`) and the gateway's webhook contract (`POST /check`), so the
// `nemo` and `webhook` guardrails can be tested against a real server. Its behaviour is set
// in-process (`setBehavior`) or over HTTP (`POST /__mock/behavior`), so a test that runs the
// gateway in another process drives it too. The default, `rule`, needs no switching: a text
// holding the trigger word is blocked, one holding the mask word is rewritten, the rest pass.
// Endpoints and behaviours: docs/mock-provider.md, "A mock guardrail service".

export type MockGuardrailMode = 'rule' | 'allow' | 'block' | 'mask' | 'modified' | 'timeout' | 'garbage' | 'status' | 'oversize' | 'answer';
export const MOCK_GUARDRAIL_MODES: readonly MockGuardrailMode[] = [
  'rule',
  'allow',
  'block',
  'mask',
  'modified',
  'timeout',
  'garbage',
  'status',
  'oversize',
  'answer',
];

/** A behaviour, the same object in-process and as `POST /__mock/behavior`'s JSON body. */
export interface MockGuardrailBehavior {
  readonly mode: MockGuardrailMode;
  /** rule: a text holding this word is blocked (default "forbidden"). */
  readonly trigger?: string;
  /** block and rule: the categories a block names (NeMo: its blocked rails; default ["forbidden"]). */
  readonly categories?: readonly string[];
  /** block: the webhook answer's reason (default none). */
  readonly reason?: string;
  /** mask/modified, and rule: every occurrence of `word` is replaced by `replacement` (rule: no masking without a word). */
  readonly word?: string;
  readonly replacement?: string;
  /** timeout: how long an answer is held (default 30 s; always ended by close). */
  readonly hold_ms?: number;
  /** status: the HTTP status answered (default 500; a 3xx carries `location: /check`). */
  readonly status?: number;
  /** oversize: a valid allow answer padded to this many bytes (default 5 MiB). */
  readonly bytes?: number;
  /** answer: this JSON, answered with 200 as it is, whichever API was asked (a malformed verdict). */
  readonly answer?: unknown;
}

/** One check the mock received. Header names are lower-case. */
export interface MockGuardrailCall {
  readonly api: 'nemo' | 'webhook';
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
}

export interface MockGuardrailServiceOptions {
  readonly port?: number;
  readonly host?: string;
  /** The behaviour at start and after a reset (default `{mode: "rule"}`). */
  readonly behavior?: MockGuardrailBehavior;
}

export interface MockGuardrailService {
  /** `http://host:port`: a nemo guardrail's base_url; a webhook's url is `${url}/check`. */
  readonly url: string;
  /** What was received, oldest first (the last 1000). */
  readonly received: MockGuardrailCall[];
  setBehavior(behavior: MockGuardrailBehavior): void;
  close(): Promise<void>;
}

const DEFAULT_TRIGGER = 'forbidden';
const DEFAULT_CATEGORIES: readonly string[] = ['forbidden'];
const DEFAULT_WORD = 'secret';
const DEFAULT_REPLACEMENT = '[MASKED]';
const DEFAULT_HOLD_MS = 30_000;
const DEFAULT_OVERSIZE_BYTES = 5 * 1024 * 1024;
const MAX_RECEIVED = 1000;
/** The config's max_bytes ceiling: a check larger than any webhook is allowed to receive. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** What the mock decided about one check's texts. */
type Decision =
  | { readonly action: 'allow' }
  | { readonly action: 'block'; readonly categories: readonly string[]; readonly reason: string | null }
  | { readonly action: 'mask'; readonly texts: readonly string[]; readonly categories: readonly string[] };

export async function startMockGuardrailService(options: MockGuardrailServiceOptions = {}): Promise<MockGuardrailService> {
  const initial = checkBehavior(options.behavior ?? { mode: 'rule' });
  if (typeof initial === 'string') throw new Error(`mock guardrail service: ${initial}`);
  let behavior = initial;
  const received: MockGuardrailCall[] = [];
  const held = new Set<ServerResponse>();

  const record = (call: MockGuardrailCall): void => {
    received.push(call);
    if (received.length > MAX_RECEIVED) received.splice(0, received.length - MAX_RECEIVED);
  };

  const answerCheck = (api: 'nemo' | 'webhook', body: unknown, req: IncomingMessage, res: ServerResponse): void => {
    const texts = api === 'nemo' ? nemoTexts(body) : webhookTexts(body);
    if (texts === null) return sendJson(res, 400, { error: `not a ${api === 'nemo' ? 'NeMo checks' : 'webhook'} request` });
    record({ api, headers: flatHeaders(req), body });
    const b = behavior;
    switch (b.mode) {
      case 'timeout': {
        held.add(res);
        const timer = setTimeout(() => {
          held.delete(res);
          sendAnswer(api, res, { action: 'allow' }, body);
        }, b.hold_ms ?? DEFAULT_HOLD_MS);
        res.on('close', () => {
          clearTimeout(timer);
          held.delete(res);
        });
        return;
      }
      case 'garbage':
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end('<html>this is not JSON');
      case 'status': {
        const status = b.status ?? 500;
        if (status >= 300 && status < 400) res.setHeader('location', '/check');
        return sendJson(res, status, { error: 'mock guardrail failure' });
      }
      case 'oversize': {
        const padding = 'x'.repeat(b.bytes ?? DEFAULT_OVERSIZE_BYTES);
        return sendJson(res, 200, api === 'nemo' ? { status: 'success', rails_status: {}, padding } : { action: 'allow', padding });
      }
      case 'answer':
        return sendJson(res, 200, b.answer ?? null);
      default:
        return sendAnswer(api, res, decide(b, texts), body);
    }
  };

  const server = createServer((req, res) => {
    void route(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'mock guardrail service error' });
      else res.destroy();
    });
  });

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://mock').pathname;
    const endpoint = ENDPOINTS[path];
    if (endpoint === undefined) return sendJson(res, 404, { error: `no such path: ${path}` });
    if (req.method !== endpoint) {
      res.setHeader('allow', endpoint);
      return sendJson(res, 405, { error: `use ${endpoint}` });
    }
    if (path === '/__mock/received') return sendJson(res, 200, { received });
    const raw = await readBody(req);
    if (raw === null) return sendJson(res, 413, { error: `body over ${MAX_BODY_BYTES} bytes` });
    if (path === '/__mock/reset') {
      received.length = 0;
      behavior = initial;
      return sendJson(res, 200, { ok: true });
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return sendJson(res, 400, { error: 'the body is not JSON' });
    }
    if (path === '/__mock/behavior') {
      const checked = checkBehavior(body);
      if (typeof checked === 'string') return sendJson(res, 400, { error: checked });
      behavior = checked;
      return sendJson(res, 200, { behavior });
    }
    answerCheck(path === '/check' ? 'webhook' : 'nemo', body, req, res);
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    received,
    setBehavior(next) {
      const checked = checkBehavior(next);
      if (typeof checked === 'string') throw new Error(`mock guardrail service: ${checked}`);
      behavior = checked;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        held.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Method by path: the table of everything the mock serves. */
const ENDPOINTS: Readonly<Record<string, 'GET' | 'POST'>> = {
  '/v1/guardrail/checks': 'POST',
  '/check': 'POST',
  '/__mock/behavior': 'POST',
  '/__mock/reset': 'POST',
  '/__mock/received': 'GET',
};

function decide(b: MockGuardrailBehavior, texts: readonly string[]): Decision {
  const categories = b.categories ?? DEFAULT_CATEGORIES;
  const masked = (word: string, replacement: string): Decision => ({
    action: 'mask',
    texts: texts.map((t) => t.split(word).join(replacement)),
    categories: b.categories ?? ['masked'],
  });
  switch (b.mode) {
    case 'block':
      return { action: 'block', categories, reason: b.reason ?? null };
    case 'mask':
    case 'modified':
      return masked(b.word ?? DEFAULT_WORD, b.replacement ?? DEFAULT_REPLACEMENT);
    case 'rule': {
      if (texts.some((t) => t.includes(b.trigger ?? DEFAULT_TRIGGER))) return { action: 'block', categories, reason: b.reason ?? null };
      const word = b.word;
      if (word !== undefined && texts.some((t) => t.includes(word))) return masked(word, b.replacement ?? DEFAULT_REPLACEMENT);
      return { action: 'allow' };
    }
    default:
      return { action: 'allow' };
  }
}

function sendAnswer(api: 'nemo' | 'webhook', res: ServerResponse, d: Decision, body: unknown): void {
  if (api === 'webhook') {
    if (d.action === 'allow') return sendJson(res, 200, { action: 'allow' });
    if (d.action === 'block')
      return sendJson(res, 200, { action: 'block', categories: d.categories, ...(d.reason === null ? {} : { reason: d.reason }) });
    return sendJson(res, 200, { action: 'mask', texts: d.texts, categories: d.categories });
  }
  // NeMo names the rails that ran, each with its own status; a passing one is always there.
  const rails = (status: string, names: readonly string[]) => Object.fromEntries(names.map((n) => [n, { status }]));
  if (d.action === 'allow') return sendJson(res, 200, { status: 'success', rails_status: { 'mock check': { status: 'success' } } });
  if (d.action === 'block')
    return sendJson(res, 200, {
      status: 'blocked',
      rails_status: { 'mock check': { status: 'success' }, ...rails('blocked', d.categories) },
    });
  const asked = (body as { messages: { role: string }[] }).messages;
  return sendJson(res, 200, {
    status: 'modified',
    rails_status: { 'mock check': { status: 'success' }, ...rails('modified', d.categories) },
    messages: d.texts.map((content, i) => ({ role: asked[i]?.role ?? 'user', content })),
  });
}

/** The behaviour if it is one, else why not. */
function checkBehavior(value: unknown): MockGuardrailBehavior | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'a behaviour is a JSON object';
  const b = value as Record<string, unknown>;
  if (!MOCK_GUARDRAIL_MODES.includes(b.mode as MockGuardrailMode)) return `mode must be one of ${MOCK_GUARDRAIL_MODES.join(', ')}`;
  for (const field of ['trigger', 'reason', 'word', 'replacement'])
    if (b[field] !== undefined && (typeof b[field] !== 'string' || b[field] === '')) return `${field} must be a non-empty string`;
  if (b.categories !== undefined && !(Array.isArray(b.categories) && b.categories.every((c) => typeof c === 'string')))
    return 'categories must be a list of strings';
  if (b.hold_ms !== undefined && !isCount(b.hold_ms, 0, 600_000)) return 'hold_ms must be an integer from 0 to 600000';
  if (b.status !== undefined && !isCount(b.status, 200, 599)) return 'status must be an HTTP status from 200 to 599';
  if (b.bytes !== undefined && !isCount(b.bytes, 0, 256 * 1024 * 1024)) return 'bytes must be an integer from 0 to 268435456';
  return b as unknown as MockGuardrailBehavior;
}

function isCount(v: unknown, min: number, max: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

function nemoTexts(body: unknown): string[] | null {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return null;
  const texts = messages.map((m) => (m as { content?: unknown } | null)?.content);
  return texts.every((t) => typeof t === 'string') ? (texts as string[]) : null;
}

function webhookTexts(body: unknown): string[] | null {
  const texts = (body as { texts?: unknown } | null)?.texts;
  return Array.isArray(texts) && texts.every((t) => typeof t === 'string') ? (texts as string[]) : null;
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}

async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
