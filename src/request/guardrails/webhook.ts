import type { WebhookGuardrailConfig } from '../../config/index.js';
import {
  categoryNames,
  GuardrailServiceError,
  isRecord,
  originOf,
  postServiceJson,
  type ServiceAnswer,
  type ServiceCheck,
} from './service-call.js';

// An operator's webhook: `POST url` with the phase, who is asking and the texts (plain
// strings, in order), answered by `{action: "allow" | "block" | "mask", texts?, reason?,
// categories?}`. A mask gives every text back, rewritten, in the same order.

/** `max_bytes` when unset: bounds the check posted and the answer read. */
export const WEBHOOK_DEFAULT_MAX_BYTES = 4 * 1024 * 1024;
/** A reason is a sentence; more is cut. */
const REASON_MAX_CHARS = 256;

export async function checkWebhook(
  cfg: WebhookGuardrailConfig,
  headers: Readonly<Record<string, string>>,
  check: ServiceCheck,
  signal?: AbortSignal,
): Promise<ServiceAnswer> {
  const what = `webhook ${originOf(cfg.url)}`;
  const maxBytes = cfg.max_bytes ?? WEBHOOK_DEFAULT_MAX_BYTES;
  const answer = await postServiceJson({
    what,
    url: cfg.url,
    headers,
    body: {
      phase: check.phase,
      protocol: check.protocol,
      route: check.route,
      model: check.model,
      team: check.team,
      key: check.key,
      texts: check.texts.map((t) => t.text),
    },
    timeoutMs: cfg.timeout_ms,
    maxSendBytes: maxBytes,
    maxAnswerBytes: maxBytes,
    ...(signal === undefined ? {} : { signal }),
  });
  return readWebhookAnswer(answer, check.texts.length, what);
}

function readWebhookAnswer(answer: unknown, count: number, what: string): ServiceAnswer {
  if (!isRecord(answer)) throw new GuardrailServiceError('invalid', `${what} answered JSON that is not an object`);
  const categories = stringList(answer.categories);
  if (categories === null) throw new GuardrailServiceError('invalid', `${what} answered categories that are not a list of strings`);
  switch (answer.action) {
    case 'allow':
      return { action: 'allow' };
    case 'block': {
      const reason = answer.reason;
      if (reason !== undefined && reason !== null && typeof reason !== 'string')
        throw new GuardrailServiceError('invalid', `${what} answered a reason that is not a string`);
      return {
        action: 'block',
        categories: categoryNames(categories),
        reason: typeof reason === 'string' ? reason.slice(0, REASON_MAX_CHARS) : null,
      };
    }
    case 'mask': {
      const texts = Array.isArray(answer.texts) ? stringList(answer.texts) : null;
      if (texts === null) throw new GuardrailServiceError('invalid', `${what} answered mask without texts`);
      if (texts.length !== count)
        throw new GuardrailServiceError('invalid', `${what} answered ${texts.length} masked texts for ${count} checked`);
      return { action: 'mask', texts, categories: categoryNames(categories) };
    }
    default:
      throw new GuardrailServiceError('invalid', `${what} answered an action that is not allow, block or mask`);
  }
}

/** The strings of a list (absent: none), or null when it is anything else. */
function stringList(value: unknown): string[] | null {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) return null;
  return value as string[];
}
