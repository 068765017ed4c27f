import type { NemoGuardrailConfig } from '../../config/index.js';
import {
  categoryNames,
  GuardrailServiceError,
  isRecord,
  originOf,
  postServiceJson,
  type ServiceAnswer,
  type ServiceCheck,
} from './service-call.js';

// NVIDIA NeMo Guardrails' checks endpoint: `POST {base_url}/v1/guardrail/checks` with an
// OpenAI-style `messages` list and the guardrail configuration's id; it runs the
// configuration's input rails on user messages and its output rails on assistant ones,
// without generating. The answer's `status` is `success` or `blocked`, with `rails_status`
// mapping each rail that ran to its own `{status}`. The library's own check result says
// `passed` for success and `modified` when a rail rewrote the messages; both are read here.

/** The answer is the texts again at most, rewritten: twice what was sent, and never less than this. */
const MIN_ANSWER_BYTES = 4 * 1024 * 1024;

export async function checkNemo(
  cfg: NemoGuardrailConfig,
  headers: Readonly<Record<string, string>>,
  check: ServiceCheck,
  signal?: AbortSignal,
): Promise<ServiceAnswer> {
  const what = `nemo ${originOf(cfg.base_url)}`;
  const model = cfg.model ?? check.model;
  const body = {
    ...(model === null ? {} : { model }),
    messages: check.texts.map((t) => ({ role: t.role, content: t.text })),
    guardrails: { config_id: cfg.config_id },
  };
  const sentBytes = check.texts.reduce((sum, t) => sum + Buffer.byteLength(t.text), 0);
  const answer = await postServiceJson({
    what,
    url: `${cfg.base_url.replace(/\/+$/, '')}/v1/guardrail/checks`,
    headers,
    body,
    timeoutMs: cfg.timeout_ms,
    maxSendBytes: null,
    maxAnswerBytes: Math.max(MIN_ANSWER_BYTES, 2 * sentBytes),
    ...(signal === undefined ? {} : { signal }),
  });
  return readNemoAnswer(answer, check.texts.length, what);
}

function readNemoAnswer(answer: unknown, count: number, what: string): ServiceAnswer {
  if (!isRecord(answer) || typeof answer.status !== 'string')
    throw new GuardrailServiceError('invalid', `${what} answered without a status`);
  const rails = railsWith(answer.rails_status);
  switch (answer.status) {
    case 'success':
    case 'passed':
      return { action: 'allow' };
    case 'blocked': {
      const names = categoryNames(rails('blocked'));
      return { action: 'block', categories: names.length === 0 ? ['blocked'] : names, reason: null };
    }
    case 'modified': {
      const texts = rewrittenTexts(answer.messages, count, what);
      const names = categoryNames(rails('modified'));
      return { action: 'mask', texts, categories: names.length === 0 ? ['modified'] : names };
    }
    default:
      throw new GuardrailServiceError('invalid', `${what} answered an unknown status`);
  }
}

/** The names of the rails whose own status is `status`; a missing or odd `rails_status` names none. */
function railsWith(railsStatus: unknown): (status: string) => string[] {
  return (status) =>
    isRecord(railsStatus)
      ? Object.entries(railsStatus)
          .filter(([, rail]) => isRecord(rail) && rail.status === status)
          .map(([name]) => name)
      : [];
}

function rewrittenTexts(messages: unknown, count: number, what: string): string[] {
  if (!Array.isArray(messages)) throw new GuardrailServiceError('invalid', `${what} answered modified without messages`);
  const texts = messages.map((m) => (isRecord(m) && typeof m.content === 'string' ? m.content : null));
  if (texts.some((t) => t === null)) throw new GuardrailServiceError('invalid', `${what} answered a message without text content`);
  if (texts.length !== count)
    throw new GuardrailServiceError('invalid', `${what} answered ${texts.length} modified messages for ${count} checked`);
  return texts as string[];
}
