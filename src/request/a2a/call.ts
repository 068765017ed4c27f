import {
  type A2AMethod,
  type A2AVersion,
  type AgentCardView,
  CallStop,
  checkPushUrl,
  clientCard,
  type GatewayCardSecurity,
  type IdOwner,
  type JsonRpcErrorObject,
  jsonRpcEndpointFor,
  type LearnedIds,
  type OwnershipTtl,
  pushUrlsOf,
  readCard,
  requestIds,
  type StopSignal,
  taskIdsOfList,
  withTasks,
} from '../../a2a/index.js';
import type { ErrorCode } from '../../errors.js';
import * as governance from '../../governance/index.js';
import type { AgentCandidate, AgentRoute, RetryPolicy } from '../../live/index.js';
import type { StopSlot } from '../../providers/index.js';
import type { BreakerRegistry } from '../../resilience/index.js';
import { type ResidencyRule, select, withinResidency } from '../../routing/index.js';
import { type CallAttempt, type Skipped, withBreaker } from '../attempt.js';
import { type CallKind, runChain } from '../chain.js';
import type { AgentCallRecord, Caller, Exchange } from '../exchange.js';
import { policyOf } from '../policy.js';
import { residencyOf, residencyRefusal } from '../residency.js';
import type { Services } from '../services.js';
import {
  type AgentAnswer,
  type AgentAttemptRequest,
  AgentCannotTake,
  type AgentFailure,
  type AgentOutcome,
  type AgentStream,
  type Learn,
  type StreamReply,
  sendToAgent,
} from './attempt.js';
import { type ClientRequest, errorText, gatewayError, type JsonRpcId, sendJson, sseEvent, statusOf, taskNotFound } from './messages.js';

// One call on /a2a/<agent>: the caller's allow-list, the push-notification webhooks it would
// hand the agent, then where it goes. A call that names a task or a context goes to the
// candidate that owns it, on any replica, with no failover (no other agent knows the task)
// and past its breaker; another team's id, or one nobody owns, is the protocol's
// task-not-found and reaches no agent. A new task is routed by the agent's policy and moves
// on only when it provably never reached a candidate. Messages are admitted against the
// caller's agent counters (rpm, agent_messages_per_day); reads count nothing. ListTasks asks
// every candidate and keeps the caller's own tasks.

export interface AgentCallContext {
  readonly svc: Services;
  readonly x: Exchange;
  readonly caller: Caller;
  readonly agent: string;
  readonly route: AgentRoute;
  readonly record: AgentCallRecord;
  readonly request: ClientRequest;
  readonly method: A2AMethod;
  readonly version: A2AVersion;
  readonly raw: Buffer;
  /** The gateway's URL of this agent, as the client reaches it (for a card in an answer); worked out when asked. */
  agentUrl(): string;
  readonly security: GatewayCardSecurity;
}

/** The team a task belongs to: the caller's, or '' for the open gateway's anonymous caller. */
function teamOf(caller: Caller): string {
  return caller.principal.team ?? '';
}

