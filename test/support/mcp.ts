import type { MockProvider } from '../../src/mock/index.js';
import type { GatewayProcess } from './gateway-process.js';
import { waitUntil } from './observe.js';

// Helpers for process-level MCP tests: a provider entry for a mock MCP server, a gateway
// config with two of them, and waiting on what the gateway reports rather than on time.

/** A `type: mcp` provider on a mock MCP server. */
export function mcpProvider(mock: MockProvider, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'mcp', base_url: `${mock.origin}/mcp`, timeout_ms: 2000, ...extra };
}

/**
 * A port-0 gateway with two MCP servers: `echo` on alpha then bravo, `weather` on bravo, and
 * every alpha tool as `a_<name>`; the status page tests read it.
 */
export function twoServerConfig(
  alpha: MockProvider,
  bravo: MockProvider,
  alphaExtra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 2000 },
    log: { level: 'info', access: false },
    providers: { alpha: mcpProvider(alpha, alphaExtra), bravo: mcpProvider(bravo) },
    routing: {
      routes: {},
      tools: {
        echo: { policy: 'ordered', candidates: [{ provider: 'alpha' }, { provider: 'bravo' }] },
        weather: { candidates: [{ provider: 'bravo' }] },
      },
      tools_from: [{ provider: 'alpha', prefix: 'a_' }],
    },
    mcp: { catalog_recheck_ms: 0, list_changed_debounce_ms: 20 },
  };
}

/** Waits until the gateway has logged `count` catalog listings (one per server at start). */
export function catalogsListed(gw: GatewayProcess, count: number): Promise<void> {
  return waitUntil(() => gw.logs().filter((l) => l.msg === 'MCP server catalog listed').length >= count, `${count} catalogs are listed`);
}
