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

/** The output transform of one attempt, and for a Responses answer the response its client was given (what the store keeps). */
export interface GuardedAnswer extends AnswerTransform {
  /** The Response object the client got (a whole answer's body, a stream's final event's), or null before it or for other protocols. */
  given(): Record<string, unknown> | null;
}

/** The output transform of one attempt's answer, or null when the answer has nothing to check or restore. */
export function outputTransform(guard: RequestGuard | undefined, x: VerdictSink): GuardedAnswer | null {
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
  let given: Record<string, unknown> | null = null;
  const responses = guard.kind === 'responses';
  // A Responses answer's last word is what the store must keep: what the client was given, not what the upstream said.
  const keep = <T extends Buffer | string>(out: T, plainBody: boolean): T => {
    if (!responses) return out;
    const text = String(out);
    if (plainBody) given = parseObject(text) ?? given;
    else if (text.includes('"response.completed"') || text.includes('"response.incomplete"')) given = finalResponseOf(text) ?? given;
    return out;
  };
  const then = <T extends Buffer | string>(out: T | Promise<T>, plainBody: boolean): T | Promise<T> =>
    out instanceof Promise ? out.then((o) => keep(o, plainBody)) : keep(out, plainBody);
  return {
    body: (status, body) => (status >= 300 ? body : then(guardAnswer(plan, status, body), true)),
    events(events) {
      stream ??= new OutputStream(plan);
      return then(stream.push(events), false);
    },
    end() {
      return stream === null ? '' : then(stream.end(), false);
    },
    given: () => given,
  };
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The `response` of the last `response.completed` / `response.incomplete` event in `events`. */
function finalResponseOf(events: string): Record<string, unknown> | null {
  let found: Record<string, unknown> | null = null;
  for (const line of events.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const data = parseObject(line.slice(6));
    if ((data?.type === 'response.completed' || data?.type === 'response.incomplete') && typeof data.response === 'object')
      found = data.response as Record<string, unknown>;
  }
  return found;
}