/** Answers the call (or refuses it), then resolves; a failure the endpoint must answer rejects. */
export async function serveAgentCall(ctx: AgentCallContext): Promise<void> {
  const { svc, x, caller, agent, record, request, method, version } = ctx;
  const policy = policyOf(caller.keyring);
  const denied = governance.checkAgent(policy, caller.principal, agent);
  if (denied !== null) return refuse(ctx, denied.code, denied.message);
  const settings = caller.gen.config.a2a;
  for (const url of pushUrlsOf(method, version, request.params)) {
    const verdict = await checkPushUrl(url, settings.push_urls);
    if (!verdict.ok) {
      record.outcome = 'refused';
      record.reason = 'invalid_request';
      return sendJson(
        x.res,
        errorText(request.id, {
          code: -32602,
          message: `Invalid params: the push-notification URL is not allowed (${verdict.reason}); the gateway passes on only https webhooks on public addresses, or those a2a.push_urls lists`,
        }),
      );
    }
  }
  if (method.cls === 'list') return listTasks(ctx);
  if (method.cls === 'extended-card') return extendedCard(ctx);

  const named = requestIds(method, version, request.params);
  const message = method.cls === 'send' || method.cls === 'stream';
  if (named.taskId === undefined && named.contextId === undefined && !message)
    return sendJson(x.res, errorText(request.id, { code: -32602, message: `Invalid params: ${method.v1} names no task (params.id)` }));
  record.taskId = named.taskId ?? null;
  record.contextId = named.contextId ?? null;
  let owner: AgentCandidate | null = null;
  if (named.taskId !== undefined || named.contextId !== undefined) {
    let found: IdOwner | null;
    try {
      found =
        named.taskId !== undefined
          ? await svc.a2a.owners.lookup(agent, 'task', named.taskId)
          : await svc.a2a.owners.lookup(agent, 'context', named.contextId as string);
    } catch (err) {
      svc.logger.warn({ msg: 'a2a task ownership store failed', agent, error: (err as Error).message });
      return refuse(ctx, 'store_unavailable', 'the store of task owners cannot be read now; try again');
    }
    const what = named.taskId !== undefined ? `task ${named.taskId}` : `context ${named.contextId}`;
    // Another team's task is answered exactly as one that does not exist: its id tells nothing.
    if (found === null || found.team !== teamOf(caller)) return notFound(ctx, what);
    owner = ctx.route.groups.flatMap((g) => g.candidates).find((c) => c.providerName === found.candidate) ?? null;
    if (owner === null)
      return refuse(
        ctx,
        'upstream_unavailable',
        `${what} belongs to agent provider "${found.candidate}", which this gateway no longer routes to ${agent}`,
      );
  }
  let reservation: governance.Reservation | null = null;
  if (message) {
    const admitting = governance.admitAgentMessage(svc.governance, policy, caller.principal, agent, governance.governanceNow());
    const admitted = admitting instanceof Promise ? await admitting : admitting;
    if (!admitted.ok) {
      const r = admitted.refusal;
      return refuse(ctx, r.code, r.message, r.retryAfterS === null ? {} : { retry_after_s: r.retryAfterS });
    }
    reservation = admitted.reservation;
  }
  x.callStarted(method.streams);
  const chain =
    owner !== null
      ? [owner]
      : (select(ctx.route, { counters: svc.counters, random: svc.random, boundStableId: undefined }).chain as AgentCandidate[]);
  if (chain.length === 0) {
    await finishMessage(svc, reservation, false);
    return refuse(ctx, 'no_route', `agent ${agent}: no candidate takes new tasks now`);
  }
  // Only a candidate the caller may reach has its card read for the call (the chain skips the others).
  const rule = residencyOf(caller.keyring, caller.principal);
  const reachable = rule === null ? chain : chain.filter((c) => withinResidency(rule, c.zones));
  if (reachable.some((c) => svc.a2a.cards.stateOf(c.server.name).view === null)) await firstCards(svc, reachable);
  await new Promise<void>((resolve, reject) => {
    runChain(new AgentChain(ctx, chain, owner !== null, reservation, (err) => (err === null ? resolve() : reject(err))));
  });
}

/** How long a call waits for a candidate's first card (at start, or after a reload brought the agent). */
const FIRST_CARD_WAIT_MS = 5000;

/** A candidate whose card was never read well is read now (bounded), rather than skipped for want of one. */
async function firstCards(svc: Services, chain: readonly AgentCandidate[]): Promise<void> {
  const unread = chain.filter((c) => svc.a2a.cards.stateOf(c.server.name).view === null);
  if (unread.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(unread.map((c) => svc.a2a.cards.refreshIfUnread(c.server.name))),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, FIRST_CARD_WAIT_MS);
    }),
  ]);
  clearTimeout(timer);
}

function finishMessage(svc: Services, reservation: governance.Reservation | null, reached: boolean): Promise<void> {
  try {
    return Promise.resolve(governance.finishAgentMessage(svc.governance, reservation, reached, governance.governanceNow())).catch(
      () => undefined,
    );
  } catch {
    // The store's policy has counted it; the client's answer does not wait on the books.
    return Promise.resolve();
  }
}

function refuse(ctx: AgentCallContext, code: ErrorCode, message: string, data: Record<string, unknown> = {}): void {
  ctx.record.outcome = 'refused';
  ctx.record.reason = code;
  const headers: Record<string, string> = {};
  if (typeof data.retry_after_s === 'number') headers['retry-after'] = String(data.retry_after_s);
  sendJson(ctx.x.res, errorText(ctx.request.id, gatewayError(code, message, { agent: ctx.agent, ...data })), statusOf(code), headers);
}

