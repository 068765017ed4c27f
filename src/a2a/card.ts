// An upstream agent's card, read once into what the gateway needs (its JSON-RPC endpoints per
// protocol version and its capabilities), and the card the gateway serves in its place.
//
// Three card shapes exist: 1.0 (`supportedInterfaces`, a version per interface), 0.3 (top-level
// `url` + `preferredTransport` + `additionalInterfaces`, one card-level `protocolVersion`) and
// the "superset" card that the A2A SDK serves to both, carrying both field sets. The 1.0 and 0.3
// top-level fields are disjoint, except `securitySchemes`, whose entries differ in shape.

import type { A2AVersion } from './types.js';

export interface AgentCardView {
  /** The upstream card as parsed. */
  readonly json: Readonly<Record<string, unknown>>;
  /** It carries `signatures` (a non-empty array). */
  readonly signed: boolean;
  readonly name: string;
  /** Absolute JSON-RPC endpoint URL per protocol version the card advertises (resolved against the card's URL). */
  readonly endpoints: Readonly<Partial<Record<A2AVersion, string>>>;
  readonly streaming: boolean;
  readonly pushNotifications: boolean;
  /** 1.0 `capabilities.extendedAgentCard`, 0.3 `supportsAuthenticatedExtendedCard`. */
  readonly extendedCard: boolean;
}

/** How callers authenticate to the gateway, which is what a served card must advertise. */
export interface GatewayCardSecurity {
  readonly bearer: boolean;
  readonly apiKeyHeader: string | null;
}

type Json = Record<string, unknown>;

interface Offer {
  readonly url: unknown;
  readonly binding: string;
  readonly version: string;
}

const JSONRPC = 'JSONRPC';

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');
/** ProtoJSON parsers accept the proto field name as well as the camelCase JSON name. */
const field = (json: Json, camel: string, snake: string): unknown => json[camel] ?? json[snake];

/** '1.0', '1.0.0', '0.3', '0.3.0' (any patch) name the two versions the gateway speaks. */
function protocolVersionOf(version: string): A2AVersion | null {
  const match = /^\s*(\d+)\.(\d+)(?:\.\d+)?\s*$/.exec(version);
  if (match === null) return null;
  const majorMinor = `${Number(match[1])}.${Number(match[2])}`;
  return majorMinor === '1.0' || majorMinor === '0.3' ? majorMinor : null;
}

export function readCard(json: unknown, cardUrl: string): AgentCardView | { readonly error: string } {
  if (!isObject(json)) return { error: 'the agent card is not a JSON object' };
  const name = json.name;
  if (typeof name !== 'string' || name.trim() === '') return { error: 'the agent card has no name' };

  const offers = offersOf(json);
  const endpoints: Partial<Record<A2AVersion, string>> = {};
  for (const offer of offers) {
    if (offer.binding.toUpperCase() !== JSONRPC) continue;
    const version = protocolVersionOf(offer.version);
    const url = absoluteHttpUrl(offer.url, cardUrl);
    // The list is ordered by preference: the first usable entry per version wins.
    if (version !== null && url !== null && endpoints[version] === undefined) endpoints[version] = url;
  }
  if (endpoints['1.0'] === undefined && endpoints['0.3'] === undefined) return { error: noJsonRpcReason(offers) };

  const capabilities = isObject(json.capabilities) ? json.capabilities : {};
  return deepFreeze({
    json: structuredClone(json),
    signed: Array.isArray(json.signatures) && json.signatures.length > 0,
    name,
    endpoints,
    streaming: capabilities.streaming === true,
    pushNotifications: field(capabilities, 'pushNotifications', 'push_notifications') === true,
    extendedCard:
      field(capabilities, 'extendedAgentCard', 'extended_agent_card') === true || json.supportsAuthenticatedExtendedCard === true,
  });
}

/** The interfaces a card lists, in its order. A non-empty 1.0 list wins over 0.3's fields, as the SDK's resolver has it. */
function offersOf(json: Json): Offer[] {
  const supported = field(json, 'supportedInterfaces', 'supported_interfaces');
  if (Array.isArray(supported) && supported.length > 0) {
    return supported.filter(isObject).map((entry) => ({
      url: entry.url,
      binding: text(field(entry, 'protocolBinding', 'protocol_binding')),
      // The SDK reads an interface without a version as 0.3, the version before it was per interface.
      version: text(field(entry, 'protocolVersion', 'protocol_version')) || '0.3',
    }));
  }
  const version = text(json.protocolVersion) || '0.3';
  const offers: Offer[] = [];
  if (json.url !== undefined) offers.push({ url: json.url, binding: text(json.preferredTransport) || JSONRPC, version });
  if (Array.isArray(json.additionalInterfaces)) {
    for (const entry of json.additionalInterfaces.filter(isObject))
      offers.push({ url: entry.url, binding: text(entry.transport), version });
  }
  return offers;
}

