import type { GenerationHolder } from '../live/index.js';
import type { BreakerTransition } from '../resilience/index.js';
import type { Logger } from '../telemetry/index.js';

/**
 * One log line per breaker change of state: opening is a warning, half-open and
 * closing are news. A breaker belongs to a provider identity; the line names the providers
 * the serving generation gives that identity (several names may share one), so an operator
 * reads `east`, not a URL. The identity is `type base_url`: a reference, never a credential.
 */
export function logBreakerTransition(logger: Logger, holder: GenerationHolder, t: BreakerTransition): void {
  const line = {
    msg: 'breaker',
    state: t.to,
    previous_state: t.from,
    provider: providerNames(holder, t.identity),
    identity: t.identity,
    reason: t.reason,
    cause: t.cause ?? undefined,
    consecutive_failures: t.consecutiveFailures,
    open_for_ms: t.openForMs ?? undefined,
  };
  if (t.to === 'open') logger.warn(line);
  else logger.info(line);
}

function providerNames(holder: GenerationHolder, identity: string): string | null {
  if (!holder.ready) return null;
  const gen = holder.current();
  // A tool server's breaker is named as a model provider's: both kinds share the chain and its breakers.
  const names = [...Object.values(gen.providers), ...Object.values(gen.tools.servers)]
    .filter((p) => p.identity === identity)
    .map((p) => p.name);
  return names.length === 0 ? null : names.join(',');
}