function notFound(ctx: AgentCallContext, what: string): void {
  ctx.record.outcome = 'refused';
  ctx.record.reason = 'task_not_found';
  sendJson(ctx.x.res, errorText(ctx.request.id, taskNotFound(what)));
}

/** The ownership learned from answers: recorded for the caller's team and the candidate that answered. */
function learner(ctx: AgentCallContext): Learn {
  const { svc, agent, record, caller } = ctx;
  const settings = caller.gen.config.a2a.tasks;
  const ttl: OwnershipTtl = { activeS: settings.ttl_s, terminalS: settings.terminal_ttl_s };
  const team = teamOf(caller);
  let seen: Set<string> | null = null;
  return (ids: LearnedIds, c: AgentCandidate) => {
    if (ids.taskId !== undefined) record.taskId = ids.taskId;
    if (ids.contextId !== undefined) record.contextId = ids.contextId;
    if (ids.state !== undefined) record.state = ids.state;
    if (ids.taskId === undefined && ids.contextId === undefined) return null;
    const key = `${ids.taskId ?? ''}\n${ids.contextId ?? ''}\n${ids.terminal}`;
    if (seen?.has(key) === true) return null;
    (seen ??= new Set()).add(key);
    return svc.a2a.owners.record(agent, { team, candidate: c.providerName }, ids, ttl).then(
      (outcome) => {
        if (outcome.task === 'foreign' || outcome.context === 'foreign')
          svc.logger.warn({
            msg: 'an agent answered with a task or context id another team or candidate owns: it stays with its owner',
            agent,
            provider: c.providerName,
          });
      },
      (err: unknown) => svc.logger.warn({ msg: 'a2a task ownership could not be recorded', agent, error: (err as Error).message }),
    );
  };
}

/** What an attempt at each candidate shares. */
function attemptBase(
  ctx: AgentCallContext,
  signal: StopSignal,
  reply: StreamReply,
  learn: Learn,
): Omit<AgentAttemptRequest, 'candidate' | 'pass'> {
  const settings = ctx.caller.gen.config.a2a;
  const streams = ctx.method.streams;
  const extensions = ctx.x.req.headers['a2a-extensions'] ?? ctx.x.req.headers['x-a2a-extensions'];
  return {
    method: ctx.method,
    version: ctx.version,
    id: ctx.request.id,
    params: ctx.request.params,
    raw: ctx.raw,
    extensions: typeof extensions === 'string' ? extensions : null,
    maxEventBytes: settings.max_event_bytes,
    totalMs: (c) =>
      streams
        ? Math.min(settings.stream_max_ms, c.server.streamMaxMs ?? Number.POSITIVE_INFINITY)
        : Math.min(settings.call_timeout_ms, c.server.requestTimeoutMs ?? Number.POSITIVE_INFINITY),
    signal,
    reply,
    learn,
    endpointFor: (c) => endpointOf(ctx.svc, c, ctx.version),
  };
}

type Endpoint = { readonly url: string; readonly path: string; readonly version: A2AVersion } | string;

/** Each card's endpoints, as judged for each server (a card is read again as a new object, so the cache follows it). */
const endpoints = new WeakMap<object, Map<string, Endpoint>>();

/** The candidate's JSON-RPC endpoint for a client of `version`, from its card; or why it has none. */
function endpointOf(svc: Services, c: AgentCandidate, version: A2AVersion): Endpoint {
  const state = svc.a2a.cards.stateOf(c.server.name);
  const view = state.view;
  if (view === null) return `${c.server.name} has no card (${state.problem ?? 'not read yet'})`;
  let judged = endpoints.get(view);
  if (judged === undefined) endpoints.set(view, (judged = new Map()));
  const key = `${version} ${c.server.baseUrl}`;
  let endpoint = judged.get(key);
  if (endpoint === undefined) {
    endpoint = judgeEndpoint(view, c, version);
    judged.set(key, endpoint);
  }
  return endpoint;
}

function judgeEndpoint(view: AgentCardView, c: AgentCandidate, version: A2AVersion): Endpoint {
  const endpoint = jsonRpcEndpointFor(view, version);
  if (endpoint === null) return `${c.server.name}'s card names no JSON-RPC interface`;
  const url = new URL(endpoint.url);
  // Calls go only where the operator pointed the gateway: a card cannot send it elsewhere.
  if (url.origin !== new URL(c.server.baseUrl).origin) return `${c.server.name}'s card names ${url.origin}, not its base_url's origin`;
  return { url: endpoint.url, path: `${url.pathname}${url.search}`, version: endpoint.version };
}

