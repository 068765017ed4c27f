import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { RE2JS } from 're2js';
import { request } from 'undici';
import type { JudgeGuardrailConfig } from '../../config/index.js';
import type { AskService, ServiceAnswer, ServiceCheck } from '../../guardrails/index.js';
import type { Exchange } from '../exchange.js';
import { checkNemo, checkWebhook, GuardrailServiceError, serviceHeaders } from './services.js';

// How a request asks its service guardrails: NeMo and a webhook over their own HTTP APIs
// (services.ts), and a judge by asking one of this gateway's own routes. The judge's
// question is a request to this gateway's listener, on the connection's local address, as
// the caller (its own credential): it gets the full chain, failover included, and is billed
// to the caller's team as a row of its own with endpoint `guardrail`. It carries a header
// with this process's secret, which marks it as a guardrail's question: it runs no
// guardrail itself (a judge asked about a judge's question would never end).

/** The header a judge's question carries, and this process's value for it (never sent anywhere else). */
export const GUARDRAIL_CALL_HEADER = 'x-switchyard-guardrail-call';
export const GUARDRAIL_CALL_TOKEN = randomBytes(24).toString('base64url');

/** Whether a request is a judge's question asked by this process. */
export function isGuardrailQuestion(x: Exchange): boolean {
  return x.req.headers[GUARDRAIL_CALL_HEADER] === GUARDRAIL_CALL_TOKEN;
}

/** The ask function of one request: its judge questions go to the listener it came in on, as its caller. */
export function askFor(x: Exchange): AskService {
  return (g, check) => {
    switch (g.type) {
      case 'nemo':
      case 'webhook': {
        const cfg = g.config as Parameters<typeof checkNemo>[0] & Parameters<typeof checkWebhook>[0];
        const headers = serviceHeaders(cfg, process.env);
        if (!headers.ok) return Promise.reject(new GuardrailServiceError('error', `guardrail ${g.name}: ${headers.message}`));
        return g.type === 'nemo' ? checkNemo(cfg, headers.headers, check) : checkWebhook(cfg, headers.headers, check);
      }
      case 'judge':
        return askJudge(x, g.config as JudgeGuardrailConfig, check);
    }
  };
}

/** A judge's answer is read up to this many bytes. */
const MAX_JUDGE_ANSWER_BYTES = 1024 * 1024;
/** The prompt file is read up to this size (the config bounds an inline prompt the same). */
const MAX_PROMPT_BYTES = 65_536;

const prompts = new WeakMap<JudgeGuardrailConfig, string | Error>();
const unsafePatterns = new WeakMap<JudgeGuardrailConfig, RE2JS>();

/** The judge's system prompt: its text, or its file read once per config (an unreadable one fails each check, as on_error says). */
function promptOf(cfg: JudgeGuardrailConfig): string {
  let prompt = prompts.get(cfg);
  if (prompt === undefined) {
    if ('text' in cfg.prompt) prompt = cfg.prompt.text;
    else {
      try {
        if (statSync(cfg.prompt.file).size > MAX_PROMPT_BYTES) throw new Error(`larger than ${MAX_PROMPT_BYTES} bytes`);
        prompt = readFileSync(cfg.prompt.file, 'utf8');
      } catch (err) {
        prompt = new Error(`its prompt file cannot be read (${(err as Error).message})`);
      }
    }
    prompts.set(cfg, prompt);
  }
  if (prompt instanceof Error) throw new GuardrailServiceError('error', prompt.message);
  return prompt;
}

function unsafeOf(cfg: JudgeGuardrailConfig): RE2JS {
  let re = unsafePatterns.get(cfg);
  if (re === undefined) {
    re = RE2JS.compile(cfg.unsafe_when);
    unsafePatterns.set(cfg, re);
  }
  return re;
}

async function askJudge(x: Exchange, cfg: JudgeGuardrailConfig, check: ServiceCheck): Promise<ServiceAnswer> {
  const prompt = promptOf(cfg);
  const texts = check.texts.map((t) => `${t.role}: ${t.text}`).join('\n\n');
  const messages = prompt.includes('{{texts}}')
    ? [{ role: 'system', content: prompt.replaceAll('{{texts}}', texts) }]
    : [
        { role: 'system', content: prompt },
        { role: 'user', content: texts },
      ];
  const socket = x.req.socket;
  const host = socket.localAddress ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host.replace(/^::ffff:/, '')}]` : host}:${socket.localPort}/v1/chat/completions`;
  const headers: Record<string, string> = { 'content-type': 'application/json', [GUARDRAIL_CALL_HEADER]: GUARDRAIL_CALL_TOKEN };
  for (const name of ['authorization', 'x-api-key']) {
    const value = x.req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  headers['x-request-id'] = `${x.requestId.slice(0, 100)}.guard`;
  const signal = AbortSignal.timeout(cfg.timeout_ms);
  let text: string;
  try {
    const answer = await request(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: cfg.route, messages, stream: false }),
      signal,
    });
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > MAX_JUDGE_ANSWER_BYTES)
        throw new GuardrailServiceError('error', `the judge route ${cfg.route} answered more than ${MAX_JUDGE_ANSWER_BYTES} bytes`);
      chunks.push(chunk);
    }
    if (answer.statusCode >= 300) throw new GuardrailServiceError('error', `the judge route ${cfg.route} answered ${answer.statusCode}`);
    text = judgeText(Buffer.concat(chunks).toString('utf8'), cfg.route);
  } catch (err) {
    if (err instanceof GuardrailServiceError) throw err;
    if (signal.aborted)
      throw new GuardrailServiceError('timeout', `the judge route ${cfg.route} did not answer within ${cfg.timeout_ms} ms`);
    throw new GuardrailServiceError(
      'error',
      `the judge route ${cfg.route} could not be asked (${(err as { code?: string }).code ?? 'network error'})`,
    );
  }
  if (!unsafeOf(cfg).matcher(text).find()) return { action: 'allow' };
  return { action: 'block', categories: judgeCategories(text), reason: null };
}

/** The judge's words: the first choice's message content. */
function judgeText(body: string, route: string): string {
  try {
    const json = JSON.parse(body) as { choices?: Array<{ message?: { content?: unknown } }> };
    const content = json.choices?.[0]?.message?.content;
    if (typeof content === 'string') return content;
  } catch {
    // fall through
  }
  throw new GuardrailServiceError('invalid', `the judge route ${route} answered something that is not a chat completion`);
}

const CATEGORY_LINE = /^\s*([A-Za-z0-9_]{1,32}(?:\s*,\s*[A-Za-z0-9_]{1,32}){0,15})\s*$/;

/**
 * The categories a judge named: Llama Guard answers `unsafe` and, on the next line, the
 * codes of the categories it found (`S1,S10`). Anything else is category `unsafe`.
 */
function judgeCategories(text: string): string[] {
  const second = text.split('\n')[1];
  const m = second === undefined ? null : CATEGORY_LINE.exec(second);
  if (m === null) return ['unsafe'];
  return (m[1] as string).split(',').map((c) => c.trim().toLowerCase());
}
