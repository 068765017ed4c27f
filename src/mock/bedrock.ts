import type { Exchange } from './exchange.js';
import { replyNotFound } from './exchange.js';
import type { MockContext } from './provider-context.js';

// the Bedrock Runtime API, served alone with `--protocol bedrock`.

export function routeBedrock(_ctx: MockContext, ex: Exchange): void {
  replyNotFound(ex);
}