/** The client's SSE stream for a streamed answer. */
function streamReply(x: Exchange): StreamReply {
  return {
    open: () => {
      x.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
      x.res.flushHeaders();
    },
    event: (json) => x.res.write(sseEvent(json)),
    onDrain: (cb) => {
      x.res.on('drain', cb);
    },
    onClose: (cb) => {
      x.res.on('close', cb);
    },
    get gone() {
      return x.res.destroyed || x.res.writableEnded;
    },
  };
}

const NO_LEARNING: Learn = () => null;

/**
 * The call as a kind of the one chain (chain.ts). A new task moves on only when the agent
 * never saw it; a follow-up has one candidate, tried past its breaker.
 */
class AgentChain implements CallKind<AgentCandidate, AgentOutcome> {
  readonly #ctx: AgentCallContext;
  readonly #followUp: boolean;
  readonly #reservation: governance.Reservation | null;
  readonly #done: (err: unknown) => void;
  readonly #attempt: CallAttempt<AgentAttemptRequest, AgentOutcome>;
  readonly #base: Omit<AgentAttemptRequest, 'candidate' | 'pass'>;
  readonly #stop = new CallStop();
  #reached = false;
  #ended = false;
  /** Why the last candidate that could not take the call could not (the answer when none could). */
  #unable: AgentCannotTake | null = null;
  readonly candidates: readonly AgentCandidate[];
  readonly residency: ResidencyRule | null;
  readonly triesOpenBreakers = false;
  readonly breakers: BreakerRegistry;
  readonly random: () => number;
  readonly deadlineAt = null;
  readonly slot: StopSlot = { stopAttempt: null, clientClosed: null };

  constructor(
    ctx: AgentCallContext,
    chain: readonly AgentCandidate[],
    followUp: boolean,
    reservation: governance.Reservation | null,
    done: (err: unknown) => void,
  ) {
    this.#ctx = ctx;
    this.#followUp = followUp;
    this.#reservation = reservation;
    this.#done = done;
    this.candidates = chain;
    this.residency = residencyOf(ctx.caller.keyring, ctx.caller.principal);
    this.breakers = ctx.svc.breakers;
    this.random = ctx.svc.random;
    this.#attempt = withBreaker(ctx.svc.breakers)(sendToAgent);
    this.#base = attemptBase(ctx, this.#stop, streamReply(ctx.x), learner(ctx));
    // The client leaving, or the drain's limit, ends the upstream call (the task itself is left alone).
    const abort = (): void => this.#stop.stop();
    ctx.x.running.clientClosed = abort;
    ctx.x.running.stopAttempt = abort;
  }

  attempt(c: AgentCandidate, pass: 0 | 1, done: (r: AgentOutcome | Skipped) => void): void {
    this.#ctx.record.candidate = c;
    // A follow-up is not refused by its candidate's breaker: no other agent knows the task.
    this.#attempt({ ...this.#base, candidate: c, pass: this.#followUp ? 1 : pass }, done);
  }

  stopping(): boolean {
    return this.#stop.aborted || this.#ctx.x.res.destroyed;
  }

  halt(): void {
    this.exhausted(1);
  }

  clientGone(): boolean {
    return this.#ctx.x.res.destroyed;
  }

  /** A candidate with no card, or that speaks a version the call has no counterpart in: skipped, its breaker untouched. */
  cannotTake(err: unknown, c: AgentCandidate): boolean {
    if (!(err instanceof AgentCannotTake)) return false;
    this.#given(c, err.reason);
    this.#unable = err;
    return true;
  }

  skipped(c: AgentCandidate): void {
    this.#given(c, 'breaker_open');
  }

  outside(c: AgentCandidate): void {
    this.#given(c, 'residency');
  }

  refuseOutside(rule: ResidencyRule): void {
    const ctx = this.#ctx;
    const err = residencyRefusal(`agent ${ctx.agent}`, rule);
    ctx.record.outcome = 'refused';
    ctx.record.reason = err.code;
    if (!ctx.x.res.destroyed) this.#answerError(err.code, err.message);
    this.end(null);
  }

  noteFailure(r: AgentFailure, c: AgentCandidate): void {
    this.#reached ||= r.reached;
    this.#given(c, r.reason);
  }

  movesOn(r: AgentFailure): boolean {
    return !this.#followUp && !r.reached;
  }

