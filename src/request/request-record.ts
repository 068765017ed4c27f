import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ErrorCode } from '../errors.js';
import type { Principal } from '../governance/index.js';
import type { GuardrailVerdict } from '../guardrails/index.js';
import type { AgentCandidate, Generation, GenerationCandidate, Keyring, ToolCandidate } from '../live/index.js';
import type { ChatProtocol, Operation, TokenUsage } from '../providers/index.js';
import type { FailureReason } from '../resilience/index.js';
import type { Span } from '../telemetry/index.js';

export interface Failure {
  readonly provider: string;
  /** The stable_id of the candidate that failed. */
  readonly candidate: string;
  readonly reason: FailureReason;
  readonly detail: string;
}

/** One tools/call on /mcp, as its record needs it (filled as the call goes). */
export interface ToolCallRecord {
  /** The exposed tool name asked for. */
  readonly tool: string;
  /** The generation routes the name (so it may be a metrics label). */
  routed: boolean;
  /** The candidate that answered, or the last one tried. */
  candidate: ToolCandidate | null;
  outcome: 'result' | 'tool_error' | 'error' | 'refused' | 'failed';
  /** The error's stable code, or the upstream's JSON-RPC error code as text. */
  reason: string | null;
  /** `provider:reason` of each candidate given up on, and those candidates' stable_ids. */
  readonly fallback: string[];
  readonly failedCandidates: string[];
}

/** One call on /a2a/<agent> (a JSON-RPC method of the Agent2Agent protocol), as its record needs it (filled as the call goes). */
export interface AgentCallRecord {
  /** The exposed agent asked for. */
  readonly agent: string;
  /** The generation routes the name (so it may be a metrics label). */
  routed: boolean;
  /** The method in 1.0's words (SendMessage, GetTask, ...), whichever naming the client used; `none` before it is read. */
  method: string;
  /** The protocol version the client spoke. */
  version: '1.0' | '0.3' | null;
  /** The candidate that answered, or the last one tried. */
  candidate: AgentCandidate | null;
  /** The task and context the call named or its answer created. */
  taskId: string | null;
  contextId: string | null;
  /** The task's state after the call, as the answer (or the stream's last event) gave it. */
  state: string | null;
  /**
   * `answered`: the agent's result (whole, or a stream that ended); `error`: the agent's
   * JSON-RPC error; `refused`: the gateway refused it (auth, allow-list, limit, an unknown
   * or foreign task); `failed`: no agent could answer, or the answer broke off; `aborted`:
   * the client left before the answer ended (the task itself goes on at the agent).
   */
  outcome: 'answered' | 'error' | 'refused' | 'failed' | 'aborted';
  /** The error's stable code, or the agent's JSON-RPC error code as text. */
  reason: string | null;
  /** `provider:reason` of each candidate given up on, and those candidates' stable_ids. */
  readonly fallback: string[];
  readonly failedCandidates: string[];
}

/** What the listener matched: the endpoint's path (a metrics label), and what it asks for in which protocol. */
export interface MatchedEndpoint {
  readonly path: string;
  readonly operation?: Operation;
  readonly protocol?: ChatProtocol;
  /** False for probes and scrapes: no record (metrics, access line). */
  readonly recorded?: boolean;
}

/** What a lookup in the response cache came to, as the record keeps it (the sinks: metrics, ledger, access line, status). */
export interface CacheOutcome {
  /**
   * `hit`: answered from an entry; `miss`: looked up, not found (or not usable); `refresh`:
   * the client said `no-cache` (no lookup, the answer replaces the entry); `bypass`: neither
   * looked up nor stored (`no-store`, the cache off for the caller, a request it never
   * serves); `error`: the store failed or was too slow, answered as a miss.
   */
  readonly result: 'hit' | 'miss' | 'bypass' | 'refresh' | 'error';
  /** The route the lookup was for (a metrics label: a routed model). */
  readonly route: string;
  /** The key's digest; null for a bypass. */
  readonly key: string | null;
  /** A semantic hit's (or nearest miss's) cosine similarity; null for an exact lookup. */
  readonly similarity: number | null;
  /** A hit: what its entry cost when it was made (micro-USD), the money the hit saved; null when unpriced or not a hit. */
  readonly savedMicroUsd: number | null;
  /** A hit: the candidate that made its entry. */
  readonly origin: { readonly provider: string; readonly model: string; readonly candidate: string } | null;
}

