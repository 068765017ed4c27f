import type { GuardrailAttachmentConfig } from '../../config/index.js';
import type { Principal } from '../../governance/index.js';
import { type CompiledGuardrail, compileGuardrails } from '../../guardrails/index.js';
import type { Generation, Keyring } from '../../live/index.js';
import { callerMemo } from '../caller-memo.js';

// Which guardrails a request runs, in each phase: the route's, then the team's, then the
// key's, each name once, at the first place it appears. A team's or key's list only adds:
// an empty or different list removes nothing of the route's. Resolved once per route, team
// and key for a generation and keyring pair, so a request pays a map lookup, and a gateway
// without guardrails not even that.

export interface Attached {
  readonly input: readonly CompiledGuardrail[];
  readonly output: readonly CompiledGuardrail[];
}

export const NONE: Attached = Object.freeze({ input: Object.freeze([]), output: Object.freeze([]) });

/** The guardrails of a model request of `principal` for `model`. */
export function attachedFor(gen: Generation, keyring: Keyring, principal: Principal, model: string): Attached {
  if (gen.config.guardrails === undefined) return NONE;
  return resolvedFor(gen, keyring, principal, model);
}

const resolvedFor = callerMemo(resolve);

function resolve(gen: Generation, keyring: Keyring, principal: Principal, model: string): Attached {
  const lists: Array<GuardrailAttachmentConfig | undefined> = [gen.config.routing.routes?.[model]?.guardrails];
  if (principal.team !== null) lists.push(keyring.teams[principal.team]?.guardrails);
  if (principal.keyId !== null) lists.push(keyring.keys.find((k) => k.id === principal.keyId)?.guardrails);
  const compiled = compileGuardrails(gen.config.guardrails);
  const input = union(
    lists.map((l) => l?.input),
    compiled,
  );
  const output = union(
    lists.map((l) => l?.output),
    compiled,
  );
  if (input.length === 0 && output.length === 0) return NONE;
  return Object.freeze({ input, output });
}

/** The `mcp.guardrails` of a generation: on tools/call arguments and results. */
export function toolGuardrails(gen: Generation): {
  readonly arguments: readonly CompiledGuardrail[];
  readonly results: readonly CompiledGuardrail[];
} {
  const attached = gen.config.mcp.guardrails;
  if (attached === undefined || gen.config.guardrails === undefined) return NO_TOOL_GUARDRAILS;
  const compiled = compileGuardrails(gen.config.guardrails);
  return { arguments: union([attached.arguments], compiled), results: union([attached.results], compiled) };
}

const NO_TOOL_GUARDRAILS = Object.freeze({ arguments: Object.freeze([]), results: Object.freeze([]) });

/** The names of `lists` in order, each once, as compiled guardrails; a name the config does not define (a database team's typo) is skipped. */
function union(lists: ReadonlyArray<readonly string[] | undefined>, compiled: ReadonlyMap<string, CompiledGuardrail>): CompiledGuardrail[] {
  const out: CompiledGuardrail[] = [];
  const seen = new Set<string>();
  for (const list of lists) {
    for (const name of list ?? []) {
      if (seen.has(name)) continue;
      seen.add(name);
      const g = compiled.get(name);
      if (g !== undefined) out.push(g);
    }
  }
  return out;
}
