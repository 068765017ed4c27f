import type { IncomingMessage } from 'node:http';
import { clientCard, type GatewayCardSecurity, methodOf, publicOrigin } from '../../a2a/index.js';
import { SwitchyardError } from '../../errors.js';
import * as governance from '../../governance/index.js';
import type { AgentCandidate, AgentRoute, Generation } from '../../live/index.js';
import { admitSideCaller } from '../admission.js';
import { readBodyThen } from '../body.js';
import type { AgentCallRecord, Caller, Exchange } from '../exchange.js';
import { policyOf } from '../policy.js';
import type { ServeCallback } from '../serve-chain.js';
import type { ListenerSettings, Services } from '../services.js';
import { serveAgentCall } from './call.js';
import { errorText, gatewayError, type JsonRpcId, readRequest, sendJson, statusOf } from './messages.js';

// The /a2a endpoints: every agent of routing.agents at /a2a/<agent>, with the gateway as the
// agent its clients see. POST carries one JSON-RPC request, in A2A 1.0's method names or
// 0.3's, answered in the client's; GET /a2a/<agent>/.well-known/agent-card.json serves the
// agent's card with the gateway's URL and security in place of the upstream's (a signed card
// as it is); GET /a2a lists the agents the caller may use. The caller is authenticated
// before the body is read, as on every endpoint.

export type A2aHandler = (x: Exchange, rest: string, done: ServeCallback) => void;

export interface A2aHandlers {
  /** GET /a2a */
  readonly list: A2aHandler;
  /** GET /a2a/<agent>/.well-known/agent-card.json */
  readonly card: A2aHandler;
  /** POST /a2a/<agent> */
  readonly post: A2aHandler;
}

const CARD_PATHS: ReadonlySet<string> = new Set(['.well-known/agent-card.json', '.well-known/agent.json']);
/** How long a request waits for an agent's first card (at start, or after a reload brought the agent). */
const FIRST_CARD_WAIT_MS = 5000;

export function a2aHandlers(svc: Services, settings: ListenerSettings): A2aHandlers {
  return {
    list: (x, _rest, done) => {
      const caller = admitSideCaller(x, svc);
      const policy = policyOf(caller.keyring);
      const origin = originOf(svc, caller.gen, x.req);
      const agents = caller.gen.agents.names
        .filter((name) => governance.mayUseAgent(policy, caller.principal, name))
        .map((name) => ({ name, card_url: `${origin}/a2a/${encodeURIComponent(name)}/.well-known/agent-card.json` }));
      sendJson(x.res, JSON.stringify({ agents }));
      done(null);
    },
    card: (x, rest, done) => {
      const slash = rest.indexOf('/');
      const name = slash < 0 ? rest : rest.slice(0, slash);
      // The agent's own URL takes JSON-RPC: a GET of it is the wrong method, not a missing path.
      if (slash < 0)
        throw new SwitchyardError(
          'method_not_allowed',
          `/a2a/${rest} takes POST (JSON-RPC); its card is at /a2a/${rest}/.well-known/agent-card.json`,
          null,
          {
            allow: 'POST',
          },
        );
      if (!CARD_PATHS.has(rest.slice(slash + 1)))
        throw new SwitchyardError(
          'not_found',
          `no such path: /a2a/${rest} (an agent's card is at /a2a/<agent>/.well-known/agent-card.json)`,
        );
      const caller = admitSideCaller(x, svc);
      const agent = decodeSegment(name);
      const record = agentRecord(x, agent, 'AgentCard');
      const route = routeFor(caller, agent, record);
      record.routed = true;
      serveCard(svc, x, caller, agent, route, record).then(
        () => done(null),
        (err: unknown) => done(err),
      );
    },
    post: (x, rest, done) => {
      let caller: Caller;
      try {
        caller = admitSideCaller(x, svc);
      } catch (err) {
        if (!(err instanceof SwitchyardError)) throw err;
        return answerError(x, null, err, done);
      }
      const agent = decodeSegment(rest);
      const record = agentRecord(x, agent, 'none');
      let route: AgentRoute;
      try {
        const slash = rest.indexOf('/');
        if (slash >= 0 && CARD_PATHS.has(rest.slice(slash + 1)))
          throw new SwitchyardError('method_not_allowed', `/a2a/${rest} is an agent's card: GET it`, null, { allow: 'GET' });
        if (slash >= 0) throw new SwitchyardError('not_found', `no such path: /a2a/${rest}; POST JSON-RPC to /a2a/<agent>`);
        route = routeFor(caller, agent, record);
      } catch (err) {
        if (!(err instanceof SwitchyardError)) throw err;
        return answerError(x, null, err, done);
      }
      record.routed = true;
      const type = x.req.headers['content-type'];
      if (typeof type !== 'string' || !/^application\/(json|a2a\+json)\b/i.test(type)) {
        record.reason = 'invalid_request';
        sendJson(x.res, errorText(null, { code: -32005, message: 'Content type not supported: send application/json' }), 415);
        return done(null);
      }
      readBodyThen(
        x.req,
        settings.maxBodyBytes,
        (body) => {
          x.bodyRead(body.length);
          onRequest(svc, x, caller, agent, route, record, body).then(
            () => done(null),
            (err: unknown) => done(err),
          );
        },
        (err) => {
          if (err instanceof SwitchyardError) return answerError(x, null, err, done);
          done(err);
        },
      );
    },
  };
}

