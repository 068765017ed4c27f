import type { Operation } from '../providers/index.js';
import { cacheStage } from './cache/stage.js';
import { guardInput } from './guardrails/input-stage.js';
import type { Stage } from './stage.js';
import { estimateUnserved } from './token-count.js';

// The request stages of each model endpoint, in the order they run: the first is the
// outermost, so it sees the request first and the result last. Every model request goes
// through the same steps around them (serve-model.ts):
//
//   admission (the caller and the generation it captured; handlers.ts)
//   -> routing (the body parsed, the route's selection, the candidates that serve the operation)
//   -> the stages below
//   -> the pre-check (limits, budget, the reservation; metered operations only)
//   -> the chain (failover over the candidates, each attempt behind its wraps; serve-chain.ts)
//
// A stage that answers short-circuits everything after it: no pre-check, no reservation,
// no upstream call. A stage is a file with the contract of stage.ts, and a line here.

export const stages: Readonly<Record<Operation, readonly Stage[]>> = {
  // The input guardrails: a blocked request reserves nothing and reaches no upstream. Then
  // the response cache: a request they would block is never answered from it, and a hit
  // reserves nothing either.
  chat: [guardInput, cacheStage],
  embeddings: [guardInput, cacheStage],
  completions: [guardInput, cacheStage],
  responses: [guardInput, cacheStage],
  // No Anthropic provider counted: the gateway's own estimate.
  count_tokens: [estimateUnserved],
};