function noJsonRpcReason(offers: readonly Offer[]): string {
  if (offers.length === 0) return 'offers no JSON-RPC interface (it lists none)';
  const listed = [...new Set(offers.map((o) => (o.binding.toUpperCase() === JSONRPC ? `${JSONRPC} ${o.version}` : o.binding || '?')))];
  if (!offers.some((o) => o.binding.toUpperCase() === JSONRPC)) return `offers no JSON-RPC interface (it lists: ${listed.join(', ')})`;
  return `offers no JSON-RPC interface at protocol 1.0 or 0.3 with an http(s) URL (it lists: ${listed.join(', ')})`;
}

function absoluteHttpUrl(url: unknown, base: string): string | null {
  if (typeof url !== 'string' || url === '') return null;
  let parsed: URL;
  try {
    parsed = new URL(url, base);
  } catch {
    return null;
  }
  return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
}

/** The preferred version's endpoint if the card advertises it, else the other one's. */
export function jsonRpcEndpointFor(view: AgentCardView, preferred: A2AVersion): { url: string; version: A2AVersion } | null {
  const other: A2AVersion = preferred === '1.0' ? '0.3' : '1.0';
  for (const version of [preferred, other]) {
    const url = view.endpoints[version];
    if (url !== undefined) return { url, version };
  }
  return null;
}

// Names of the gateway's schemes in the served card; upstream names never survive.
const BEARER = 'bearer';
const API_KEY = 'apiKey';

/**
 * The card the gateway serves for an agent reached at `agentUrl`. An unsigned card becomes a
 * superset card: every interface is `agentUrl` at both versions, and the security is the
 * gateway's own, written so that both a 1.0 and a 0.3 reader find what they expect. A signed
 * card is served as the upstream wrote it: any change would break its signature.
 */
export function clientCard(view: AgentCardView, agentUrl: string, security: GatewayCardSecurity): Record<string, unknown> {
  if (view.signed) return view.json as Record<string, unknown>;
  const card: Json = structuredClone(view.json) as Json;

  for (const key of ['supportedInterfaces', 'supported_interfaces', 'additionalInterfaces', ...upstreamSecurityFields]) delete card[key];
  card.supportedInterfaces = [
    { url: agentUrl, protocolBinding: JSONRPC, protocolVersion: '1.0' },
    { url: agentUrl, protocolBinding: JSONRPC, protocolVersion: '0.3' },
  ];
  card.url = agentUrl;
  card.preferredTransport = JSONRPC;
  card.protocolVersion = '0.3.0';

  const capabilities: Json = isObject(card.capabilities) ? card.capabilities : {};
  card.capabilities = capabilities;
  if (view.extendedCard) {
    capabilities.extendedAgentCard = true;
    card.supportsAuthenticatedExtendedCard = true;
  }
  if (Array.isArray(card.skills)) {
    for (const skill of card.skills.filter(isObject)) for (const key of upstreamSecurityFields) delete skill[key];
  }
  Object.assign(card, gatewaySecurity(security));
  return card;
}

/** Where the 1.0 (both spellings) and 0.3 cards, and their skills, name schemes and requirements. */
const upstreamSecurityFields = ['securitySchemes', 'security_schemes', 'securityRequirements', 'security_requirements', 'security'];

/**
 * The gateway's schemes, each entry carrying 0.3's `type` fields beside 1.0's oneof member: a
 * 1.0 ProtoJSON reader takes the member and ignores the rest, a 0.3 reader switches on `type`.
 * Requirements are alternatives: one entry per scheme, either is enough.
 */
function gatewaySecurity(security: GatewayCardSecurity): Json {
  const schemes: Json = {};
  if (security.bearer) {
    schemes[BEARER] = { type: 'http', scheme: 'bearer', httpAuthSecurityScheme: { scheme: 'Bearer' } };
  }
  if (security.apiKeyHeader !== null) {
    const name = security.apiKeyHeader;
    schemes[API_KEY] = { type: 'apiKey', in: 'header', name, apiKeySecurityScheme: { location: 'header', name } };
  }
  const names = Object.keys(schemes);
  if (names.length === 0) return {};
  return {
    securitySchemes: schemes,
    securityRequirements: names.map((n) => ({ schemes: { [n]: { list: [] } } })),
    security: names.map((n) => ({ [n]: [] })),
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
