import type { Exchange } from './exchange.js';
import { replyNotFound } from './exchange.js';
import type { MockContext } from './provider-context.js';

// Vertex AI, served alone with `--protocol vertex`.

export function routeVertex(_ctx: MockContext, ex: Exchange): void {
  replyNotFound(ex);
}