  endOnFailure(r: AgentFailure): void {
    const ctx = this.#ctx;
    ctx.record.outcome = 'failed';
    ctx.record.reason = r.code;
    const why = this.#followUp
      ? 'a task stays with the agent that owns it'
      : r.reached
        ? 'not sent to another agent, since this one may have started the task'
        : 'no other agent could take it';
    this.#answerError(r.code, `agent ${ctx.agent}: ${r.detail}; ${why}`);
    this.end(null);
  }

  retryPolicy(): RetryPolicy | null {
    return null;
  }

  retryable(): boolean {
    return false;
  }

  retrying(): void {}

  movedOn(): void {}

  answered(r: Exclude<AgentOutcome, AgentFailure>, c: AgentCandidate): void {
    const ctx = this.#ctx;
    this.#reached = true;
    if (r.kind === 'aborted') {
      ctx.record.outcome = 'aborted';
      ctx.record.reason = 'client_closed';
      return this.end(null);
    }
    ctx.record.candidate = c;
    if (r.answer === 'json') return this.#answerJson(r);
    this.#answerStream(r);
  }

  #answerJson(r: AgentAnswer): void {
    const ctx = this.#ctx;
    const send = (): void => {
      ctx.record.outcome = r.error === null ? 'answered' : 'error';
      ctx.record.reason = r.error === null ? null : String(r.error.code);
      if (!ctx.x.res.destroyed) sendJson(ctx.x.res, r.body, r.status);
      this.end(null);
    };
    // Recorded before the client is answered: its next call may reach another replica.
    if (r.learned === null) send();
    else r.learned.then(send, send);
  }

  #answerStream(r: AgentStream): void {
    const ctx = this.#ctx;
    r.onFinished((f) => {
      const res = ctx.x.res;
      if (f.outcome === 'aborted') {
        ctx.record.outcome = 'aborted';
        ctx.record.reason = 'client_closed';
      } else if (f.failure !== null) {
        ctx.record.outcome = 'failed';
        ctx.record.reason = f.failure.code;
        if (!res.destroyed && !res.writableEnded)
          res.write(sseEvent(errorText(ctx.request.id, gatewayError(f.failure.code, `agent ${ctx.agent}: ${f.failure.detail}`))));
      } else ctx.record.outcome = 'answered';
      if (!res.writableEnded) res.end();
      this.end(null);
    });
  }

  exhausted(attempted: number): void {
    const ctx = this.#ctx;
    // Only candidates that could not take it: a call 0.3 has no counterpart of is the client's to fix.
    const code = attempted === 0 && this.#unable !== null ? this.#unable.code : 'upstream_unavailable';
    ctx.record.outcome = code === 'upstream_unavailable' ? 'failed' : 'refused';
    ctx.record.reason = code;
    // An agent outside the caller's zones is not the caller's to hear of.
    const failures = ctx.record.fallback.filter((f) => !f.endsWith(':residency'));
    if (!ctx.x.res.destroyed)
      this.#answerError(code, `agent ${ctx.agent}: no upstream agent could take the call (${failures.join(', ')})`, { failures });
    this.end(null);
  }

  abandoned(): void {
    this.end(null);
  }

  end(err: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    const x = this.#ctx.x;
    x.running.clientClosed = null;
    x.running.stopAttempt = null;
    if (this.#reservation === null) this.#done(err);
    else void finishMessage(this.#ctx.svc, this.#reservation, this.#reached).then(() => this.#done(err));
  }

  #answerError(code: ErrorCode, message: string, data: Record<string, unknown> = {}): void {
    const ctx = this.#ctx;
    const res = ctx.x.res;
    if (res.destroyed || res.writableEnded) return;
    const body = errorText(ctx.request.id, gatewayError(code, message, { agent: ctx.agent, ...data }));
    if (res.headersSent) {
      res.write(sseEvent(body));
      res.end();
    } else sendJson(res, body, statusOf(code));
  }

  #given(c: AgentCandidate, reason: string): void {
    const record = this.#ctx.record;
    record.fallback.push(`${c.server.name}:${reason}`);
    record.failedCandidates.push(c.stableId);
    this.#ctx.svc.metrics.fallbacks.inc({ provider: c.server.name, reason });
  }
}