/** What the parsed request asks for, as the record keeps it. */
interface Asked {
  readonly model: string;
  readonly stream: boolean;
  readonly raw: Buffer;
}

/** What the relay reports when the committed response has ended. */
interface Relayed {
  readonly outcome: 'complete' | 'partial' | 'aborted';
  readonly firstByteAt: number | null;
  readonly events: number;
  readonly reason?: ErrorCode;
}

// The phases, in the order a request goes through them. A phase method may run only when
// no later phase has: a write out of order is a programming error, thrown where it happens.
// The phases marked once may not run twice; the others repeat (an attempt per candidate).
const MATCHED = 1;
const CAPTURED = 2;
const AUTHENTICATED = 3;
const ASKED = 4;
const ADMITTED = 5;
const ROUTED = 6;
const ATTEMPTED = 7;
const COMMITTED = 8;
const RELAYED = 9;
const METERED = 10;
const SETTLED = 11;
const FAILED = 12;
const ENDED = 13;

const PHASE_NAMES = [
  'new',
  'matched',
  'captured',
  'authenticated',
  'asked',
  'admitted',
  'routed',
  'attempted',
  'committed',
  'relayed',
  'metered',
  'settled',
  'failed',
  'ended',
] as const;

const NO_VERDICTS: readonly GuardrailVerdict[] = Object.freeze([]);

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The one record of a request, which each step writes through the phase it owns:
 *
 * - the listener: `matched` (endpoint, operation, protocol, span);
 * - admission: `captured` (the generation and the keyring), `authenticated` (the principal), `asked`
 *   (model, stream, body size), `admitted` (after the pre-check);
 * - the failover chain: `attemptStarted`, `failedOver`, `committed`, `headersArrived`,
 *   `clientLeft`, `relayed`;
 * - settle: `metered` (the usage billed), `settled` (its cost);
 * - the error path: `failed`; the listener again: `ended`, which freezes it.
 *
 * Every field is read-only outside: the phases write them, each once, in that order (a
 * misordered write throws). After `ended` nothing changes, and the record goes to the
 * sinks (metrics, ledger, recent traffic, audit, span, access log). No step reads its own
 * inputs back from here: they travel as immutable values (Caller, ModelRequest, the
 * chain's request).
 */
export class RequestRecord {
  readonly req: IncomingMessage;
  readonly startedAt = performance.now();
  #phase = 0;
  /** Bit per phase already written, for the phases that may run once. */
  #once = 0;
  #requestId: string | null = null;
  #recorded = true;
  #protocol: ChatProtocol = 'openai';
  #operation: Operation = 'chat';
  #endpoint = 'none';
  #span: Span | null = null;
  #gen: Generation | null = null;
  #keyring: Keyring | null = null;
  #principal: Principal | null = null;
  #model: string | undefined = undefined;
  #stream = false;
  #bodyBytes = 0;
  #admitted = false;
  #candidate: GenerationCandidate | null = null;
  readonly #failures: Failure[] = [];
  #dropped: readonly string[] | null = null;
  #outcome: 'complete' | 'partial' | 'aborted' = 'complete';
  #attemptStartedAt = 0;
  #headersAt: number | null = null;
  #firstByteAt: number | null = null;
  #usage: TokenUsage | null = null;
  #events = 0;
  #usageEstimated = false;
  #costMicroUsd: number | null = null;
  #pricingMissing = false;
  #reason: ErrorCode | null = null;
  #toolCall: ToolCallRecord | null = null;
  #agentCall: AgentCallRecord | null = null;
  #status: number | 'partial' = 0;
  #statusCode = 0;
  #durationMs = 0;
  #endedAtMs = 0;
  #routedModel: string | null = null;
  #guardrails: GuardrailVerdict[] | null = null;
  #guardrailQuestion = false;
  #cacheCall = false;
  #cache: CacheOutcome | null = null;
  #cacheStored = false;

  constructor(req: IncomingMessage) {
    this.req = req;
  }

  /** Moves to `phase`, refusing a write after a later phase, or a second one of a phase that runs once. */
  #at(phase: number, once: boolean): void {
    if (this.#phase > phase || (once && (this.#once & (1 << phase)) !== 0)) {
      throw new Error(
        `request record: phase ${PHASE_NAMES[phase]} written ${this.#phase === phase ? 'twice' : `after ${PHASE_NAMES[this.#phase]}`}`,
      );
    }
    this.#phase = phase;
    if (once) this.#once |= 1 << phase;
  }

  /** For the writes that belong to no one phase: refused once the record has ended. */
  #open(): void {
    if (this.#phase === ENDED) throw new Error('request record: written after ended');
  }

  /** The listener matched an endpoint (or none: `path` is `none`); set before anything can fail, so every answer is in the client's shape. */
  matched(endpoint: MatchedEndpoint, span: Span | null): void {
    this.#at(MATCHED, true);
    if (endpoint.operation !== undefined) this.#operation = endpoint.operation;
    if (endpoint.protocol !== undefined) this.#protocol = endpoint.protocol;
    this.#endpoint = endpoint.path;
    this.#recorded = endpoint.recorded !== false;
    this.#span = span;
  }

  /** An endpoint that serves both protocols learned from the headers which one the client speaks. */
  speaks(protocol: ChatProtocol): void {
    this.#open();
    this.#protocol = protocol;
  }

  /** Not recorded after all (an MCP session's standing stream is not a request). */
  unrecorded(): void {
    this.#open();
    this.#recorded = false;
  }

  /** The generation and the keyring, read together in one synchronous step: the request's one pair. */
  captured(gen: Generation, keyring: Keyring): void {
    this.#at(CAPTURED, true);
    this.#gen = gen;
    this.#keyring = keyring;
  }

  authenticated(principal: Principal): void {
    this.#at(AUTHENTICATED, true);
    this.#principal = principal;
  }

  /** Notes what the parsed request asks for: the record reports it whatever happens next. */
  asked(request: Asked): void {
    this.#at(ASKED, true);
    this.#model = request.model;
    this.#stream = request.stream;
    this.#bodyBytes = request.raw.length;
  }

  /** A body read whole (an MCP message): its size. */
  bodyRead(bytes: number): void {
    this.#at(ASKED, true);
    this.#bodyBytes = bytes;
  }

  /** Passed authentication and the pre-check: its completion is audited. */
  admitted(): void {
    this.#at(ADMITTED, true);
    this.#admitted = true;
  }

  /** An MCP call starts, answered as one JSON body or as a stream of events. */
  callStarted(streamed: boolean): void {
    this.#at(ADMITTED, true);
    this.#stream = streamed;
  }

  /** A tools/call on /mcp: its own record (metrics, audit, access line) instead of a model request's. */
  toolCalled(call: ToolCallRecord): void {
    this.#at(ROUTED, true);
    this.#toolCall = call;
  }

  /** A call on /a2a: its own record (metrics, audit, ledger, access line) instead of a model request's. */
  agentCalled(call: AgentCallRecord): void {
    this.#open();
    this.#agentCall = call;
  }

  /** An attempt goes to the upstream now, with the request fields its translation dropped or clamped (null = none). */
  attemptStarted(dropped: readonly string[] | null): void {
    this.#at(ATTEMPTED, false);
    this.#dropped = dropped;
    this.#attemptStartedAt = performance.now();
  }

  /** A candidate given up before the first byte (or one that could not take the request). */
  failedOver(failure: Failure): void {
    this.#at(ATTEMPTED, false);
    this.#failures.push(failure);
  }

  /** The response committed to this candidate. */
  committed(candidate: GenerationCandidate): void {
    this.#at(COMMITTED, true);
    this.#candidate = candidate;
  }

  headersArrived(atMs: number): void {
    this.#at(COMMITTED, false);
    this.#headersAt = atMs;
  }

  /** The client left before the answer began. */
  clientLeft(): void {
    this.#at(COMMITTED, false);
    this.#outcome = 'aborted';
  }

  /** The relayed response ended: whole, cut, or left by its client; with an error code when the stream carried one. */
  relayed(relayed: Relayed, usage: TokenUsage | null): void {
    this.#at(RELAYED, true);
    this.#outcome = relayed.outcome;
    this.#firstByteAt = relayed.firstByteAt;
    this.#usage = usage;
    this.#events = relayed.events;
    if (relayed.reason !== undefined) this.#reason = relayed.reason;
  }

  /** An event written to the client by the gateway itself (an MCP call's progress or answer). */
  eventSent(): void {
    this.#at(RELAYED, false);
    this.#events += 1;
  }

  /** The usage billed: the reported one when sane (else null), or an estimate from what was seen. */
  metered(usage: TokenUsage | null, estimated: boolean): void {
    this.#at(METERED, true);
    this.#usage = usage;
    this.#usageEstimated = estimated;
  }

  settled(costMicroUsd: number | null, pricingMissing: boolean): void {
    this.#at(SETTLED, true);
    this.#costMicroUsd = costMicroUsd;
    this.#pricingMissing = pricingMissing;
  }

  /**
   * A guardrail's verdict on one phase (input, output, a tool call's arguments or result):
   * written whenever a check ends, at any point before the record ends (an output check
   * ends with the stream it read).
   */
  guardrailChecked(verdict: GuardrailVerdict): void {
    this.#open();
    (this.#guardrails ??= []).push(verdict);
  }

  /** The request is a judge guardrail's question about another request: billed under endpoint `guardrail`. */
  askedByGuardrail(): void {
    this.#open();
    this.#guardrailQuestion = true;
  }

  /** The request is the response cache's own embedding of another request's last turn: billed under endpoint `cache`. */
  askedByCache(): void {
    this.#open();
    this.#cacheCall = true;
  }

  /** What the response cache made of this request: written once, when the lookup (or the decision not to look) is over. */
  cacheLooked(outcome: CacheOutcome): void {
    this.#open();
    this.#cache = outcome;
  }

  /** The answer was stored in the response cache (after a miss or a refresh). */
  cacheStored(): void {
    this.#open();
    this.#cacheStored = true;
  }

  /**
   * A hit: the answer is the cache's, written by the gateway, with no upstream call. Its
   * record says which candidate made the entry (the attribution), and that nothing was billed.
   */
  servedFromCache(events: number): void {
    this.#at(RELAYED, true);
    this.#events = events;
    this.#firstByteAt = performance.now();
  }

  /** The error code of a refusal, or of an answer the gateway wrote itself. */
  failed(code: ErrorCode): void {
    this.#at(FAILED, true);
    this.#reason = code;
  }

  /** The response has closed and the handler is done: the record is final from here on. */
  protected end(status: number | 'partial', statusCode: number): void {
    this.#at(ENDED, true);
    this.#status = status;
    this.#statusCode = statusCode;
    this.#durationMs = performance.now() - this.startedAt;
    this.#endedAtMs = Date.now();
    const model = this.#model;
    if (model !== undefined && this.#gen !== null && this.#gen.routes[model] !== undefined) this.#routedModel = model;
  }

  /** The client's `x-request-id` when it is a sane token, or a new UUID. */
  get requestId(): string {
    if (this.#requestId === null) {
      const given = this.req.headers['x-request-id'];
      this.#requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    }
    return this.#requestId;
  }

  /** Whether this request gets a record (metrics, access line); probes and scrapes do not. */
  get recorded(): boolean {
    return this.#recorded;
  }
  /** The protocol the client speaks. */
  get protocol(): ChatProtocol {
    return this.#protocol;
  }
  get operation(): Operation {
    return this.#operation;
  }
  /** The path of the endpoint the listener matched (a fixed set, so a metrics label), or `none`. */
  get endpoint(): string {
    return this.#endpoint;
  }
  /** The request's server span, when tracing is on; ended by its sink. */
  get span(): Span | null {
    return this.#span;
  }
  get gen(): Generation | null {
    return this.#gen;
  }
  /** The keyring captured with `gen`: the request's keys, teams and limits. */
  get keyring(): Keyring | null {
    return this.#keyring;
  }
  get principal(): Principal | null {
    return this.#principal;
  }
  get model(): string | undefined {
    return this.#model;
  }
  get stream(): boolean {
    return this.#stream;
  }
  /** The request body's size, once read: a cut stream's input estimate. */
  get bodyBytes(): number {
    return this.#bodyBytes;
  }
  get isAdmitted(): boolean {
    return this.#admitted;
  }
  /** The candidate the response committed to. */
  get candidate(): GenerationCandidate | null {
    return this.#candidate;
  }
  get failures(): readonly Failure[] {
    return this.#failures;
  }
  /** Request fields the last attempt's translation dropped or clamped (`x-switchyard-dropped`); null = none. */
  get dropped(): readonly string[] | null {
    return this.#dropped;
  }
  /** Set when the relayed response was cut after its first byte, or the client left. */
  get outcome(): 'complete' | 'partial' | 'aborted' {
    return this.#outcome;
  }
  get attemptStartedAt(): number {
    return this.#attemptStartedAt;
  }
  get headersAt(): number | null {
    return this.#headersAt;
  }
  get firstByteAt(): number | null {
    return this.#firstByteAt;
  }
  get usage(): TokenUsage | null {
    return this.#usage;
  }
  /** Server-sent events relayed to the client. */
  get events(): number {
    return this.#events;
  }
  /**
   * The usage was estimated, not reported: a stream cut (or left by its client) before its
   * usage arrived is billed on what was seen (see admission.ts settle).
   */
  get usageEstimated(): boolean {
    return this.#usageEstimated;
  }
  get costMicroUsd(): number | null {
    return this.#costMicroUsd;
  }
  get pricingMissing(): boolean {
    return this.#pricingMissing;
  }
  get reason(): ErrorCode | null {
    return this.#reason;
  }
  /** Whether this request is a judge guardrail's question (its ledger row's endpoint is `guardrail`). */
  get guardrailQuestion(): boolean {
    return this.#guardrailQuestion;
  }
  /** Every guardrail verdict, in the order the checks ended; empty when no guardrail ran. */
  get guardrails(): readonly GuardrailVerdict[] {
    return this.#guardrails ?? NO_VERDICTS;
  }
  /** Whether this request is the response cache's embedding call (its ledger row's endpoint is `cache`). */
  get cacheCall(): boolean {
    return this.#cacheCall;
  }
  /** What the response cache made of the request; null when its route has no cache. */
  get cache(): CacheOutcome | null {
    return this.#cache;
  }
  /** Whether the answer was stored in the response cache. */
  get cacheStoredAnswer(): boolean {
    return this.#cacheStored;
  }
  get toolCall(): ToolCallRecord | null {
    return this.#toolCall;
  }
  get agentCall(): AgentCallRecord | null {
    return this.#agentCall;
  }
  /** Once ended: the status the record reports (what was sent, 'partial' for a cut stream, 499 when the client left first). */
  get status(): number | 'partial' {
    return this.#status;
  }
  /** Once ended: the HTTP status the response carried (a cut stream's is its headers'). */
  get statusCode(): number {
    return this.#statusCode;
  }
  /** Once ended: from arrival to the end. */
  get durationMs(): number {
    return this.#durationMs;
  }
  /**
   * Once ended: the model asked for when its generation routes it, else null. Only such a
   * model may be a metrics label, so a client cannot mint series by inventing model names.
   */
  get routedModel(): string | null {
    return this.#routedModel;
  }
  /** Once ended: when, in epoch ms (one clock read for every sink). */
  get endedAtMs(): number {
    return this.#endedAtMs;
  }
  get ended(): boolean {
    return this.#phase === ENDED;
  }
}
