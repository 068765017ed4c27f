import { createHash, type Hash } from 'node:crypto';
import type { GatewayConfig } from '../config/index.js';
import type { ParsedOverlay } from '../contract/index.js';
import { runSteps, type Steps } from './steps.js';

// A generation's topology digest: what an operator compares across replicas to see which one
// has not applied a write. Lowercase hex SHA-256 of the canonical JSON (RFC 8785's key order:
// object keys sorted by UTF-16 code units at every level, arrays in order, no whitespace) of
//   {providers, routing: {routes, tools, tools_from, agents, overlay?: {revision, candidates}}, pricing}
// taken from the validated config (and the serving overlay). It holds only what the config
// holds: a credential is a reference there, never a value. The generation's number, build
// time, teams and keys are left out, so two replicas serving the same topology agree whatever
// the file's key order or wherever (file or database) the topology came from.

/** Text gathered before it is handed to the hash: one update per few kilobytes, not per value. */
const CHUNK_CHARS = 16 * 1024;

/** What the digest covers, as one value: absent maps and lists are their empty selves. */
export function topologyOf(config: GatewayConfig, overlay: ParsedOverlay | null): Record<string, unknown> {
  const routing: Record<string, unknown> = {
    routes: config.routing.routes ?? {},
    tools: config.routing.tools ?? {},
    tools_from: config.routing.tools_from ?? [],
    agents: config.routing.agents ?? {},
  };
  if (overlay !== null) routing.overlay = { revision: overlay.revision, candidates: overlay.candidates };
  return { providers: config.providers, routing, pricing: config.pricing };
}

/** The digest of a generation's topology, with a pause point every few hundred values (the build runs in slices). */
export function* topologyDigestSteps(config: GatewayConfig, overlay: ParsedOverlay | null): Steps<string> {
  const out = new CanonicalHash();
  yield* out.value(topologyOf(config, overlay));
  return out.hex();
}

/** topologyDigestSteps, all at once. */
export function topologyDigest(config: GatewayConfig, overlay: ParsedOverlay | null): string {
  return runSteps(topologyDigestSteps(config, overlay));
}

/**
 * Objects and arrays this shallow are walked as steps, with a pause point after each member;
 * below, a member (a route, a price, a provider's field, the overlay's candidates: 1024 at
 * most) is written in one go.
 */
const STEPPED_DEPTH = 3;

/** Canonical JSON written straight into a SHA-256: each value visited once, nothing built whole. */
class CanonicalHash {
  readonly #hash: Hash = createHash('sha256');
  #text = '';

  #write(s: string): void {
    this.#text += s;
    if (this.#text.length >= CHUNK_CHARS) {
      this.#hash.update(this.#text, 'utf8');
      this.#text = '';
    }
  }

  *value(v: unknown, depth = 0): Steps<void> {
    if (depth >= STEPPED_DEPTH || v === null || typeof v !== 'object') {
      this.#write(canonical(v));
      yield;
      return;
    }
    if (Array.isArray(v)) {
      this.#write('[');
      for (let i = 0; i < v.length; i += 1) {
        if (i > 0) this.#write(',');
        yield* this.value(v[i], depth + 1);
      }
      this.#write(']');
      return;
    }
    const record = v as Record<string, unknown>;
    let first = true;
    this.#write('{');
    for (const key of sortedKeys(record)) {
      this.#write(first ? memberName(key) : `,${memberName(key)}`);
      first = false;
      yield* this.value(record[key], depth + 1);
    }
    this.#write('}');
  }

  hex(): string {
    this.#hash.update(this.#text, 'utf8');
    this.#text = '';
    return this.#hash.digest('hex');
  }
}

/** A value's canonical JSON, in one string: for the small members below STEPPED_DEPTH. */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return scalar(v);
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i += 1) s += i === 0 ? canonical(v[i]) : `,${canonical(v[i])}`;
    return `${s}]`;
  }
  const record = v as Record<string, unknown>;
  let s = '{';
  let first = true;
  for (const key of sortedKeys(record)) {
    s += first ? memberName(key) : `,${memberName(key)}`;
    first = false;
    s += canonical(record[key]);
  }
  return `${s}}`;
}

/**
 * Field names repeat across routes (`candidates`, `provider`, `weight`): each is quoted once.
 * Bounded, since route names are field names too and a config may have tens of thousands.
 */
const quoted = new Map<string, string>();
const QUOTED_MAX = 4096;

/** `"key":` as canonical JSON writes it. */
function memberName(key: string): string {
  let q = quoted.get(key);
  if (q === undefined) {
    q = `${JSON.stringify(key)}:`;
    if (quoted.size < QUOTED_MAX) quoted.set(key, q);
  }
  return q;
}

/**
 * An object's keys in RFC 8785's order (the default sort compares UTF-16 code units), without
 * the members JSON.stringify leaves out: an undefined value (an unset optional) or a function.
 */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys: string[] = [];
  for (const key of Object.keys(record)) {
    const child = record[key];
    if (child !== undefined && typeof child !== 'function') keys.push(key);
  }
  return keys.length > 1 ? keys.sort() : keys;
}

/** A JSON scalar as RFC 8785 writes it: ECMAScript's number form, which JSON.stringify uses too; an undefined array element is null. */
function scalar(v: unknown): string {
  if (typeof v === 'number') return Number.isFinite(v) ? JSON.stringify(v) : 'null';
  if (typeof v === 'string' || typeof v === 'boolean') return JSON.stringify(v);
  return 'null';
}