/** One call to one candidate outside the chain (ListTasks, GetExtendedAgentCard): its JSON answer, or why there is none. */
function askOne(
  ctx: AgentCallContext,
  c: AgentCandidate,
  signal: StopSignal,
  params: Record<string, unknown> = ctx.request.params,
): Promise<AgentAnswer | AgentFailure> {
  const base = attemptBase(ctx, signal, streamReply(ctx.x), NO_LEARNING);
  const own =
    params === ctx.request.params
      ? base
      : { ...base, params, raw: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: ctx.request.id, method: ctx.request.method, params })) };
  return new Promise((resolve) => {
    try {
      withBreaker(ctx.svc.breakers)(sendToAgent)({ ...own, candidate: c, pass: 1 }, (r) => {
        if (r.kind === 'committed' && r.answer === 'json') resolve(r);
        else if (r.kind === 'failed') resolve(r);
        else resolve({ kind: 'failed', reason: 'aborted', detail: 'the call ended', reached: true, code: 'upstream_error' });
      });
    } catch (err) {
      if (!(err instanceof AgentCannotTake)) throw err;
      resolve({ kind: 'failed', reason: err.reason, detail: err.message, reached: false, code: err.code });
    }
  });
}

function allCandidates(route: AgentRoute): AgentCandidate[] {
  return route.groups.flatMap((g) => g.candidates);
}

/**
 * The candidates a call outside the chain (ListTasks, GetExtendedAgentCard) may ask: every
 * one within the caller's zones, listed as `provider:residency` otherwise. Null when the
 * caller's zones leave none: refused (403) here, nothing sent.
 */
function reachableCandidates(ctx: AgentCallContext): AgentCandidate[] | null {
  const all = allCandidates(ctx.route);
  const rule = residencyOf(ctx.caller.keyring, ctx.caller.principal);
  if (rule === null) return all;
  const inside: AgentCandidate[] = [];
  for (const c of all) {
    if (withinResidency(rule, c.zones)) inside.push(c);
    else ctx.record.fallback.push(`${c.server.name}:residency`);
  }
  if (inside.length === 0 && all.length > 0) {
    const err = residencyRefusal(`agent ${ctx.agent}`, rule);
    refuse(ctx, err.code, err.message);
    return null;
  }
  return inside;
}

/** Pages of an agent's own list read for one ListTasks, at most, and the size asked for each. */
const LIST_PAGES_MAX = 20;
const LIST_PAGE_SIZE = 100;
/** A client's page when it names none (the protocol's default), and the most it may ask for. */
const LIST_DEFAULT_PAGE = 50;
const LIST_MAX_PAGE = 100;

/**
 * ListTasks: every candidate is asked (an agent knows only its own tasks, and every team's),
 * page after page up to a bound, with the client's filters; only the tasks the caller's team
 * owns on that candidate are kept. The client pages through that list with the gateway's
 * own page tokens: an agent's page full of other teams' tasks never hides the caller's.
 */
async function listTasks(ctx: AgentCallContext): Promise<void> {
  const { x, agent, record, request, caller } = ctx;
  const params = request.params;
  const offset = pageOffset(params.pageToken);
  if (offset === null)
    return sendJson(x.res, errorText(request.id, { code: -32602, message: 'Invalid params: pageToken is not one this gateway gave' }));
  const asked =
    typeof params.pageSize === 'number' && Number.isInteger(params.pageSize) && params.pageSize > 0 ? params.pageSize : LIST_DEFAULT_PAGE;
  const pageSize = Math.min(asked, LIST_MAX_PAGE);
  const stop = new CallStop();
  x.running.clientClosed = () => stop.stop();
  const candidates = reachableCandidates(ctx);
  if (candidates === null) return;
  const team = teamOf(caller);
  const listed = await Promise.all(candidates.map((c) => ownTasksOn(ctx, c, team, stop)));
  x.running.clientClosed = null;
  if (listed.some((l) => l === 'store_unavailable'))
    return refuse(ctx, 'store_unavailable', 'the store of task owners cannot be read now; try again');
  const tasks: unknown[] = [];
  const failures: string[] = [];
  for (const l of listed) {
    if (typeof l === 'string') continue;
    if (l.failure !== null) failures.push(l.failure);
    tasks.push(...l.tasks);
  }
  record.fallback.push(...failures);
  if (failures.length === candidates.length && candidates.length > 0) {
    record.outcome = 'failed';
    record.reason = 'upstream_unavailable';
    return sendJson(
      x.res,
      errorText(
        request.id,
        gatewayError('upstream_unavailable', `agent ${agent}: no upstream agent could list tasks (${failures.join(', ')})`),
      ),
      503,
    );
  }
  record.outcome = 'answered';
  const page = tasks.slice(offset, offset + pageSize);
  const next = offset + pageSize < tasks.length ? `gw:${offset + pageSize}` : '';
  const result = JSON.stringify({ tasks: page, nextPageToken: next, pageSize, totalSize: tasks.length });
  sendJson(x.res, `{"jsonrpc":"2.0","id":${JSON.stringify(request.id)},"result":${result}}`);
}

