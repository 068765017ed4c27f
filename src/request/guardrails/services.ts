import { resolveSecret, type SecretRef } from '../../config/index.js';

// The guardrail services' clients, for the stages and transforms that run them: NeMo
// Guardrails and an operator's webhook, each one bounded HTTP call per check (see
// service-call.ts), and the secret headers each is configured to send.

export { checkNemo } from './nemo.js';
export {
  type CheckedText,
  GuardrailServiceError,
  type ServiceAnswer,
  type ServiceCheck,
} from './service-call.js';
export { checkWebhook, WEBHOOK_DEFAULT_MAX_BYTES } from './webhook.js';

/**
 * The configured `headers` with each secret reference resolved, or the first that cannot be,
 * named by its header (`headers.authorization: environment variable GUARD_TOKEN is not set`),
 * never by a value.
 */
export function serviceHeaders(
  cfg: { readonly headers?: Readonly<Record<string, SecretRef>> | undefined },
  env: NodeJS.ProcessEnv,
): { ok: true; headers: Record<string, string> } | { ok: false; message: string } {
  const headers: Record<string, string> = {};
  for (const [name, ref] of Object.entries(cfg.headers ?? {})) {
    const secret = resolveSecret(ref, env);
    if (!secret.ok) return { ok: false, message: `headers.${name}: ${secret.message}` };
    headers[name.toLowerCase()] = secret.value;
  }
  return { ok: true, headers };
}
