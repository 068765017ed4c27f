import type { Exchange } from './exchange.js';
import { replyInvalid, replyJson, replyMethodNotAllowed, replyNotFound } from './exchange.js';
import type { McpMock } from './mcp.js';
import { parseToolChange } from './mcp-tools.js';

function ok(ex: Exchange, extra?: Record<string, unknown>): void {
  replyJson(ex, 200, JSON.stringify({ ok: true, ...extra }));
}

/** The `/__mock/mcp*` control endpoints: the MCP server's stats, its tools, a restart, dropped streams. */
export function handleMcpControl(mcp: McpMock, ex: Exchange): void {
  const method = ex.req.method ?? 'GET';
  switch (ex.path) {
    case '/__mock/mcp':
      if (method !== 'GET') return replyMethodNotAllowed(ex, 'GET');
      return replyJson(ex, 200, JSON.stringify(mcp.stats()));
    case '/__mock/mcp/tools': {
      if (method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      let input: unknown;
      try {
        input = JSON.parse(ex.body);
      } catch {
        return replyInvalid(ex, 400, 'the body is not valid JSON');
      }
      const change = parseToolChange(input);
      if (typeof change === 'string') return replyInvalid(ex, 400, change);
      return ok(ex, { tools: mcp.changeTools(change) });
    }
    case '/__mock/mcp/restart':
      if (method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      // Answered once every session is closed, so the caller's next request meets the restarted server.
      void mcp.restart().then(() => {
        if (!ex.closed) ok(ex);
      });
      return;
    case '/__mock/mcp/drop-streams':
      if (method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      mcp.dropStreams();
      return ok(ex);
    default:
      return replyNotFound(ex);
  }
}
