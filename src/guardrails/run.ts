import type { CompiledGuardrail, LocalGuardrail, ServiceGuardrail } from './compiled.js';
import { type Mapping, maskText } from './mask.js';
import type { GuardrailErrorKind, GuardrailPhase, GuardrailVerdict, VerdictAction } from './verdict.js';

// One phase of one request (its input, a whole answer, a tool call's arguments or result)
// through its guardrails, in order. Local checks run synchronously; the run turns into a
// promise only at the first service it must ask, so a route whose guardrails are all local
// never waits for a microtask. Each guardrail sees the texts as the ones before it left them
// (masked), and a block ends the run: the guardrails after it are not asked.

/** One text a guardrail checks, with who wrote it (a service such as NeMo reads it as a chat message). */
export interface CheckedText {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly text: string;
}

/** What a service is asked: the texts, and who and what they belong to (never a secret). */
export interface ServiceCheck {
  readonly phase: GuardrailPhase;
  /** The client protocol: openai, anthropic, or mcp for a tool call. */
  readonly protocol: string;
  /** The model route, or the tool on /mcp. */
  readonly route: string | null;
  readonly model: string | null;
  readonly team: string | null;
  /** The caller's key id (or a signed-in principal's id), never the key. */
  readonly key: string | null;
  readonly texts: readonly CheckedText[];
}

/** A service's verdict. */
export type ServiceAnswer =
  | { readonly action: 'allow' }
  | { readonly action: 'block'; readonly categories: readonly string[]; readonly reason: string | null }
  /** Rewritten texts, one per checked text, in order (a webhook's `mask`, NeMo's `modified`). */
  | { readonly action: 'mask'; readonly texts: readonly string[]; readonly categories: readonly string[] };

/** How the request path asks a service guardrail; rejects with an error whose `kind` says why it could not answer. */
export type AskService = (g: ServiceGuardrail, check: ServiceCheck) => Promise<ServiceAnswer>;

/** Who and what a run is about: the service check's fields other than the phase and the texts. */
export type CheckSubject = Omit<ServiceCheck, 'phase' | 'texts'>;

export interface PhaseRun {
  /** The texts after the run: masked where a guardrail masked them. */
  readonly texts: readonly CheckedText[];
  /** Whether any text changed. */
  readonly changed: boolean;
  readonly verdicts: readonly GuardrailVerdict[];
  /** The verdict that blocked, or null. */
  readonly blocked: GuardrailVerdict | null;
  /** A fail_closed service that could not answer (the request is refused as unavailable), or null. */
  readonly unavailable: GuardrailVerdict | null;
}

export interface PhaseInput {
  readonly phase: GuardrailPhase;
  readonly guardrails: readonly CompiledGuardrail[];
  readonly texts: readonly CheckedText[];
  /** The request's placeholders (a mask adds to it); null = a phase that never masks with placeholders. */
  readonly mapping: Mapping | null;
  readonly subject: CheckSubject;
  readonly ask: AskService;
}

/** Runs the phase: synchronously when every guardrail is local. */
export function runPhase(input: PhaseInput): PhaseRun | Promise<PhaseRun> {
  const state: RunState = { texts: [...input.texts], changed: false, verdicts: [], blocked: null, unavailable: null };
  if (input.mapping !== null) for (const t of input.texts) input.mapping.reserve(t.text);
  return continueRun(input, state, 0);
}

interface RunState {
  texts: CheckedText[];
  changed: boolean;
  verdicts: GuardrailVerdict[];
  blocked: GuardrailVerdict | null;
  unavailable: GuardrailVerdict | null;
}

function continueRun(input: PhaseInput, state: RunState, from: number): PhaseRun | Promise<PhaseRun> {
  const list = input.guardrails;
  for (let i = from; i < list.length; i++) {
    if (state.blocked !== null || state.unavailable !== null) break;
    const g = list[i] as CompiledGuardrail;
    if (g.kind === 'local') {
      runLocal(g, input, state);
      continue;
    }
    if (state.texts.every((t) => t.text.length === 0)) continue;
    return askOne(g, input, state).then(() => continueRun(input, state, i + 1));
  }
  return state;
}

function runLocal(g: LocalGuardrail, input: PhaseInput, state: RunState): void {
  const started = performance.now();
  const categories: Record<string, number> = {};
  let found = false;
  const masks = g.action === 'mask' && input.mapping !== null;
  for (let i = 0; i < state.texts.length; i++) {
    const t = state.texts[i] as CheckedText;
    if (t.text.length === 0) continue;
    const findings = g.detectors.detect(t.text);
    if (findings.length === 0) continue;
    found = true;
    for (const f of findings) categories[f.entity] = (categories[f.entity] ?? 0) + 1;
    if (masks) {
      state.texts[i] = { role: t.role, text: maskText(t.text, findings, input.mapping as Mapping, g.restore) };
      state.changed = true;
    }
  }
  const action: VerdictAction = found ? g.action : 'allow';
  const verdict: GuardrailVerdict = { guardrail: g.name, phase: input.phase, action, categories, latencyMs: performance.now() - started };
  state.verdicts.push(verdict);
  if (action === 'block') state.blocked = verdict;
}

async function askOne(g: ServiceGuardrail, input: PhaseInput, state: RunState): Promise<void> {
  const started = performance.now();
  let answer: ServiceAnswer;
  try {
    answer = await input.ask(g, { ...input.subject, phase: input.phase, texts: state.texts });
  } catch (err) {
    const kind = errorKindOf(err);
    const outcome = g.onError;
    const verdict: GuardrailVerdict = {
      guardrail: g.name,
      phase: input.phase,
      action: outcome === 'fail_closed' ? 'block' : 'allow',
      categories: {},
      latencyMs: performance.now() - started,
      error: { kind, outcome },
    };
    state.verdicts.push(verdict);
    if (outcome === 'fail_closed') state.unavailable = verdict;
    return;
  }
  const latencyMs = performance.now() - started;
  const base = { guardrail: g.name, phase: input.phase, latencyMs };
  if (answer.action === 'allow') {
    state.verdicts.push({ ...base, action: 'allow', categories: {} });
    return;
  }
  const categories = countOf(answer.categories.length > 0 ? answer.categories : [answer.action === 'block' ? 'blocked' : 'modified']);
  // The definition's action says what a verdict may do: warn only records; block obeys a
  // block and records a rewrite; mask obeys both.
  if (g.action === 'warn' || (answer.action === 'mask' && g.action === 'block')) {
    state.verdicts.push({ ...base, action: 'warn', categories });
    return;
  }
  if (answer.action === 'block') {
    const verdict: GuardrailVerdict = { ...base, action: 'block', categories };
    state.verdicts.push(verdict);
    state.blocked = verdict;
    return;
  }
  const texts = answer.texts;
  state.texts = state.texts.map((t, i) => {
    const text = texts[i] ?? t.text;
    if (text !== t.text) state.changed = true;
    return { role: t.role, text };
  });
  state.verdicts.push({ ...base, action: 'mask', categories });
}

function countOf(names: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of names) out[n] = (out[n] ?? 0) + 1;
  return out;
}

const ERROR_KINDS: ReadonlySet<string> = new Set(['timeout', 'error', 'invalid']);

function errorKindOf(err: unknown): GuardrailErrorKind {
  const kind = (err as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' && ERROR_KINDS.has(kind) ? (kind as GuardrailErrorKind) : 'error';
}
