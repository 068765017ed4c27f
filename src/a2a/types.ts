// The shapes every part of the A2A module shares: the two protocol versions the gateway
// speaks, and what an answer teaches it about the tasks and contexts an agent created.

/** The A2A protocol versions: the released 1.0 (PascalCase methods) and 0.3 (`message/send`, still widely used). */
export type A2AVersion = '1.0' | '0.3';

/** A JSON-RPC 2.0 error object, as the protocol sends it. */
export interface JsonRpcErrorObject {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** The protocol's error codes the gateway itself answers with. */
export const A2A_ERRORS = Object.freeze({
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotificationNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
  invalidAgentResponse: -32006,
  extendedCardNotConfigured: -32007,
});

/** A task's state, in 0.3's words (1.0's TASK_STATE_COMPLETED is `completed`). */
export type TaskStateName =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'auth-required'
  | 'completed'
  | 'failed'
  | 'canceled'
  | 'rejected'
  | 'unknown';

/** The states after which a task changes no more. */
export const TERMINAL_STATES: ReadonlySet<TaskStateName> = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** The ids one answer (a result, or one event of a stream) names, and the task's state where it gives one. */
export interface LearnedIds {
  readonly taskId?: string;
  readonly contextId?: string;
  /** The task reached completed, failed, canceled or rejected. */
  readonly terminal: boolean;
  readonly state?: TaskStateName;
}
