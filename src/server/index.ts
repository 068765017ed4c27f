// server/: the composition root. It alone builds the stateful services (breakers, pools,
// counters, affinity, metrics, logger), wires them to the generation holder and the
// reload coordinator, and runs the HTTP listeners, the admin API and the drain.
// Nothing imports server/. See docs/decisions/0001-one-generation.md.

export type { Services } from '../request/index.js';
export { type Exported, exportText } from './config-export.js';
export { DatabaseLink } from './database-link.js';
export { type Gateway, type GatewayOptions, StartupError, startGateway } from './gateway.js';
export type { ReloadOutcome, ReloadResult } from './reload.js';
