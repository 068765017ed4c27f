import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Artifact, Message, Part, Task, TaskStatus } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { AgentEvent } from '@a2a-js/sdk/server';

/** The mock's agents, each served at `/<name>`. */
export type A2aAgentName = 'instant' | 'worker' | 'asker' | 'failer';

export const A2A_AGENT_NAMES: readonly A2aAgentName[] = ['instant', 'worker', 'asker', 'failer'];

/** Artifacts the worker emits when the text names no `steps:N`, and the most it takes. */
export const WORKER_DEFAULT_STEPS = 3;
export const WORKER_MAX_STEPS = 1000;

export const ASKER_QUESTION = 'What should the answer say?';

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: {}, filename: '', mediaType: 'text/plain' };
}

function agentMessage(text: string, contextId: string, taskId: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

function status(state: TaskState, message?: Message): TaskStatus {
  return { state, message, timestamp: new Date().toISOString() };
}

function artifact(name: string, text: string): Artifact {
  return { artifactId: randomUUID(), name, description: '', parts: [textPart(text)], metadata: {}, extensions: [] };
}

/** The user's words: every text part of the message, joined. */
export function userText(message: Message): string {
  return message.parts
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .filter((t) => t !== '')
    .join('\n');
}

/** `steps:N` in the text, bounded; the default when absent. */
export function workerSteps(text: string): number {
  const match = /steps:(\d{1,7})/.exec(text);
  return match === null ? WORKER_DEFAULT_STEPS : Math.min(Number(match[1]), WORKER_MAX_STEPS);
}

function newTask(ctx: RequestContext, state: TaskState, message?: Message): Task {
  return {
    id: ctx.taskId,
    contextId: ctx.contextId,
    status: status(state, message),
    artifacts: [],
    history: [ctx.userMessage],
    metadata: {},
  };
}

function publishStatus(bus: ExecutionEventBus, taskId: string, contextId: string, taskStatus: TaskStatus): void {
  bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: taskStatus, metadata: {} }));
}

function publishArtifact(bus: ExecutionEventBus, taskId: string, contextId: string, art: Artifact): void {
  bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: art, append: false, lastChunk: true, metadata: {} }));
}

/**
 * What the executors share: the mock's shutdown signal, the worker's pace, and the tasks that
 * can still be cancelled (their context id, and the controller that stops their steps).
 */
class TaskLedger {
  readonly #open = new Map<string, { contextId: string; stop: AbortController }>();

  constructor(readonly shutdown: AbortSignal) {}

  open(taskId: string, contextId: string): AbortSignal {
    const stop = new AbortController();
    this.#open.set(taskId, { contextId, stop });
    return AbortSignal.any([stop.signal, this.shutdown]);
  }

  close(taskId: string): void {
    this.#open.delete(taskId);
  }

  /**
   * The SDK drains the bus after cancelTask until a terminal state, so the canceled status is
   * published here, before the steps stop; a stopped step loop then publishes nothing more.
   */
  cancel(taskId: string, bus: ExecutionEventBus): void {
    const entry = this.#open.get(taskId);
    if (entry === undefined) return;
    this.#open.delete(taskId);
    publishStatus(bus, taskId, entry.contextId, status(TaskState.TASK_STATE_CANCELED, agentMessage('canceled', entry.contextId, taskId)));
    entry.stop.abort();
  }
}

/** Answers at once with a Message, no task. */
class InstantAgent implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    bus.publish(AgentEvent.message(agentMessage(`echo: ${userText(ctx.userMessage)}`, ctx.contextId, '')));
  }

  cancelTask = async (): Promise<void> => undefined;
}

/** submitted, working, one artifact per step (`stepMs` apart), completed; cancelable meanwhile. */
class WorkerAgent implements AgentExecutor {
  constructor(
    readonly ledger: TaskLedger,
    readonly stepMs: number,
  ) {}

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const signal = this.ledger.open(taskId, contextId);
    try {
      bus.publish(AgentEvent.task(newTask(ctx, TaskState.TASK_STATE_SUBMITTED)));
      publishStatus(bus, taskId, contextId, status(TaskState.TASK_STATE_WORKING));
      const steps = workerSteps(userText(ctx.userMessage));
      for (let i = 1; i <= steps; i++) {
        try {
          await sleep(this.stepMs, undefined, { signal });
        } catch {
          return;
        }
        publishArtifact(bus, taskId, contextId, artifact(`chunk-${i}`, `chunk ${i}`));
      }
      if (signal.aborted) return;
      publishStatus(
        bus,
        taskId,
        contextId,
        status(TaskState.TASK_STATE_COMPLETED, agentMessage(`done in ${steps} steps`, contextId, taskId)),
      );
    } finally {
      this.ledger.close(taskId);
    }
  }

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => this.ledger.cancel(taskId, bus);
}

/** Asks a question first (input-required); the next message on that task is the answer. */
class AskerAgent implements AgentExecutor {
  constructor(readonly ledger: TaskLedger) {}

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    if (ctx.task === undefined) {
      // Left open: the SDK keeps an input-required task's bus alive for the answer, or a cancel.
      this.ledger.open(taskId, contextId);
      bus.publish(AgentEvent.task(newTask(ctx, TaskState.TASK_STATE_SUBMITTED)));
      // As a status update: that is what ends the SDK's wait for a blocking SendMessage.
      const question = agentMessage(ASKER_QUESTION, contextId, taskId);
      publishStatus(bus, taskId, contextId, status(TaskState.TASK_STATE_INPUT_REQUIRED, question));
      return;
    }
    this.ledger.close(taskId);
    // Every turn must open with a task or a message, a follow-up too.
    bus.publish(AgentEvent.task(ctx.task));
    publishArtifact(bus, taskId, contextId, artifact('answer', userText(ctx.userMessage)));
    publishStatus(bus, taskId, contextId, status(TaskState.TASK_STATE_COMPLETED));
  }

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => this.ledger.cancel(taskId, bus);
}

/** A task that fails when the text contains `fail`, else completes. */
class FailerAgent implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const text = userText(ctx.userMessage);
    bus.publish(AgentEvent.task(newTask(ctx, TaskState.TASK_STATE_SUBMITTED)));
    publishStatus(bus, taskId, contextId, status(TaskState.TASK_STATE_WORKING));
    if (text.includes('fail')) {
      publishStatus(
        bus,
        taskId,
        contextId,
        status(TaskState.TASK_STATE_FAILED, agentMessage(`failed as asked: ${text}`, contextId, taskId)),
      );
      return;
    }
    publishArtifact(bus, taskId, contextId, artifact('result', `ok: ${text}`));
    publishStatus(bus, taskId, contextId, status(TaskState.TASK_STATE_COMPLETED));
  }

  cancelTask = async (): Promise<void> => undefined;
}

/** One executor per agent; `shutdown` stops the worker's steps when the mock closes. */
export function createExecutors(shutdown: AbortSignal, stepMs: number): Readonly<Record<A2aAgentName, AgentExecutor>> {
  const ledger = new TaskLedger(shutdown);
  return {
    instant: new InstantAgent(),
    worker: new WorkerAgent(ledger, stepMs),
    asker: new AskerAgent(ledger),
    failer: new FailerAgent(),
  };
}