/** `%2F` and friends are decoded once; a segment that is not valid percent-encoding names no agent. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function agentRecord(x: Exchange, agent: string, method: string): AgentCallRecord {
  const record: AgentCallRecord = {
    agent,
    routed: false,
    method,
    version: null,
    candidate: null,
    taskId: null,
    contextId: null,
    state: null,
    outcome: 'refused',
    reason: null,
    fallback: [],
    failedCandidates: [],
  };
  x.agentCalled(record);
  return record;
}

/**
 * The agent's route, for a caller allowed to use it: 403 agent_not_allowed when its lists
 * leave the agent out (also for a name no route has, so a list tells nothing of what
 * exists), 404 when it may use the name but nothing serves it.
 */
function routeFor(caller: Caller, agent: string, record: AgentCallRecord): AgentRoute {
  const denied = governance.checkAgent(policyOf(caller.keyring), caller.principal, agent);
  if (denied !== null) {
    record.reason = 'agent_not_allowed';
    throw new SwitchyardError('agent_not_allowed', denied.message);
  }
  const route = caller.gen.agents.routes[agent];
  if (route === undefined || !Object.hasOwn(caller.gen.agents.routes, agent)) {
    record.reason = 'not_found';
    throw new SwitchyardError('not_found', `no agent "${agent}" on this gateway (GET /a2a lists them)`);
  }
  return route;
}

/** A refusal before the request was read: a JSON-RPC error with the catalog's status, `error.data.code` naming it. */
function answerError(x: Exchange, id: JsonRpcId, err: SwitchyardError, done: ServeCallback): void {
  x.failed(err.code);
  const headers: Record<string, string> = { ...err.headers };
  if ((err.code === 'unauthorized' || err.code === 'key_expired') && headers['www-authenticate'] === undefined)
    headers['www-authenticate'] = 'Bearer';
  sendJson(x.res, errorText(id, gatewayError(err.code, err.message)), statusOf(err.code), headers);
  done(null);
}

async function onRequest(
  svc: Services,
  x: Exchange,
  caller: Caller,
  agent: string,
  route: AgentRoute,
  record: AgentCallRecord,
  body: Buffer,
): Promise<void> {
  const read = readRequest(body);
  if (!read.ok) {
    record.reason = 'invalid_request';
    x.failed('invalid_request');
    sendJson(x.res, errorText(read.id, read.error), 400);
    return;
  }
  const request = read.request;
  const found = methodOf(request.method);
  if (found === null) {
    record.reason = 'method_not_found';
    sendJson(x.res, errorText(request.id, { code: -32601, message: `Method not found: ${request.method}` }));
    return;
  }
  record.method = found.method.v1;
  record.version = found.version;
  await serveAgentCall({
    svc,
    x,
    caller,
    agent,
    route,
    record,
    request,
    method: found.method,
    version: found.version,
    raw: body,
    agentUrl: () => `${originOf(svc, caller.gen, x.req)}/a2a/${encodeURIComponent(agent)}`,
    security: securityOf(svc, caller),
  });
}

/** The gateway's own origin as the client reached it (X-Forwarded-* believed only from server.trusted_proxies). */
function originOf(svc: Services, gen: Generation, req: IncomingMessage): string {
  return publicOrigin(req.headers, req.socket.remoteAddress, svc.a2a.trustedProxies(gen), { secure: false });
}

/** How a client authenticates to the gateway, as a card says it: keys as a bearer or in x-api-key; none on an open gateway. */
function securityOf(svc: Services, caller: Caller): GatewayCardSecurity {
  const keys = !policyOf(caller.keyring).keys.open;
  return { bearer: keys || svc.auth.active, apiKeyHeader: keys ? 'x-api-key' : null };
}

/** The card of the agent: the first candidate's that was read, in the route's order, rewritten for the client. */
async function serveCard(
  svc: Services,
  x: Exchange,
  caller: Caller,
  agent: string,
  route: AgentRoute,
  record: AgentCallRecord,
): Promise<void> {
  const candidates = route.groups.flatMap((g) => g.candidates);
  let found = firstCard(svc, candidates);
  if (found === null) {
    // At start, or just after a reload brought the agent: its card may be on its way.
    await Promise.race([
      Promise.all(candidates.map((c) => svc.a2a.cards.refreshIfUnread(c.server.name))),
      new Promise((resolve) => setTimeout(resolve, FIRST_CARD_WAIT_MS).unref()),
    ]);
    found = firstCard(svc, candidates);
  }
  if (found === null) {
    record.outcome = 'failed';
    record.reason = 'upstream_unavailable';
    const problems = candidates.map((c) => `${c.server.name}: ${svc.a2a.cards.stateOf(c.server.name).problem ?? 'no card'}`);
    throw new SwitchyardError('upstream_unavailable', `agent ${agent}: no upstream agent's card could be read (${problems.join('; ')})`);
  }
  record.candidate = found.candidate;
  record.outcome = 'answered';
  const card = clientCard(found.view, `${originOf(svc, caller.gen, x.req)}/a2a/${encodeURIComponent(agent)}`, securityOf(svc, caller));
  sendJson(x.res, JSON.stringify(card), 200, { 'cache-control': 'no-cache', vary: 'A2A-Version' });
}

function firstCard(svc: Services, candidates: readonly AgentCandidate[]) {
  for (const candidate of candidates) {
    const view = svc.a2a.cards.stateOf(candidate.server.name).view;
    if (view !== null) return { candidate, view };
  }
  return null;
}
