import type { GatewayConfig, GuardrailAttachmentConfig } from '../config/index.js';
import type { Keyring } from '../live/index.js';
import type { GuardrailStats } from '../telemetry/index.js';

// The `guardrails` section of /admin/status and of the status page's data: each configured
// guardrail, where it is attached, and what it did since the gateway started. Names,
// counts and times only: never a pattern, a header or a text a guardrail read.

/** The phases a guardrail is attached to, by the route, team or key (id) that attaches it. */
type Attached = Record<string, string[]>;

export interface GuardrailView {
  readonly name: string;
  readonly type: string;
  readonly attached: {
    readonly routes: Attached;
    readonly teams: Attached;
    readonly keys: Attached;
    /** `arguments` and/or `results` of every tools/call on /mcp. */
    readonly mcp: readonly string[];
  };
  /** Verdicts since start, by phase, then action (allow, warn, mask, block); a pair with none is absent. */
  readonly verdicts: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Checks its service could not answer, by outcome. */
  readonly errors: { readonly fail_open: number; readonly fail_closed: number };
  readonly checks: number;
  /** Check latency since start, in ms (bucketed: within 25%); null before its first check. */
  readonly latency_ms: { readonly p50: number | null; readonly p99: number | null };
}

/** Each guardrail of the serving generation's `config`, attached by its routes, by mcp, and by the keyring's teams and keys. */
export function guardrailsView(
  config: Pick<GatewayConfig, 'guardrails' | 'routing' | 'mcp'>,
  keyring: Pick<Keyring, 'teams' | 'keys'> | null,
  stats: GuardrailStats,
): GuardrailView[] {
  const defined = config.guardrails ?? {};
  const routes = attachments(Object.entries(config.routing.routes ?? {}));
  const teams = attachments(Object.entries(keyring?.teams ?? {}));
  const keys = attachments((keyring?.keys ?? []).map((k) => [k.id, k] as const));
  const mcp = config.mcp.guardrails;
  return Object.entries(defined).map(([name, g]) => {
    const s = stats.view(name);
    return {
      name,
      type: g.type,
      attached: {
        routes: routes.get(name) ?? {},
        teams: teams.get(name) ?? {},
        keys: keys.get(name) ?? {},
        mcp: [...(mcp?.arguments?.includes(name) ? ['arguments'] : []), ...(mcp?.results?.includes(name) ? ['results'] : [])],
      },
      verdicts: s.verdicts,
      errors: { fail_open: s.errors.fail_open ?? 0, fail_closed: s.errors.fail_closed ?? 0 },
      checks: s.checks,
      latency_ms: { p50: s.p50Ms, p99: s.p99Ms },
    };
  });
}

/** guardrail name -> holder (route, team or key id) -> the phases it attaches that guardrail to. */
function attachments(
  holders: ReadonlyArray<readonly [string, { readonly guardrails?: GuardrailAttachmentConfig | undefined }]>,
): Map<string, Attached> {
  const byName = new Map<string, Attached>();
  const add = (name: string, holder: string, phase: string): void => {
    let attached = byName.get(name);
    if (attached === undefined) byName.set(name, (attached = {}));
    const phases = (attached[holder] ??= []);
    if (!phases.includes(phase)) phases.push(phase);
  };
  for (const [holder, h] of holders) {
    for (const name of h.guardrails?.input ?? []) add(name, holder, 'input');
    for (const name of h.guardrails?.output ?? []) add(name, holder, 'output');
  }
  return byName;
}
