/** A provider as the gateway config spells it, pointing at a mock's base URL. */
export function mockProvider(baseUrl: string): Record<string, unknown> {
  return { type: 'openai', base_url: baseUrl, timeout_ms: 10_000 };
}

/**
 * A gateway config on port 0 (the bench reads the bound address from the "listening" log
 * line). `admin` adds an admin listener, also on port 0, for /admin/reload.
 */
export function gatewayConfig(parts: {
  providers: Record<string, unknown>;
  routes: Record<string, unknown>;
  pricing?: Record<string, unknown>;
  accessLog?: boolean;
  admin?: boolean;
}): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', ...(parts.admin === true ? { admin_listen: '127.0.0.1:0' } : {}), drain_timeout_ms: 2000 },
    log: { level: 'info', access: parts.accessLog ?? true },
    providers: parts.providers,
    routing: { routes: parts.routes },
    ...(parts.pricing === undefined ? {} : { pricing: { models: parts.pricing } }),
  };
}

/** The small non-streaming chat completion every scenario sends. */
export const BENCH_MODEL = 'bench-model';
export const CHAT_BODY = JSON.stringify({ model: BENCH_MODEL, messages: [{ role: 'user', content: 'hello' }] });
