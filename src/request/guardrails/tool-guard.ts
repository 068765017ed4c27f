import type { Principal } from '../../governance/index.js';
import {
  type AskService,
  type CheckSubject,
  type CompiledGuardrail,
  describeBlock,
  Mapping,
  type PhaseRun,
  restoreText,
  runPhase,
  type TextSlot,
  toolResultTexts,
  valueTexts,
  withTexts,
} from '../../guardrails/index.js';
import type { Generation } from '../../live/index.js';
import type { Exchange } from '../exchange.js';
import { askFor } from './ask.js';
import { toolGuardrails } from './attached.js';

// `mcp.guardrails` on a tools/call: `arguments` before any server is called (a block answers
// an `isError` result naming the guardrail, and the server is never called; a mask rewrites
// the strings of the arguments), `results` on the server's answer (a block replaces it with
// an `isError` result; a mask rewrites its text). Placeholders the arguments' masking issued
// with `restore: true` are put back in the result the client gets.

export interface ToolGuard {
  readonly results: readonly CompiledGuardrail[];
  readonly mapping: Mapping;
  readonly subject: CheckSubject;
  readonly ask: AskService;
}

export type ArgumentsVerdict =
  | { readonly kind: 'pass'; readonly args: Record<string, unknown> | undefined; readonly guard: ToolGuard | null }
  /** Answered as an `isError` result: the tool is not called. */
  | { readonly kind: 'blocked'; readonly message: string }
  | { readonly kind: 'unavailable'; readonly message: string };

/** The arguments through `mcp.guardrails.arguments`; synchronous unless a service is asked. */
export function guardArguments(
  x: Exchange,
  gen: Generation,
  principal: Principal,
  tool: string,
  args: Record<string, unknown> | undefined,
): ArgumentsVerdict | Promise<ArgumentsVerdict> {
  const attached = toolGuardrails(gen);
  if (attached.arguments.length === 0 && attached.results.length === 0) return { kind: 'pass', args, guard: null };
  const subject: CheckSubject = { protocol: 'mcp', route: tool, model: null, team: principal.team, key: principal.keyId };
  const ask = askFor(x);
  const mapping = new Mapping();
  const guard: ToolGuard = { results: attached.results, mapping, subject, ask };
  if (attached.arguments.length === 0 || args === undefined) return { kind: 'pass', args, guard };
  const slots = valueTexts(args, 'assistant');
  const run = runPhase({ phase: 'arguments', guardrails: attached.arguments, texts: slots, mapping, subject, ask });
  const decide = (r: PhaseRun): ArgumentsVerdict => {
    for (const v of r.verdicts) x.guardrailChecked(v);
    if (r.blocked !== null)
      return {
        kind: 'blocked',
        message: `the call was blocked by ${describeBlock(r.blocked.guardrail, r.blocked.categories)}: the tool was not called`,
      };
    if (r.unavailable !== null)
      return {
        kind: 'unavailable',
        message: `guardrail ${r.unavailable.guardrail} could not check the call (${r.unavailable.error?.kind ?? 'error'}) and fails closed`,
      };
    return {
      kind: 'pass',
      args: r.changed
        ? withTexts(
            args,
            slots,
            r.texts.map((t) => t.text),
          )
        : args,
      guard,
    };
  };
  return run instanceof Promise ? run.then(decide) : decide(run);
}

/** A tool's result through `mcp.guardrails.results`, with the arguments' placeholders restored; synchronous unless a service is asked. */
export function guardResult(
  x: Exchange,
  guard: ToolGuard,
  result: Record<string, unknown>,
): Record<string, unknown> | Promise<Record<string, unknown>> {
  const slots: TextSlot[] = toolResultTexts(result);
  const restore = (texts: readonly string[]): Record<string, unknown> => {
    const restored = guard.mapping.size === 0 ? texts : texts.map((t) => restoreText(t, guard.mapping));
    return withTexts(result, slots, restored);
  };
  if (guard.results.length === 0) return restore(slots.map((s) => s.text));
  // The result's own values are masked with placeholders the arguments' mapping never issued.
  const mapping = new Mapping();
  mapping.reserveIssued(guard.mapping);
  const run = runPhase({ phase: 'results', guardrails: guard.results, texts: slots, mapping, subject: guard.subject, ask: guard.ask });
  const decide = (r: PhaseRun): Record<string, unknown> => {
    for (const v of r.verdicts) x.guardrailChecked(v);
    const stopped = r.blocked ?? r.unavailable;
    if (stopped !== null) {
      const why =
        r.blocked !== null
          ? `the tool's result was blocked by ${describeBlock(stopped.guardrail, stopped.categories)}`
          : `guardrail ${stopped.guardrail} could not check the tool's result (${stopped.error?.kind ?? 'error'}) and fails closed`;
      return { content: [{ type: 'text', text: why }], isError: true };
    }
    return restore(r.texts.map((t) => t.text));
  };
  return run instanceof Promise ? run.then(decide) : decide(run);
}
