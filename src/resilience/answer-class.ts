import type { FallbackClass } from './failover.js';

// Which client-error answers say "not this model" rather than "not this request": a prompt
// longer than the model's context, or a refusal by the provider's content filter. Read from
// the start of a 400 or 413 body, only for a route that asked (`fallback_on`), so an answer
// on any other route costs nothing more than it did. Providers word these differently:
// OpenAI and Azure give a code, Anthropic and vLLM only a message.

/** Codes OpenAI and Azure OpenAI answer a content-filter refusal with. */
const FILTER_CODES = new Set(['content_filter', 'content_policy_violation']);
/** Azure's inner code for the same refusal (`error.innererror.code`). */
const AZURE_FILTER_CODE = 'ResponsibleAIPolicyViolation';

/**
 * Messages that say the prompt is too long: Anthropic's `prompt is too long: 210000 tokens >
 * 200000 maximum`, vLLM's (and OpenAI's older) `This model's maximum context length is 8192
 * tokens`, and the words of OpenAI's code where a server puts only a message.
 */
const CONTEXT_MESSAGE =
  /\bprompt is too long\b|\bmaximum context length\b|\bcontext[_ ]length[_ ]exceeded\b|\bexceeds? the context window\b/i;

/**
 * The class of a failing answer, when it is one of `wanted`; null otherwise (the answer is
 * then the client's, as any 4xx is). `body` is the start of the answer's body.
 */
export function answerClassOf(status: number, body: string, wanted: readonly FallbackClass[]): FallbackClass | null {
  if (status !== 400 && status !== 413) return null;
  const { code, innerCode, message } = errorFields(body);
  if (wanted.includes('content_filter') && (FILTER_CODES.has(code) || innerCode === AZURE_FILTER_CODE)) return 'content_filter';
  if (wanted.includes('context_length') && (code === 'context_length_exceeded' || CONTEXT_MESSAGE.test(message))) return 'context_length';
  return null;
}

interface ErrorFields {
  readonly code: string;
  readonly innerCode: string;
  readonly message: string;
}

const NONE: ErrorFields = Object.freeze({ code: '', innerCode: '', message: '' });

/**
 * `error.code`, `error.innererror.code` and `error.message` (OpenAI, Azure, Anthropic, newer
 * vLLM), or the top-level `message` (older vLLM: `{"object": "error", "message": …}`). A
 * body that is not JSON (cut at the bound, or plain text) is read as its message.
 */
function errorFields(body: string): ErrorFields {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ...NONE, message: body };
  }
  if (!isRecord(parsed)) return NONE;
  const error = isRecord(parsed.error) ? parsed.error : parsed;
  const inner = isRecord(error.innererror) ? error.innererror : null;
  return {
    code: typeof error.code === 'string' ? error.code : '',
    innerCode: typeof inner?.code === 'string' ? inner.code : '',
    message: typeof error.message === 'string' ? error.message : typeof parsed.message === 'string' ? parsed.message : '',
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
