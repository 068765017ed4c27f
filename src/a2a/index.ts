// a2a/: the Agent2Agent protocol's parts that know no request: its two versions' methods
// and shapes (1.0 and 0.3) and the translation between them, the ids an answer teaches
// (task and context, and the task's state), agent cards (read, and rewritten for clients),
// the gateway's own URL behind trusted proxies, the push-notification webhook rule, the
// JSON-RPC exchange with an upstream agent (a stream relayed with back-pressure), the cards
// kept fresh, and who owns each task (one replica's memory, or Redis for a fleet).
// request/a2a/ is the endpoint that routes calls through them. Imports only providers/.

export { type AgentCardView, clientCard, type GatewayCardSecurity, jsonRpcEndpointFor, readCard } from './card.js';
export { AgentCards, type AgentCardsOptions, type CardState, type CardTarget } from './cards.js';
export { publicOrigin, TrustedProxies } from './forwarded.js';
export { eventIds, type NamedIds, pushUrlsOf, requestIds, resultIds, taskIdsOfList, withTasks } from './ids.js';
export { A2A_METHODS, type A2AMethod, type MethodClass, methodName, methodOf } from './methods.js';
export {
  type IdOwner,
  type OwnedIdKind,
  type OwnershipStore,
  OwnershipStoreError,
  type OwnershipTtl,
  type RecordOutcome,
} from './ownership.js';
export { MemoryOwnershipStore } from './ownership-memory.js';
export { RedisOwnershipStore } from './ownership-redis.js';
export { checkPushUrl } from './push-url.js';
export { translateError, translateEvent, translateRequest, translateResult } from './translate.js';
export { A2A_ERRORS, type A2AVersion, type JsonRpcErrorObject, type LearnedIds, type TaskStateName, TERMINAL_STATES } from './types.js';
export {
  type AgentCall,
  type AgentCallEnd,
  type AgentCallFailure,
  type AgentCallSpec,
  CallStop,
  callAgent,
  type StopSignal,
} from './upstream.js';
