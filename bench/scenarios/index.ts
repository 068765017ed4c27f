import type { Scenario } from '../lib/scenario.js';
import { a2a } from './a2a.js';
import { adminIsolation } from './admin-isolation.js';
import { cache } from './cache.js';
import { governanceOverhead } from './governance-overhead.js';
import { guardrails } from './guardrails.js';
import { jwt } from './jwt.js';
import { keyWrite } from './key-write.js';
import { largeConfigReload } from './large-config-reload.js';
import { ledger } from './ledger.js';
import { mcp } from './mcp.js';
import { overlayApplyLatency } from './overlay-apply-latency.js';
import { overlayScale } from './overlay-scale.js';
import { proxyOverhead } from './proxy-overhead.js';
import { publisher } from './publisher.js';
import { reloadUnderLoad } from './reload-under-load.js';
import { responses } from './responses.js';
import { topologyWrite } from './topology-write.js';
import { translation } from './translation.js';

/** Every scenario, in the order `npm run bench` runs them. Add a new one here. */
export const scenarios: readonly Scenario[] = [
  proxyOverhead,
  reloadUnderLoad,
  largeConfigReload,
  overlayScale,
  overlayApplyLatency,
  governanceOverhead,
  publisher,
  translation,
  responses,
  mcp,
  a2a,
  ledger,
  adminIsolation,
  keyWrite,
  topologyWrite,
  jwt,
  guardrails,
  cache,
];
