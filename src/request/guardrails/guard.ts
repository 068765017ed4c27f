import {
  type AskService,
  type CheckSubject,
  type CompiledGuardrail,
  type GuardrailVerdict,
  guardAnswer,
  type Mapping,
  type OutputPlan,
  OutputStream,
  outputActs,
  type TextKind,
} from '../../guardrails/index.js';
import type { AnswerTransform } from '../../providers/index.js';

// What a request's answer owes its guardrails, set by the input stage: the output phase's
// guardrails, and the placeholders its input masking issued, to be restored. Each attempt's
// answer gets its own transform from it (an answer that failed over leaves nothing behind).

export interface RequestGuard {
  readonly kind: TextKind;
  readonly output: readonly CompiledGuardrail[];
  /** The request's placeholders; the ones issued with `restore: true` are put back in the answer. */
  readonly restore: Mapping;
  readonly subject: CheckSubject;
  readonly ask: AskService;
}

/** Where the verdicts go: the request's record (its Exchange), while it is open. */
export interface VerdictSink {
  readonly ended: boolean;
  guardrailChecked(verdict: GuardrailVerdict): void;
}

/** The output transform of one attempt's answer, or null when the answer has nothing to check or restore. */
export function outputTransform(guard: RequestGuard | undefined, x: VerdictSink): AnswerTransform | null {
  if (guard === undefined || guard.kind === 'embeddings') return null;
  const plan: OutputPlan = {
    kind: guard.kind,
    guardrails: guard.output,
    restore: guard.restore.size > 0 ? guard.restore : null,
    subject: guard.subject,
    ask: guard.ask,
    record: (v) => {
      if (!x.ended) x.guardrailChecked(v);
    },
  };
  if (!outputActs(plan)) return null;
  let stream: OutputStream | null = null;
  return {
    body: (status, body) => guardAnswer(plan, status, body),
    events(events) {
      stream ??= new OutputStream(plan);
      return stream.push(events);
    },
    end() {
      return stream === null ? '' : stream.end();
    },
  };
}
