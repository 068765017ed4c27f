import type { AgentCard, AgentInterface, AgentSkill } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import type { A2aAgentName } from './a2a-agents.js';
import { WORKER_DEFAULT_STEPS, WORKER_MAX_STEPS } from './a2a-agents.js';

/** The A2A protocol versions a mock agent can speak. */
export type A2aVersion = '1.0' | '0.3';

export const A2A_VERSIONS: readonly A2aVersion[] = ['1.0', '0.3'];

interface AgentDescription {
  readonly description: string;
  readonly pushNotifications: boolean;
  readonly skill: string;
  readonly examples: readonly string[];
}

const AGENTS: Readonly<Record<A2aAgentName, AgentDescription>> = {
  instant: {
    description: 'Answers at once with a message echoing the text.',
    pushNotifications: false,
    skill: 'Echo the text back.',
    examples: ['hello'],
  },
  worker: {
    description: `Works a task in steps (${WORKER_DEFAULT_STEPS}, or steps:N up to ${WORKER_MAX_STEPS}), one artifact per step.`,
    pushNotifications: true,
    skill: 'Produce one text chunk per step.',
    examples: ['work', 'work steps:10'],
  },
  asker: {
    description: 'Asks a question first (input-required); the next message on the task is the answer.',
    pushNotifications: false,
    skill: 'Ask, then record the answer as an artifact.',
    examples: ['ask me'],
  },
  failer: {
    description: 'Runs a task that fails when the text contains "fail", else completes.',
    pushNotifications: false,
    skill: 'Fail on request.',
    examples: ['please fail', 'succeed'],
  },
};

function interfaces(url: string, versions: readonly A2aVersion[]): AgentInterface[] {
  const only = (protocolVersion: A2aVersion): AgentInterface[] => [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion }];
  if (!versions.includes('1.0')) return only('0.3');
  return versions.includes('0.3') ? duplicateInterfacesForLegacy(only('1.0'), ['JSONRPC']) : only('1.0');
}

/** The agent's 1.0 card, as its request handler holds it; `agentUrl` is its JSON-RPC endpoint. */
export function agentCard(name: A2aAgentName, agentUrl: string, versions: readonly A2aVersion[]): AgentCard {
  const about = AGENTS[name];
  const skill: AgentSkill = {
    id: name,
    name,
    description: about.skill,
    tags: ['mock'],
    examples: [...about.examples],
    inputModes: ['text/plain'],
    outputModes: ['text/plain'],
    securityRequirements: [],
  };
  return {
    name,
    description: about.description,
    supportedInterfaces: interfaces(agentUrl, versions),
    provider: { organization: 'Switchyard mock', url: 'https://example.com/switchyard-mock' },
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: about.pushNotifications, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [skill],
    signatures: [],
  };
}

/**
 * Whether an A2A-Version value asks for 0.3: absent or empty means 0.3 (the spec's rule for
 * clients that predate the header), else any version in [0.3, 1.0). The SDK's rule, which it
 * does not export.
 */
export function isLegacyVersion(version: string | undefined): boolean {
  if (version === undefined || version.trim() === '') return true;
  const [major, minor = '0'] = version.trim().split('.');
  const ma = Number.parseInt(major as string, 10);
  const mi = Number.parseInt(minor, 10);
  if (!Number.isFinite(ma) || !Number.isFinite(mi) || ma < 0 || mi < 0) return false;
  return ma === 0 && mi >= 3;
}

/**
 * The card in 0.3's shape, as the SDK's compat layer writes it from a 1.0 card: the first
 * legacy-range interface becomes the top-level `url`/`preferredTransport`/`protocolVersion`,
 * the others `additionalInterfaces`; signatures are copied as they are. `hybrid` also keeps the
 * 1.0 `supportedInterfaces` (the two shapes share no top-level field); `pureVersion` is the
 * `protocolVersion` a 0.3 agent states (`0.3.0`), replacing the interface's own.
 */
export function legacyCard(core: AgentCard, opts: { hybrid: boolean; pureVersion?: string }): Record<string, unknown> | null {
  const legacy = core.supportedInterfaces.filter((i) => i.protocolVersion === '' || isLegacyVersion(i.protocolVersion));
  const primary = legacy[0];
  if (primary === undefined) return null;
  const caps = core.capabilities;
  const card: Record<string, unknown> = {
    name: core.name,
    description: core.description,
    version: core.version,
    url: primary.url,
    preferredTransport: primary.protocolBinding,
    protocolVersion: opts.pureVersion ?? (primary.protocolVersion || '0.3'),
    capabilities: { streaming: caps?.streaming, pushNotifications: caps?.pushNotifications },
    defaultInputModes: [...core.defaultInputModes],
    defaultOutputModes: [...core.defaultOutputModes],
    skills: core.skills.map((s) => ({
      id: s.id,
      name: s.name,
      description: s.description,
      tags: [...s.tags],
      ...(s.examples.length > 0 ? { examples: [...s.examples] } : {}),
      ...(s.inputModes.length > 0 ? { inputModes: [...s.inputModes] } : {}),
      ...(s.outputModes.length > 0 ? { outputModes: [...s.outputModes] } : {}),
    })),
  };
  if (legacy.length > 1) card.additionalInterfaces = legacy.slice(1).map((i) => ({ url: i.url, transport: i.protocolBinding }));
  if (core.provider !== undefined) card.provider = { url: core.provider.url, organization: core.provider.organization };
  if (caps?.extendedAgentCard !== undefined) card.supportsAuthenticatedExtendedCard = caps.extendedAgentCard;
  if (core.signatures.length > 0) {
    card.signatures = core.signatures.map((s) => ({
      protected: s.protected,
      signature: s.signature,
      ...(s.header === undefined ? {} : { header: s.header }),
    }));
  }
  if (opts.hybrid) card.supportedInterfaces = structuredClone(core.supportedInterfaces);
  return card;
}

/**
 * Which card a request gets, by the SDK's agent-card handler's rule when both versions are
 * served: an A2A-Version in the 0.3 range (or none) gets the hybrid card, any other the 1.0
 * card. A 1.0-only agent is an SDK server without the compat layer (always the 1.0 card); a
 * 0.3-only agent is a 0.3 server (always the pure 0.3 card, which knows nothing of the header).
 */
export function cardFor(core: AgentCard, versions: readonly A2aVersion[], requested: string | undefined): Record<string, unknown> {
  if (!versions.includes('1.0')) return legacyCard(core, { hybrid: false, pureVersion: '0.3.0' }) as Record<string, unknown>;
  if (!versions.includes('0.3') || !isLegacyVersion(requested)) return core as unknown as Record<string, unknown>;
  return legacyCard(core, { hybrid: true }) as Record<string, unknown>;
}
