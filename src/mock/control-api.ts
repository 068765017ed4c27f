import type { Exchange } from './exchange.js';
import { replyInvalid, replyJson, replyMethodNotAllowed, replyNotFound } from './exchange.js';
import type { ActiveFault, FaultQueue } from './fault-queue.js';
import { parseFault } from './fault-queue.js';
import { handleMcpControl } from './mcp-control.js';
import type { MockContext } from './provider-context.js';

const ok = '{"ok":true}';

export function resetProvider(ctx: MockContext): void {
  ctx.stats.reset();
  ctx.faults.clear();
  ctx.gcpTokens.reset();
  ctx.promptCache.clear();
  ctx.responses.clear();
  ctx.mcp?.reset();
  ctx.a2a?.reset();
}

/**
 * Parses a posted fault, or a JSON array of them. Every entry is checked before any is queued,
 * so a bad entry leaves the queue as it was.
 */
function parseFaults(body: string): ActiveFault[] | string {
  let input: unknown;
  try {
    input = JSON.parse(body);
  } catch {
    return 'fault body is not valid JSON';
  }
  const entries = Array.isArray(input) ? input : [input];
  const faults: ActiveFault[] = [];
  for (const [i, entry] of entries.entries()) {
    const fault = parseFault(entry);
    if (typeof fault === 'string') return Array.isArray(input) ? `[${i}]: ${fault}` : fault;
    faults.push(fault);
  }
  return faults;
}

function handleFaults(queue: FaultQueue, ex: Exchange): void {
  switch (ex.req.method) {
    case 'POST': {
      const faults = parseFaults(ex.body);
      if (typeof faults === 'string') return replyInvalid(ex, 400, faults);
      for (const fault of faults) queue.add(fault);
      return replyJson(ex, 200, ok);
    }
    case 'DELETE':
      queue.clear();
      return replyJson(ex, 200, ok);
    case 'GET':
      return replyJson(ex, 200, JSON.stringify({ faults: queue.list() }));
    default:
      return replyMethodNotAllowed(ex, 'GET, POST, DELETE');
  }
}

/** The `/__mock/*` endpoints tests use to read stats and inject faults. */
export function handleControl(ctx: MockContext, ex: Exchange): void {
  switch (ex.path) {
    case '/__mock/stats':
      if (ex.req.method !== 'GET') return replyMethodNotAllowed(ex, 'GET');
      return replyJson(ex, 200, JSON.stringify(ctx.stats.snapshot()));
    case '/__mock/reset':
      if (ex.req.method !== 'POST') return replyMethodNotAllowed(ex, 'POST');
      resetProvider(ctx);
      return replyJson(ex, 200, ok);
    case '/__mock/faults':
      return handleFaults(ctx.faults, ex);
    // Vertex AI's token routes (POST /token, the metadata server's token) take their own faults.
    case '/__mock/token-faults':
      return handleFaults(ctx.gcpTokens.faults, ex);
    case '/__mock/tokens':
      if (ex.req.method !== 'GET') return replyMethodNotAllowed(ex, 'GET');
      return replyJson(ex, 200, JSON.stringify(ctx.gcpTokens.stats()));
    case '/__mock/a2a':
      if (ctx.a2a === null) return replyNotFound(ex);
      if (ex.req.method !== 'GET') return replyMethodNotAllowed(ex, 'GET');
      return replyJson(ex, 200, JSON.stringify(ctx.a2a.stats()));
    default:
      if (ctx.mcp !== null && (ex.path === '/__mock/mcp' || ex.path.startsWith('/__mock/mcp/'))) return handleMcpControl(ctx.mcp, ex);
      return replyNotFound(ex);
  }
}
