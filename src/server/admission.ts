import type { IncomingMessage } from 'node:http';
import { priceUsage } from '../governance/index.js';
import type { Generation } from '../live/index.js';
import type { Exchange } from './exchange.js';

// The governance steps of DESIGN.md's request path, in the order the chat handler calls
// them: authenticate (from the headers, before any body is read), pre-check (after
// routing, before any upstream call) and settle (after the response). The generation the
// request captured is passed in, never looked up again, so a request is admitted, limited
// and billed under one generation.

/** Who is calling: a key and its team, or the open gateway's anonymous caller. */
export interface Principal {
  readonly keyId: string | null;
  readonly team: string | null;
}

const ANONYMOUS: Principal = Object.freeze({ keyId: null, team: null });

/**
 * The caller, from the request's headers alone. A generation without keys is an open
 * gateway (a local development proxy): every caller is anonymous.
 */
export function authenticate(_gen: Generation, _req: IncomingMessage): Principal {
  return ANONYMOUS;
}

/**
 * Admits the request against its caller's limits before any upstream call, or throws the
 * refusal. The anonymous caller of an open gateway has no limits.
 */
export function preCheck(_gen: Generation, _principal: Principal, _x: Exchange): void {}

/**
 * Prices what the response used with the pricing table of the generation that routed it,
 * in micro-USD rounded to a thousandth (free of float noise in logs and counters).
 */
export function settle(x: Exchange): void {
  const { gen, candidate, usage } = x;
  if (gen === null || candidate === null || usage === null) return;
  const cost = priceUsage(gen.pricing, candidate.provider.name, candidate.upstreamModel, usage);
  x.costMicroUsd = cost === null ? null : Math.round(cost * 1000) / 1000;
}