/** The offset a page token of ours names: 0 for none, null for one that is not ours. */
function pageOffset(token: unknown): number | null {
  if (token === undefined || token === '') return 0;
  if (typeof token !== 'string' || !/^gw:\d{1,9}$/.test(token)) return null;
  return Number(token.slice(3));
}

/** One candidate's tasks that `team` owns there, read page by page; a failure's words, or the store's failure. */
async function ownTasksOn(
  ctx: AgentCallContext,
  c: AgentCandidate,
  team: string,
  signal: StopSignal,
): Promise<{ tasks: unknown[]; failure: string | null } | 'store_unavailable'> {
  const tasks: unknown[] = [];
  let pageToken = '';
  for (let page = 0; page < LIST_PAGES_MAX; page++) {
    const params: Record<string, unknown> = { ...ctx.request.params, pageSize: LIST_PAGE_SIZE };
    if (pageToken === '') delete params.pageToken;
    else params.pageToken = pageToken;
    const answer = await askOne(ctx, c, signal, params);
    if (answer.kind === 'failed' || answer.error !== null) {
      // A later page failing leaves what was read; the record names the candidate that failed.
      return { tasks, failure: `${c.server.name}:${answer.kind === 'failed' ? answer.reason : answer.error?.code}` };
    }
    const result = (JSON.parse(answer.body.toString()) as { result: unknown }).result;
    const ids = taskIdsOfList(result);
    let owners: (IdOwner | null)[];
    try {
      owners = await ctx.svc.a2a.owners.lookupMany(ctx.agent, 'task', ids);
    } catch {
      return 'store_unavailable';
    }
    const mine = new Set(ids.filter((_, k) => owners[k]?.team === team && owners[k]?.candidate === c.providerName));
    const kept = withTasks(result, (id) => mine.has(id)) as { tasks?: unknown[] };
    if (Array.isArray(kept.tasks)) tasks.push(...kept.tasks);
    const next = (result as { nextPageToken?: unknown } | null)?.nextPageToken;
    if (typeof next !== 'string' || next === '' || ids.length === 0) break;
    pageToken = next;
  }
  return { tasks, failure: null };
}

/** GetExtendedAgentCard: the first candidate's that answers, rewritten as the public card is (unless signed). */
async function extendedCard(ctx: AgentCallContext): Promise<void> {
  const { x, agent, record, request } = ctx;
  const stop = new CallStop();
  x.running.clientClosed = () => stop.stop();
  const candidates = reachableCandidates(ctx);
  if (candidates === null) return;
  for (const c of candidates) {
    const answer = await askOne(ctx, c, stop);
    if (answer.kind === 'failed') {
      record.fallback.push(`${c.server.name}:${answer.reason}`);
      continue;
    }
    record.candidate = c;
    if (answer.error !== null) {
      record.outcome = 'error';
      record.reason = String(answer.error.code);
      return sendJson(x.res, answer.body, answer.status);
    }
    const result = (JSON.parse(answer.body.toString()) as { result: unknown }).result;
    const view = readCard(result, c.server.cardUrl);
    if ('error' in view) {
      record.outcome = 'failed';
      record.reason = 'upstream_error';
      return sendJson(x.res, errorText(request.id, gatewayError('upstream_error', `agent ${agent}: its extended card ${view.error}`)), 502);
    }
    record.outcome = 'answered';
    return sendJson(x.res, resultOf(request.id, clientCard(view, ctx.agentUrl(), ctx.security)));
  }
  record.outcome = 'failed';
  record.reason = 'upstream_unavailable';
  sendJson(
    x.res,
    errorText(request.id, gatewayError('upstream_unavailable', `agent ${agent}: no upstream agent gave its extended card`)),
    503,
  );
}

function resultOf(id: JsonRpcId, result: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, result });
}

export type { JsonRpcErrorObject };
